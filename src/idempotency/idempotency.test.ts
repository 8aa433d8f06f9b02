import { describe, expect, it, vi } from 'vitest';
import { forwardingStore } from '../../test/support/idempotency-stores.js';
import { until } from '../../test/support/until.js';
import { isStoreUnavailableError, ResilienceError, StoreUnavailableError } from '../core/errors.js';
import { FakeClock } from '../testing/fake-clock.js';
import {
  isIdempotencyConflictError,
  isIdempotencyInProgressError,
  isLeaseLostError,
  isStoredFailureError,
  LeaseLostError,
} from './errors.js';
import { fingerprintOf, idempotency } from './idempotency.js';
import { memoryIdempotencyStore } from './memory-store.js';
import type { IdempotencyStore } from './store.js';

/** Lets pending promise callbacks run. */
const flush = async () => {
  for (let i = 0; i < 20; i++) await Promise.resolve();
};

function setup(options: Parameters<typeof idempotency>[0] = {}) {
  const clock = new FakeClock(1_000_000);
  const memory = memoryIdempotencyStore({ clock });
  let claims = 0;
  const store: IdempotencyStore = {
    ...forwardingStore(memory),
    claim: (...a) => {
      claims += 1;
      return memory.claim(...a);
    },
    watch: (key, wake) => memory.watch(key, wake),
  };
  const untilClaims = (n: number) => until(() => claims >= n, `${n} claims`);
  return { clock, store, idem: idempotency({ store, clock, ...options }), untilClaims };
}

/** A handler that resolves when told to, counting its runs. */
function gated<T>(value: T) {
  let runs = 0;
  let open!: () => void;
  const gate = new Promise<void>((resolve) => {
    open = resolve;
  });
  const handler = async () => {
    runs += 1;
    await gate;
    return value;
  };
  return { handler, open, runs: () => runs };
}

describe('idempotency: execute once, replay after', () => {
  it('runs the handler once; a later call with the same key and request replays the stored result', async () => {
    const { idem } = setup();
    const handler = vi.fn(async () => ({ id: 'pay_1', amount: 100, body: new Uint8Array([1, 2]) }));
    const first = await idem.run('k', { amount: 100 }, handler);
    const second = await idem.run('k', { amount: 100 }, handler);
    expect(first).toEqual({
      value: { id: 'pay_1', amount: 100, body: new Uint8Array([1, 2]) },
      replayed: false,
    });
    expect(second).toEqual({ ...first, replayed: true });
    expect(handler).toHaveBeenCalledTimes(1);
  });

  it('the fingerprint ignores key order; another request with the key is a conflict, never a replay', async () => {
    const onConflict = vi.fn();
    const { idem } = setup({ onConflict, name: 'payments' });
    await idem.execute('k', { a: 1, b: 2 }, () => 'done');
    expect(await idem.execute('k', { b: 2, a: 1 }, () => 'again')).toBe('done');
    const error = await idem.execute('k', { a: 1, b: 3 }, () => 'other').catch((e: unknown) => e);
    expect(isIdempotencyConflictError(error)).toBe(true);
    expect(error).toMatchObject({ kind: 'conflict', key: 'k', code: 'ERR_IDEMPOTENCY_CONFLICT' });
    expect(onConflict).toHaveBeenCalledWith({ policy: 'payments', key: 'k' });
  });

  it('a fingerprint option decides what "the same request" is', async () => {
    const { idem } = setup({ fingerprint: (r: { body: string; requestId: string }) => r.body });
    await idem.execute('k', { body: 'x', requestId: '1' }, () => 1);
    expect(await idem.execute('k', { body: 'x', requestId: '2' }, () => 2)).toBe(1);
  });

  it('undefined, null and falsy results are stored and replayed as they were', async () => {
    const { idem } = setup();
    for (const [i, value] of [undefined, null, 0, '', false].entries()) {
      await idem.execute(`k${i}`, 1, () => value);
      expect(await idem.run(`k${i}`, 1, () => 'ran again')).toEqual({ value, replayed: true });
    }
  });

  it('refuses a bad key, a request or a result that is not JSON (the latter releasing the key)', async () => {
    const { idem } = setup();
    await expect(idem.execute('', 1, () => 1)).rejects.toThrow(/"key"/);
    await expect(idem.execute('\uD800', 1, () => 1)).rejects.toThrow(/"key"/);
    await expect(idem.execute('k', { n: 1n }, () => 1)).rejects.toThrow(TypeError);
    await expect(idem.execute('k', 1, () => ({ f: () => 1 }))).rejects.toThrow(/a function/);
    expect(await idem.execute('k', 1, () => 'fixed')).toBe('fixed');
  });

  it('refuses bad and unknown options by name', () => {
    expect(() => idempotency({ leaseMs: 0 })).toThrow(/"leaseMs"/);
    expect(() => idempotency({ ttlMs: -1 })).toThrow(/"ttlMs"/);
    expect(() => idempotency({ maxWaitMs: 1.5 })).toThrow(/"maxWaitMs"/);
    expect(() => idempotency({ wait: 'yes' as never })).toThrow(/"wait"/);
    expect(() => idempotency({ store: {} as never })).toThrow(/"store"/);
    expect(() => idempotency({ leaseMS: 5 } as never)).toThrow(/unknown option "leaseMS".*"leaseMs"/);
    expect(() => idempotency({ transactional: true, store: memoryIdempotencyStore() } as never)).toThrow(
      /transactions/,
    );
  });

  it('fingerprintOf is the SHA-256 of the canonical JSON', async () => {
    expect(await fingerprintOf({ b: 1, a: 2 })).toBe(await fingerprintOf({ a: 2, b: 1 }));
    expect(await fingerprintOf({ a: 1 })).toMatch(/^[0-9a-f]{64}$/);
  });
});

describe('idempotency: concurrent duplicates', () => {
  it('100 concurrent identical calls run the handler once; every waiter gets the result', async () => {
    const { idem, untilClaims } = setup();
    const { handler, open, runs } = gated({ ok: true });
    const calls = Array.from({ length: 100 }, () => idem.run('k', 'req', handler));
    await untilClaims(100);
    open();
    const outcomes = await Promise.all(calls);
    expect(runs()).toBe(1);
    expect(outcomes.filter((o) => !o.replayed)).toHaveLength(1);
    expect(outcomes.every((o) => (o.value as { ok: boolean }).ok)).toBe(true);
  });

  it('with wait: false a duplicate rejects at once with IdempotencyInProgressError and the lease left', async () => {
    const onConflict = vi.fn();
    const { idem, clock, untilClaims } = setup({ wait: false, leaseMs: 9_000, onConflict });
    const { handler, open } = gated(1);
    const first = idem.execute('k', 'req', handler);
    await untilClaims(1);
    await clock.advance(1_000);
    const error = await idem.execute('k', 'req', handler).catch((e: unknown) => e);
    expect(isIdempotencyInProgressError(error)).toBe(true);
    expect(error).toMatchObject({ kind: 'conflict', retryAfterMs: 8_000 });
    expect(onConflict).not.toHaveBeenCalled(); // the same request still running: no onConflict
    open();
    expect(await first).toBe(1);
  });

  it('a waiter is woken by the store the moment the owner completes (no poll needed)', async () => {
    const { idem, clock, untilClaims } = setup();
    const { handler, open } = gated('v');
    const first = idem.execute('k', 'req', handler);
    await untilClaims(1);
    let got: unknown;
    const waiter = idem.execute('k', 'req', handler).then((v) => {
      got = v;
    });
    await untilClaims(2);
    await clock.advance(25); // the first poll: still in progress
    await untilClaims(3);
    await flush();
    open();
    await first;
    await flush();
    expect(got).toBe('v');
    await waiter;
  });

  it('without notifications the waiter polls, backing off, and gets the result', async () => {
    const clock = new FakeClock(0);
    const memory = memoryIdempotencyStore({ clock });
    const claims = vi.fn();
    const store = forwardingStore(memory, {
      claim: (...a) => {
        claims(clock.now());
        return memory.claim(...a);
      },
    });
    const idem = idempotency({ store, clock, leaseMs: 60_000 });
    const { handler, open } = gated('v');
    const first = idem.execute('k', 'req', handler);
    await until(() => claims.mock.calls.length === 1);
    const waiter = idem.execute('k', 'req', handler);
    await until(() => claims.mock.calls.length === 2);
    await clock.advance(400);
    open();
    await first;
    await clock.advance(400);
    expect(await waiter).toBe('v');
    // claims: the owner's, then the waiter's at 0 and after 25, 50, 100, 200, 400 ms of backoff
    expect(claims.mock.calls.map(([t]) => t)).toEqual([0, 0, 25, 75, 175, 375, 775]);
  });

  it('past maxWaitMs the waiter rejects with IdempotencyInProgressError; the owner is unaffected', async () => {
    const { idem, clock, untilClaims } = setup({ maxWaitMs: 300, leaseMs: 60_000 });
    const { handler, open, runs } = gated('v');
    const first = idem.execute('k', 'req', handler);
    await untilClaims(1);
    const waiter = idem.execute('k', 'req', handler).catch((e: unknown) => e);
    await untilClaims(2);
    await clock.advance(1_000);
    expect(isIdempotencyInProgressError(await waiter)).toBe(true);
    open();
    expect(await first).toBe('v');
    expect(runs()).toBe(1);
  });

  it("a waiter's abort rejects it with its reason at once", async () => {
    const { idem, clock, untilClaims } = setup();
    const { handler, open } = gated('v');
    const first = idem.execute('k', 'req', handler);
    await untilClaims(1);
    const controller = new AbortController();
    const waiter = idem.execute('k', 'req', handler, { signal: controller.signal }).catch((e: unknown) => e);
    await untilClaims(2);
    await clock.advance(10);
    controller.abort(new Error('client left'));
    expect(await waiter).toMatchObject({ message: 'client left' });
    open();
    await first;
    expect(clock.pendingTimers).toBe(0);
  });

  it('when the owner fails, a waiting duplicate takes the key and runs the handler itself', async () => {
    const { idem, untilClaims } = setup();
    let runs = 0;
    let fail: ((error: Error) => void) | undefined;
    const first = idem
      .execute('k', 'req', () => {
        runs += 1;
        return new Promise((_resolve, reject) => {
          fail = reject;
        });
      })
      .catch((e: unknown) => e);
    await until(() => fail !== undefined, 'the first handler');
    const second = idem.execute('k', 'req', () => {
      runs += 1;
      return 'second';
    });
    await untilClaims(2);
    fail?.(new Error('card declined transiently'));
    expect(await first).toMatchObject({ message: 'card declined transiently' });
    expect(await second).toBe('second');
    expect(runs).toBe(2);
  });
});

describe('idempotency: failures', () => {
  it('a failed handler releases the key, so a retry runs it again', async () => {
    const { idem } = setup();
    await expect(idem.execute('k', 1, () => Promise.reject(new Error('boom')))).rejects.toThrow('boom');
    expect(await idem.execute('k', 1, () => 'second try')).toBe('second try');
  });

  it('storeErrors keeps a permanent failure as the outcome; replays reject with StoredFailureError', async () => {
    const { idem } = setup({ storeErrors: () => true });
    const declined = Object.assign(
      new ResilienceError('card declined', { code: 'E_DECLINED', kind: 'invalid', expose: true }),
      {
        status: 402,
      },
    );
    await expect(idem.execute('k', 1, () => Promise.reject(declined))).rejects.toBe(declined);
    const replay = await idem.execute('k', 1, () => 'ran').catch((e: unknown) => e);
    expect(isStoredFailureError(replay)).toBe(true);
    expect(replay).toMatchObject({
      message: 'card declined',
      code: 'E_DECLINED',
      kind: 'invalid',
      originalName: 'ResilienceError',
      status: 402,
      expose: true,
    });
  });

  it('storeErrors never keeps a transient, timeout, unavailable or canceled failure', async () => {
    const storeErrors = vi.fn(() => true);
    const { idem } = setup({ storeErrors });
    for (const kind of ['transient', 'timeout', 'unavailable', 'canceled', 'internal'] as const) {
      const error = new ResilienceError(kind, { code: 'E', kind });
      await expect(idem.execute(kind, 1, () => Promise.reject(error))).rejects.toBe(error);
      expect(await idem.execute(kind, 1, () => 'retried')).toBe('retried');
    }
    expect(storeErrors).not.toHaveBeenCalled();
  });

  it('a store that cannot claim: StoreUnavailableError and the handler never runs', async () => {
    const down = new Error('ECONNREFUSED');
    const store: IdempotencyStore = {
      claim: () => Promise.reject(down),
      complete: () => Promise.reject(down),
      release: () => Promise.reject(down),
      renew: () => Promise.reject(down),
    };
    const handler = vi.fn(() => 1);
    const error = await idempotency({ store })
      .execute('k', 1, handler)
      .catch((e: unknown) => e);
    expect(isStoreUnavailableError(error)).toBe(true);
    expect((error as Error).cause).toBe(down);
    expect(handler).not.toHaveBeenCalled();
    const own = new StoreUnavailableError('Redis did not answer within 100 ms');
    const passed = await idempotency({ store: { ...store, claim: () => Promise.reject(own) } })
      .execute('k', 1, handler)
      .catch((e: unknown) => e);
    expect(passed).toBe(own);
  });

  it('complete failing after success returns the value and reports it; release failing never masks the error', async () => {
    const clock = new FakeClock();
    const memory = memoryIdempotencyStore({ clock });
    const down = new StoreUnavailableError('down');
    const store: IdempotencyStore = forwardingStore(memory, {
      complete: () => Promise.reject(down),
      release: () => Promise.reject(down),
    });
    const onStoreError = vi.fn();
    const idem = idempotency({ store, clock, onStoreError });
    expect(await idem.execute('a', 1, () => 'charged')).toBe('charged');
    await expect(idem.execute('b', 1, () => Promise.reject(new Error('boom')))).rejects.toThrow('boom');
    expect(onStoreError.mock.calls.map(([e]) => [e.key, e.operation, e.error])).toEqual([
      ['a', 'complete', down],
      ['b', 'release', down],
    ]);
  });

  it("the caller's abort aborts the handler's signal and releases the key", async () => {
    const { idem, untilClaims } = setup();
    const controller = new AbortController();
    const call = idem
      .execute(
        'k',
        1,
        ({ signal }) =>
          new Promise((_resolve, reject) => signal.addEventListener('abort', () => reject(signal.reason))),
        { signal: controller.signal },
      )
      .catch((e: unknown) => e);
    await untilClaims(1);
    await flush();
    controller.abort(new Error('caller left'));
    expect(await call).toMatchObject({ message: 'caller left' });
    expect(await idem.execute('k', 1, () => 'again')).toBe('again');
  });

  it('an abort while the claim is on its way: the key is released and the handler never runs', async () => {
    const clock = new FakeClock();
    const memory = memoryIdempotencyStore({ clock });
    const controller = new AbortController();
    const store: IdempotencyStore = {
      ...forwardingStore(memory),
      claim: async (...a) => {
        const result = await memory.claim(...a);
        controller.abort(new Error('left during the claim'));
        return result;
      },
    };
    const handler = vi.fn(() => 1);
    const idem = idempotency({ store, clock });
    await expect(idem.execute('k', 1, handler, { signal: controller.signal })).rejects.toThrow(
      'left during the claim',
    );
    expect(handler).not.toHaveBeenCalled();
    expect((await memory.claim('k', await fingerprintOf(1), 1_000)).status).toBe('claimed');
  });

  it('an already aborted signal: nothing is claimed', async () => {
    const { idem } = setup();
    const handler = vi.fn(() => 1);
    await expect(
      idem.execute('k', 1, handler, { signal: AbortSignal.abort(new Error('gone')) }),
    ).rejects.toThrow('gone');
    expect(handler).not.toHaveBeenCalled();
    expect(await idem.execute('k', 1, () => 2)).toBe(2);
  });
});

describe('idempotency: the lease', () => {
  function counted(clock: FakeClock) {
    const memory = memoryIdempotencyStore({ clock });
    const renewals: number[] = [];
    let renew: IdempotencyStore['renew'] = (...a) => memory.renew(...a);
    let claims = 0;
    const store: IdempotencyStore = {
      claim: async (...a) => {
        const result = await memory.claim(...a);
        claims += 1;
        return result;
      },
      complete: (...a) => memory.complete(...a),
      release: (...a) => memory.release(...a),
      renew: (...a) => {
        renewals.push(clock.now());
        return renew(...a);
      },
    };
    /** Resolves once the first claim was answered and its handler has started. */
    const claimed = async () => {
      await until(() => claims > 0, 'the claim');
      await flush();
    };
    return { store, claimed, renewals, setRenew: (r: IdempotencyStore['renew']) => (renew = r) };
  }

  it('is renewed every leaseMs / 3 while the handler runs, and no timer is left after', async () => {
    const clock = new FakeClock(0);
    const { store, renewals, claimed } = counted(clock);
    const idem = idempotency({ store, clock, leaseMs: 3_000 });
    const call = idem.execute('k', 1, () => clock.sleep(10_000).then(() => 'slow'));
    await claimed();
    await clock.advance(10_000);
    expect(await call).toBe('slow');
    expect(renewals).toEqual([1_000, 2_000, 3_000, 4_000, 5_000, 6_000, 7_000, 8_000, 9_000]);
    expect(clock.pendingTimers).toBe(0);
  });

  it('a refused renewal (taken over) aborts the signal with LeaseLostError; the call rejects even if the handler resolves', async () => {
    const clock = new FakeClock(0);
    const { store, setRenew, claimed } = counted(clock);
    const onLeaseLost = vi.fn();
    const idem = idempotency({ store, clock, leaseMs: 3_000, onLeaseLost });
    setRenew(() => Promise.resolve(false));
    let seen: unknown;
    const call = idem
      .execute('k', 1, async ({ signal }) => {
        await clock.sleep(5_000);
        seen = signal.reason;
        return 'resolved anyway';
      })
      .catch((e: unknown) => e);
    await claimed();
    await clock.advance(5_000);
    const error = await call;
    expect(isLeaseLostError(error)).toBe(true);
    expect(seen).toBe(error);
    expect(onLeaseLost).toHaveBeenCalledWith({ policy: 'idempotency', key: 'k', reason: 'renew-refused' });
  });

  it('a renewal that fails (store down) loses the lease and aborts the handler', async () => {
    const clock = new FakeClock(0);
    const { store, setRenew, claimed } = counted(clock);
    const down = new StoreUnavailableError('down');
    setRenew(() => Promise.reject(down));
    const onLeaseLost = vi.fn();
    const idem = idempotency({ store, clock, leaseMs: 3_000, onLeaseLost });
    const call = idem
      .execute(
        'k',
        1,
        ({ signal }) =>
          new Promise((_r, reject) => signal.addEventListener('abort', () => reject(signal.reason))),
      )
      .catch((e: unknown) => e);
    await claimed();
    await clock.advance(1_000);
    const error = await call;
    expect(error).toBeInstanceOf(LeaseLostError);
    expect((error as Error).cause).toBe(down);
    expect(onLeaseLost.mock.calls[0]?.[0].reason).toBe('renew-failed');
  });

  it('a renewal with no answer before the lease would end loses it then', async () => {
    const clock = new FakeClock(0);
    const { store, setRenew, claimed } = counted(clock);
    setRenew(() => new Promise(() => {}));
    const onLeaseLost = vi.fn();
    const idem = idempotency({ store, clock, leaseMs: 3_000, onLeaseLost });
    let abortedAt: number | undefined;
    const call = idem
      .execute('k', 1, ({ signal }) => {
        signal.addEventListener('abort', () => {
          abortedAt = clock.now();
        });
        return clock.sleep(10_000).then(() => 'late');
      })
      .catch((e: unknown) => e);
    await claimed();
    await clock.advance(10_000);
    expect(isLeaseLostError(await call)).toBe(true);
    expect(abortedAt).toBe(3_000);
    expect(onLeaseLost.mock.calls[0]?.[0].reason).toBe('renew-late');
  });

  it('an owner whose lease was taken over cannot store its result: LeaseLostError, the successor wins', async () => {
    const clock = new FakeClock(0);
    const store = memoryIdempotencyStore({ clock });
    // No renewal reaches the store: a paused process.
    let started = false;
    const paused: IdempotencyStore = { ...forwardingStore(store), renew: () => new Promise(() => {}) };
    const slow = idempotency({ store: paused, clock, leaseMs: 3_000 });
    const first = slow
      .execute('k', 1, () => {
        started = true;
        return clock.sleep(5_000).then(() => 'stale');
      })
      .catch((e: unknown) => e);
    await until(() => started, 'the slow handler');
    await clock.advance(3_500);
    const fresh = idempotency({ store, clock, leaseMs: 3_000 });
    expect(await fresh.execute('k', 1, () => 'fresh')).toBe('fresh');
    await clock.advance(2_000);
    expect(isLeaseLostError(await first)).toBe(true);
    expect(await fresh.execute('k', 1, () => 'again')).toBe('fresh');
  });
});

describe('idempotency: transactional', () => {
  function transactional(clock: FakeClock) {
    const memory = memoryIdempotencyStore({ clock });
    const committed: string[] = [];
    const store: IdempotencyStore<{ effects: string[] }> = {
      ...forwardingStore(memory),
      complete: (key, token, result, ttlMs, tx) => {
        if (tx === undefined) throw new Error('complete outside the transaction');
        return memory.complete(key, token, result, ttlMs);
      },
      async transaction(work) {
        const tx = { effects: [] as string[] };
        const value = await work(tx);
        committed.push(...tx.effects);
        return value;
      },
    };
    return { store, committed };
  }

  it('the handler writes through tx; complete runs in the same transaction', async () => {
    const clock = new FakeClock();
    const { store, committed } = transactional(clock);
    const idem = idempotency({ store, clock, transactional: true });
    const handler = ({ tx }: { tx: { effects: string[] } }) => {
      tx.effects.push('charge');
      return 'ok';
    };
    expect(await idem.execute('k', 1, handler)).toBe('ok');
    expect(await idem.execute('k', 1, handler)).toBe('ok');
    expect(committed).toEqual(['charge']);
  });

  it('a failed handler commits nothing and releases the key', async () => {
    const clock = new FakeClock();
    const { store, committed } = transactional(clock);
    const idem = idempotency({ store, clock, transactional: true });
    await expect(
      idem.execute('k', 1, ({ tx }) => {
        tx.effects.push('half');
        throw new Error('boom');
      }),
    ).rejects.toThrow('boom');
    expect(committed).toEqual([]);
    expect(await idem.execute('k', 1, () => 'retried')).toBe('retried');
  });
});
