import { getEventListeners } from 'node:events';
import { describe, expect, it, vi } from 'vitest';
import { until } from '../../test/support/until.js';
import { isStoreUnavailableError, StoreUnavailableError } from '../core/errors.js';
import type { KeyedWakers } from '../core/keyed-wakers.js';
import { FakeClock } from '../testing/fake-clock.js';
import {
  isLockLostError,
  isLockNotAcquiredError,
  isStaleFenceError,
  LockLostError,
  type LockNotAcquiredError,
} from './errors.js';
import { distributedLock } from './lock.js';
import { memoryFenceStore, memoryLockStore } from './memory-store.js';
import type { LockStore } from './store.js';

/** A lock store forwarding to `store` (no `watch`), with `changes` in place of any method. */
function forwarding(store: LockStore, changes: Partial<LockStore> = {}): LockStore {
  return {
    timeoutMs: store.timeoutMs,
    acquire: (...a) => store.acquire(...a),
    renew: (...a) => store.renew(...a),
    release: (...a) => store.release(...a),
    ...changes,
  };
}

/** A lock on a memory store whose renewals the test answers by hand. */
function manualRenewals(clock: FakeClock) {
  const memory = memoryLockStore({ clock });
  const pending: { resolve: (renewed: boolean) => void; reject: (error: unknown) => void }[] = [];
  const store = forwarding(memory, {
    renew: () => new Promise((resolve, reject) => pending.push({ resolve, reject })),
  });
  return { memory, store, pending };
}

/** A promise the test settles, and whether `fn` started. */
function gate<T = void>() {
  let open!: (value: T) => void;
  const promise = new Promise<T>((resolve) => (open = resolve));
  return { promise, open };
}

describe('distributedLock: withLock', () => {
  it('runs fn with a fence, releases on exit; the next holder gets a higher fence', async () => {
    const clock = new FakeClock(1_000);
    const store = memoryLockStore({ clock });
    const locks = distributedLock({ store, clock });
    const fences: number[] = [];
    expect(await locks.withLock('k', ({ fence }) => fences.push(fence))).toBe(1);
    expect(
      await locks.withLock('k', ({ fence }) => {
        fences.push(fence);
        return 'second';
      }),
    ).toBe('second');
    expect(fences[1]).toBeGreaterThan(fences[0]!);
    expect(await store.acquire('k', 'other', 1_000)).toBeDefined(); // released
    expect(clock.pendingTimers).toBe(0);
  });

  it('two callers of one key never overlap: the second waits, woken by the release', async () => {
    const clock = new FakeClock(0);
    const locks = distributedLock({ clock });
    const first = gate();
    const events: string[] = [];
    const a = locks.withLock('k', async () => {
      events.push('a starts');
      await first.promise;
      events.push('a ends');
    });
    await until(() => events.length === 1, 'a holds the lock');
    const b = locks.withLock('k', () => events.push('b runs'));
    await clock.advance(10);
    expect(events).toEqual(['a starts']);
    first.open();
    await a;
    await until(() => events.length === 3, 'b runs after the release');
    await b;
    expect(events).toEqual(['a starts', 'a ends', 'b runs']);
    expect(clock.now()).toBe(10); // woken, not polled
  });

  it('a lock held past waitMs is LockNotAcquiredError and fn never runs; waitMs 0 tries once', async () => {
    const clock = new FakeClock(0);
    const store = memoryLockStore({ clock });
    await store.acquire('k', 'holder', 60_000);
    const locks = distributedLock({ store: forwarding(store), clock, random: () => 0.5 });
    const fn = vi.fn();
    const waited = locks.withLock('k', fn, { waitMs: 1_000 }).catch((e: unknown) => e);
    await clock.advance(1_000);
    const error = await waited;
    expect(isLockNotAcquiredError(error)).toBe(true);
    expect(error).toMatchObject({ key: 'k', code: 'ERR_LOCK_NOT_ACQUIRED', kind: 'conflict' });
    expect((error as { retryAfterMs: number }).retryAfterMs).toBeGreaterThan(0);
    const once = await locks.withLock('k', fn, { waitMs: 0 }).catch((e: unknown) => e);
    expect(isLockNotAcquiredError(once)).toBe(true);
    expect(fn).not.toHaveBeenCalled();
    expect(clock.pendingTimers).toBe(0);
  });

  it('polls with jittered, growing delays when the store cannot watch', async () => {
    const clock = new FakeClock(0);
    const memory = memoryLockStore({ clock });
    await memory.acquire('k', 'holder', 60_000);
    const attempts: number[] = [];
    const store = forwarding(memory, {
      acquire: (...a) => {
        attempts.push(clock.now());
        return memory.acquire(...a);
      },
    });
    const locks = distributedLock({ store, clock, random: () => 0 });
    const waited = locks.withLock('k', () => {}, { waitMs: 200 }).catch((e: unknown) => e);
    await clock.advance(200);
    expect(isLockNotAcquiredError(await waited)).toBe(true);
    // Half of 25, 50, 100 … (random 0 is the low end of the jitter), capped by the time left.
    expect(attempts).toEqual([0, 12.5, 37.5, 87.5, 187.5, 200]);
  });

  it('an abort while waiting rejects with its reason and leaves no listener or timer', async () => {
    const clock = new FakeClock(0);
    const store = memoryLockStore({ clock });
    await store.acquire('k', 'holder', 60_000);
    const locks = distributedLock({ store, clock });
    const controller = new AbortController();
    const waited = locks.withLock('k', () => {}, { signal: controller.signal }).catch((e: unknown) => e);
    await clock.advance(100);
    controller.abort(new Error('caller left'));
    expect(await waited).toMatchObject({ message: 'caller left' });
    expect(getEventListeners(controller.signal, 'abort')).toHaveLength(0);
    expect(clock.pendingTimers).toBe(0);
    const aborted = AbortSignal.abort(new Error('already'));
    const acquire = vi.spyOn(store, 'acquire');
    await expect(locks.withLock('free', () => {}, { signal: aborted })).rejects.toThrow('already');
    expect(acquire).not.toHaveBeenCalled();
  });

  it('an abort that lands while the acquisition is in flight releases the lease it got', async () => {
    const clock = new FakeClock(0);
    const memory = memoryLockStore({ clock });
    const controller = new AbortController();
    const store = forwarding(memory, {
      acquire: async (...a) => {
        const lease = await memory.acquire(...a);
        controller.abort(new Error('left mid-acquire'));
        return lease;
      },
    });
    const fn = vi.fn();
    await expect(
      distributedLock({ store, clock }).withLock('k', fn, { signal: controller.signal }),
    ).rejects.toThrow('left mid-acquire');
    expect(fn).not.toHaveBeenCalled();
    expect(await memory.acquire('k', 'next', 1_000)).toBeDefined();
  });

  it("the caller's abort while fn runs aborts fn's signal with the caller's reason", async () => {
    const clock = new FakeClock(0);
    const controller = new AbortController();
    const call = distributedLock({ clock }).withLock(
      'k',
      ({ signal }) =>
        new Promise((_, reject) => signal.addEventListener('abort', () => reject(signal.reason))),
      { signal: controller.signal },
    );
    await Promise.resolve();
    await Promise.resolve();
    controller.abort(new Error('stop'));
    await expect(call).rejects.toThrow('stop');
    expect(getEventListeners(controller.signal, 'abort')).toHaveLength(0);
  });

  it('a store failure while acquiring rejects with it; fn does not run', async () => {
    const clock = new FakeClock(0);
    const down = new StoreUnavailableError('Redis down');
    const store = forwarding(memoryLockStore({ clock }), { acquire: () => Promise.reject(down) });
    const fn = vi.fn();
    const error = await distributedLock({ store, clock })
      .withLock('k', fn)
      .catch((e: unknown) => e);
    expect(isStoreUnavailableError(error)).toBe(true);
    expect(fn).not.toHaveBeenCalled();
  });
});

describe('distributedLock: keeping the lease', () => {
  it('renews every ttl/3 while fn runs past its ttl', async () => {
    const clock = new FakeClock(0);
    const memory = memoryLockStore({ clock });
    const renewals: number[] = [];
    const store = forwarding(memory, {
      renew: (...a) => {
        renewals.push(clock.now());
        return memory.renew(...a);
      },
    });
    const onLockLost = vi.fn();
    const call = distributedLock({ store, clock, onLockLost }).withLock(
      'k',
      () => clock.sleep(10_000).then(() => 'done'),
      {
        ttlMs: 3_000,
      },
    );
    await clock.advance(10_000);
    expect(await call).toBe('done');
    expect(renewals).toEqual([1_000, 2_000, 3_000, 4_000, 5_000, 6_000, 7_000, 8_000, 9_000]);
    expect(onLockLost).not.toHaveBeenCalled();
  });

  it('a refused renewal aborts fn at once with LockLostError; the call rejects even if fn resolves', async () => {
    const clock = new FakeClock(0);
    const { store, pending } = manualRenewals(clock);
    const onLockLost = vi.fn();
    let seen: unknown;
    const call = distributedLock({ store, clock, onLockLost })
      .withLock(
        'k',
        async ({ signal }) => {
          await clock.sleep(5_000);
          seen = signal.reason;
          return 'finished anyway';
        },
        { ttlMs: 3_000 },
      )
      .catch((e: unknown) => e);
    await clock.advance(1_000);
    pending[0]!.resolve(false);
    await until(() => onLockLost.mock.calls.length === 1, 'the loss is reported');
    expect(onLockLost.mock.calls[0]![0]).toMatchObject({ policy: 'lock', key: 'k', reason: 'renew-refused' });
    await clock.advance(5_000);
    const error = await call;
    expect(isLockLostError(error)).toBe(true);
    expect(seen).toBe(error);
  });

  it('a renewal not confirmed in time loses the lease at ttl less the drift margin (1 % + 2 ms)', async () => {
    const clock = new FakeClock(0);
    const { store } = manualRenewals(clock);
    const onLockLost = vi.fn();
    let abortedAt: number | undefined;
    const call = distributedLock({ store, clock, onLockLost })
      .withLock(
        'k',
        ({ signal }) =>
          new Promise((_, reject) =>
            signal.addEventListener('abort', () => {
              abortedAt = clock.now();
              reject(signal.reason);
            }),
          ),
        { ttlMs: 10_000 },
      )
      .catch((e: unknown) => e);
    await clock.advance(9_897);
    expect(abortedAt).toBeUndefined();
    await clock.advance(1);
    expect(abortedAt).toBe(9_898);
    expect(onLockLost.mock.calls[0]![0].reason).toBe('renew-late');
    expect(isLockLostError(await call)).toBe(true);
  });

  it('a failing renewal is renew-failed with the store error as cause', async () => {
    const clock = new FakeClock(0);
    const { store, pending } = manualRenewals(clock);
    const onLockLost = vi.fn();
    const down = new StoreUnavailableError('down');
    const call = distributedLock({ store, clock, onLockLost })
      .withLock(
        'k',
        ({ signal }) =>
          new Promise((_, reject) => signal.addEventListener('abort', () => reject(new Error('fn stopped')))),
        {
          ttlMs: 3_000,
        },
      )
      .catch((e: unknown) => e);
    await clock.advance(1_000);
    pending[0]!.reject(down);
    const error = await call;
    expect(isLockLostError(error)).toBe(true);
    expect((error as Error).cause).toBe(down);
    expect(onLockLost.mock.calls[0]![0]).toMatchObject({ reason: 'renew-failed', error: down });
  });

  it("a failed release never masks fn's error or value; it is reported", async () => {
    const clock = new FakeClock(0);
    const broken = new StoreUnavailableError('release timed out');
    const store = forwarding(memoryLockStore({ clock }), { release: () => Promise.reject(broken) });
    const onReleaseFailed = vi.fn();
    const locks = distributedLock({ store, clock, onReleaseFailed });
    const own = new Error('fn failed');
    await expect(locks.withLock('a', () => Promise.reject(own))).rejects.toBe(own);
    expect(await locks.withLock('b', () => 'value')).toBe('value');
    expect(onReleaseFailed.mock.calls.map(([e]) => [e.key, e.error])).toEqual([
      ['a', broken],
      ['b', broken],
    ]);
  });

  it("the paused owner: A's renewals stall, its signal aborts before the lease ends, B writes, A's late write is refused", async () => {
    const clock = new FakeClock(0);
    const { memory, store } = manualRenewals(clock);
    const fences = memoryFenceStore();
    let balance = 100;
    const a = distributedLock({ store, clock });
    const b = distributedLock({ store: memory, clock });
    const resumeA = gate();
    let aAbortedAt: number | undefined;
    let lateWrite: unknown;
    const callA = a
      .withLock(
        'account',
        async ({ signal, fence }) => {
          signal.addEventListener('abort', () => (aAbortedAt = clock.now()));
          await resumeA.promise; // A pauses (GC, swap) holding fence n
          lateWrite = await fences.write('account', fence, () => (balance -= 30)).catch((e: unknown) => e);
          throw lateWrite;
        },
        { ttlMs: 3_000 },
      )
      .catch((e: unknown) => e);
    await until(() => clock.pendingTimers > 0, 'A holds the lock');
    await clock.advance(3_000); // renewals unanswered: A is aborted at 2 968, the lease ends at 3 000
    expect(aAbortedAt).toBe(2_968);
    const written = await b.withLock('account', ({ fence }) =>
      fences.write('account', fence, () => (balance -= 50)),
    );
    expect(written).toBe(50);
    resumeA.open(); // A resumes and writes with its old fence
    const error = await callA;
    expect(isStaleFenceError(lateWrite)).toBe(true);
    expect(lateWrite).toMatchObject({ resource: 'account' });
    expect(isLockLostError(error)).toBe(true); // the call reports the lost lock
    expect(balance).toBe(50);
  });
});

describe('distributedLock: withLocks', () => {
  it('counts each key’s lease from when its own acquisition went out, not from the call’s start', async () => {
    const clock = new FakeClock(0);
    const store = memoryLockStore({ clock });
    const locks = distributedLock({ store, clock });
    await store.acquire('a', 'someone', 2_000); // 'a' is held for 2 s: 'b' is asked for only then
    const lost: string[] = [];
    locks.onLockLost(({ key }) => lost.push(key));
    const section = gate();
    let ran = false;
    const call = locks.withLocks(
      ['a', 'b'],
      async () => {
        ran = true;
        await section.promise;
      },
      { ttlMs: 1_000, waitMs: 10_000 },
    );
    for (let waited = 0; !ran && waited < 5_000; waited += 100) await clock.advance(100);
    expect(ran).toBe(true);
    await clock.advance(300);
    expect(lost).toEqual([]); // counted from the call's start, b's lease would have ended before it began
    section.open();
    await call;
  });

  it('owner ids differ for every call, and between instances', async () => {
    const clock = new FakeClock(0);
    const owners: string[] = [];
    const memory = memoryLockStore({ clock });
    const store = forwarding(memory, {
      acquire: (key, owner, ttl) => {
        owners.push(owner);
        return memory.acquire(key, owner, ttl);
      },
    });
    const first = distributedLock({ store, clock });
    const second = distributedLock({ store, clock });
    for (const locks of [first, first, second, second]) await locks.withLock('k', () => {});
    await first.withLocks(['x', 'y'], () => {});
    expect(new Set(owners.slice(0, 4)).size).toBe(4);
    expect(owners[4]).toBe(owners[5]); // one owner for every key of one call
    expect(owners[4]).not.toBe(owners[0]);
  });

  it('de-duplicates and sorts keys, gives every fence, releases all', async () => {
    const clock = new FakeClock(0);
    const memory = memoryLockStore({ clock });
    const order: string[] = [];
    const store = forwarding(memory, {
      acquire: (key, ...rest) => {
        order.push(`+${key}`);
        return memory.acquire(key, ...rest);
      },
      release: (key, owner) => {
        order.push(`-${key}`);
        return memory.release(key, owner);
      },
    });
    const result = await distributedLock({ store, clock }).withLocks(['c', 'a', 'b', 'a'], ({ fences }) => [
      ...fences.keys(),
    ]);
    expect(result).toEqual(['a', 'b', 'c']);
    expect(order).toEqual(['+a', '+b', '+c', '-c', '-b', '-a']);
  });

  it('opposite orders from two callers never deadlock', async () => {
    const clock = new FakeClock(0);
    const locks = distributedLock({ clock });
    const inside: string[] = [];
    const section = (name: string) => async () => {
      inside.push(`${name} in`);
      await clock.sleep(100);
      inside.push(`${name} out`);
    };
    const one = locks.withLocks(['a', 'b'], section('one'));
    const two = locks.withLocks(['b', 'a'], section('two'));
    for (let i = 0; i < 10; i++) await clock.advance(100);
    await Promise.all([one, two]);
    expect(inside).toEqual(['one in', 'one out', 'two in', 'two out']);
  });

  it('all or nothing: a key held past waitMs releases the ones taken', async () => {
    const clock = new FakeClock(0);
    const store = memoryLockStore({ clock });
    await store.acquire('b', 'holder', 60_000);
    const fn = vi.fn();
    const call = distributedLock({ store, clock })
      .withLocks(['a', 'b', 'c'], fn, { waitMs: 500 })
      .catch((e: unknown) => e);
    await clock.advance(500);
    const error = await call;
    expect(isLockNotAcquiredError(error)).toBe(true);
    expect(error).toMatchObject({ key: 'b' });
    expect(fn).not.toHaveBeenCalled();
    expect(await store.acquire('a', 'x', 1_000)).toBeDefined();
    expect(await store.acquire('c', 'x', 1_000)).toBeDefined();
  });

  it('a key lost while a later one was awaited fails the call and releases the rest', async () => {
    const clock = new FakeClock(0);
    const memory = memoryLockStore({ clock });
    const renewals: string[] = [];
    const store = forwarding(memory, {
      renew: (key) => {
        renewals.push(key);
        return Promise.resolve(false);
      },
    });
    await memory.acquire('b', 'holder', 2_000);
    const fn = vi.fn();
    const call = distributedLock({ store, clock })
      .withLocks(['a', 'b'], fn, { ttlMs: 900, waitMs: 5_000 })
      .catch((e: unknown) => e);
    await clock.advance(3_000);
    const error = await call;
    expect(isLockLostError(error)).toBe(true);
    expect(error).toMatchObject({ key: 'a' });
    expect(fn).not.toHaveBeenCalled();
    expect(renewals[0]).toBe('a');
  });

  it("any lease lost aborts fn's one signal", async () => {
    const clock = new FakeClock(0);
    const memory = memoryLockStore({ clock });
    const store = forwarding(memory, {
      renew: (key, ...rest) => (key === 'b' ? Promise.resolve(false) : memory.renew(key, ...rest)),
    });
    const call = distributedLock({ store, clock })
      .withLocks(
        ['a', 'b'],
        ({ signal }) =>
          new Promise((_, reject) => signal.addEventListener('abort', () => reject(signal.reason))),
        {
          ttlMs: 3_000,
        },
      )
      .catch((e: unknown) => e);
    await clock.advance(1_000);
    const error = await call;
    expect(isLockLostError(error)).toBe(true);
    expect(error).toMatchObject({ key: 'b' });
  });
});

describe('distributedLock: bad input before anything runs', () => {
  it.each([
    ['an empty key', (l: ReturnType<typeof distributedLock>) => l.withLock('', () => {}), /"key"/],
    ['a lone surrogate', (l: ReturnType<typeof distributedLock>) => l.withLock('\uD800', () => {}), /"key"/],
    ['a missing fn', (l: ReturnType<typeof distributedLock>) => l.withLock('k', undefined as never), /"fn"/],
    [
      'a ttl under 300 ms',
      (l: ReturnType<typeof distributedLock>) => l.withLock('k', () => {}, { ttlMs: 299 }),
      /"ttlMs" to be at least 300/,
    ],
    [
      'a negative waitMs',
      (l: ReturnType<typeof distributedLock>) => l.withLock('k', () => {}, { waitMs: -1 }),
      /"waitMs"/,
    ],
    [
      'an unknown option',
      (l: ReturnType<typeof distributedLock>) => l.withLock('k', () => {}, { tttlMs: 1 } as never),
      /^unknown option "tttlMs" in withLock options; did you mean "ttlMs"\?$/,
    ],
    ['no keys', (l: ReturnType<typeof distributedLock>) => l.withLocks([], () => {}), /"keys"/],
    [
      'an empty key among keys',
      (l: ReturnType<typeof distributedLock>) => l.withLocks(['a', ''], () => {}),
      /"keys\[\]"/,
    ],
  ])('%s is a TypeError', async (_, call, message) => {
    const store = memoryLockStore({ clock: new FakeClock(0) });
    const acquire = vi.spyOn(store, 'acquire');
    const error = await call(distributedLock({ store })).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(TypeError);
    expect((error as Error).message).toMatch(message);
    expect(acquire).not.toHaveBeenCalled();
  });

  it("a ttl under 3 × the store's deadline is refused", async () => {
    const clock = new FakeClock(0);
    const store = { ...forwarding(memoryLockStore({ clock })), timeoutMs: 200 };
    await expect(distributedLock({ store, clock }).withLock('k', () => {}, { ttlMs: 599 })).rejects.toThrow(
      /at least 600/,
    );
    expect(await distributedLock({ store, clock }).withLock('k', () => 'ok', { ttlMs: 600 })).toBe('ok');
  });

  it('refuses a bad store and unknown options', () => {
    expect(() => distributedLock({ store: {} as never })).toThrow(/"store" to be a lock store/);
    expect(() => distributedLock({ stor: 1 } as never)).toThrow(/stor/);
  });

  it('events: onLockAcquired reports the fence and the wait; disposers unsubscribe', async () => {
    const clock = new FakeClock(0);
    const locks = distributedLock({ clock, name: 'accounts' });
    const acquired = vi.fn();
    const dispose = locks.onLockAcquired(acquired);
    await locks.withLock('k', () => {});
    expect(acquired.mock.calls[0]![0]).toMatchObject({ policy: 'accounts', key: 'k', waitedMs: 0 });
    expect(acquired.mock.calls[0]![0].fence).toBeGreaterThan(0);
    dispose();
    await locks.withLock('k', () => {});
    expect(acquired).toHaveBeenCalledTimes(1);
    expect(typeof locks.onLockLost(() => {})).toBe('function');
    expect(typeof locks.onReleaseFailed(() => {})).toBe('function');
  });
});

describe('distributedLock: what it reports', () => {
  it('the default store runs on the given clock (its fences are that clock in µs)', async () => {
    const locks = distributedLock({ clock: new FakeClock(5_000) });
    expect(await locks.withLock('k', ({ fence }) => fence)).toBe(5_000_000);
  });

  it('waitedMs and the error count from the start of the call, whatever the clock reads', async () => {
    const clock = new FakeClock(50_000);
    const memory = memoryLockStore({ clock });
    await memory.acquire('k', 'holder', 60_000);
    const locks = distributedLock({ store: memory, clock, random: () => 0.5 });
    const acquired = vi.fn();
    locks.onLockAcquired(acquired);
    const call = locks.withLock('k', () => 'mine', { waitMs: 5_000 });
    await clock.advance(300);
    await memory.release('k', 'holder'); // wakes the waiter at once
    expect(await call).toBe('mine');
    expect(acquired.mock.calls[0]![0].waitedMs).toBe(300);
    await memory.acquire('busy', 'holder', 60_000);
    const failed = locks.withLock('busy', () => {}, { waitMs: 2_000 }).catch((e: unknown) => e);
    await clock.advance(2_000);
    const error = (await failed) as LockNotAcquiredError;
    expect(error.message).toBe('the lock was not acquired within 2000 ms: another owner holds it');
    expect(error.retryAfterMs).toBeGreaterThan(25); // the grown poll delay
    const once = (await locks
      .withLock('busy', () => {}, { waitMs: 0 })
      .catch((e: unknown) => e)) as LockNotAcquiredError;
    expect(once.retryAfterMs).toBe(25);
    expect(once.message).toBe('the lock was not acquired within 0 ms: another owner holds it');
  });

  it('a wait that gives up stops watching the key', async () => {
    const clock = new FakeClock(0);
    const memory = memoryLockStore({ clock });
    await memory.acquire('k', 'holder', 60_000);
    const failed = distributedLock({ store: memory, clock })
      .withLock('k', () => {}, { waitMs: 100 })
      .catch((e: unknown) => e);
    await clock.advance(100);
    expect(isLockNotAcquiredError(await failed)).toBe(true);
    expect((memory as unknown as { wakers: KeyedWakers }).wakers.size).toBe(0);
  });
});

describe('LockLostError', () => {
  it('names the key and keeps the cause', () => {
    const cause = new Error('x');
    expect(new LockLostError('k', cause)).toMatchObject({
      key: 'k',
      cause,
      code: 'ERR_LOCK_LOST',
      kind: 'conflict',
    });
  });
});
