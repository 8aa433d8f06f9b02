import { describe, expect, it } from 'vitest';
import type { KeyedWakers } from '../core/keyed-wakers.js';
import { FakeClock } from '../testing/fake-clock.js';
import { fenceStoreConformance, lockStoreConformance } from '../testing/lock-conformance.js';
import { isStaleFenceError } from './errors.js';
import { memoryFenceStore, memoryLockStore } from './memory-store.js';

lockStoreConformance(
  'memory store (FakeClock)',
  () => {
    const clock = new FakeClock(1_000_000);
    return { store: memoryLockStore({ clock }), elapse: (ms) => clock.advance(ms), slackMs: 0 };
  },
  { describe, it },
);

fenceStoreConformance(
  'memory store',
  () => {
    const store = memoryFenceStore();
    const values = new Map<string, string>();
    return {
      store,
      write: (resource, fence, value) => store.write(resource, fence, () => void values.set(resource, value)),
      read: (resource) => Promise.resolve(values.get(resource)),
    };
  },
  { describe, it },
);

describe('memoryLockStore', () => {
  it('fences are floored by the clock in microseconds, and +1 within one microsecond', async () => {
    const clock = new FakeClock(1_700_000_000_000);
    const store = memoryLockStore({ clock });
    const first = await store.acquire('k', 'a', 1_000);
    expect(first?.fence).toBe(1_700_000_000_000_000);
    expect(first?.expiresAt).toBe(1_700_000_001_000);
    await store.release('k', 'a');
    expect((await store.acquire('k', 'b', 1_000))?.fence).toBe(1_700_000_000_000_001);
    await store.release('k', 'b');
    await clock.advance(5);
    expect((await store.acquire('k', 'c', 1_000))?.fence).toBe(1_700_000_000_005_000);
  });

  it('drops released entries once the clock passed their fence, and sweeps expired ones', async () => {
    const clock = new FakeClock(1_000);
    const store = memoryLockStore({ clock });
    const leases = (store as unknown as { leases: Map<string, unknown> }).leases;
    await store.acquire('held', 'a', 1_000);
    await store.release('held', 'a'); // same microsecond as its fence: kept
    expect(leases.has('held')).toBe(true);
    await clock.advance(1);
    await store.acquire('dropped', 'a', 1_000);
    await clock.advance(1);
    await store.release('dropped', 'a'); // the clock passed its fence: dropped
    expect(leases.has('dropped')).toBe(false);
    await store.acquire('abandoned', 'a', 10);
    await clock.advance(20);
    for (let i = 0; i < 1_021; i++) {
      await store.acquire('busy', 'a', 1_000);
      await clock.advance(1);
      await store.release('busy', 'a');
    }
    expect(leases.has('abandoned')).toBe(false); // swept
    expect([...leases.keys()]).toEqual([]);
  });

  it('refuses bad and unknown options', () => {
    expect(() => memoryLockStore({ clock: {} as never })).toThrow(/"clock"/);
    expect(() => memoryLockStore({ clok: 1 } as never)).toThrow(/clok/);
  });

  it('a throwing watcher breaks neither the release nor other watchers', async () => {
    const store = memoryLockStore({ clock: new FakeClock(0) });
    await store.acquire('k', 'a', 1_000);
    const woken: string[] = [];
    store.watch('k', () => {
      throw new Error('boom');
    });
    const unwatch = store.watch('k', () => woken.push('second'));
    expect(await store.release('k', 'a')).toBe(true);
    await Promise.resolve();
    expect(woken).toEqual(['second']);
    unwatch();
    unwatch();
    expect((store as unknown as { wakers: KeyedWakers }).wakers.size).toBe(1);
  });
});

describe('memoryFenceStore', () => {
  it('an apply that rejects records no fence; the next writer runs after it', async () => {
    const store = memoryFenceStore();
    const order: string[] = [];
    const failing = store.write('r', 5, async () => {
      order.push('five starts');
      await Promise.resolve();
      throw new Error('rolled back');
    });
    const next = store.write('r', 3, () => order.push('three'));
    await expect(failing).rejects.toThrow('rolled back');
    await next;
    expect(order).toEqual(['five starts', 'three']);
    expect(await store.highest('r')).toBe(3);
    const error = await store.write('r', 2, () => order.push('two')).catch((e: unknown) => e);
    expect(isStaleFenceError(error)).toBe(true);
    expect(order).not.toContain('two');
  });

  it('refuses a non-function apply and a bad resource', async () => {
    await expect(memoryFenceStore().write('r', 1, 'v' as never)).rejects.toThrow(/"apply"/);
    await expect(memoryFenceStore().highest('')).rejects.toThrow(TypeError);
  });
});

describe('memoryLockStore details', () => {
  it('names the bad argument; a 1 ms lease is a lease', async () => {
    const store = memoryLockStore({ clock: new FakeClock(0) });
    await expect(store.acquire('', 'a', 10)).rejects.toThrow(/"key"/);
    await expect(store.acquire('k', '', 10)).rejects.toThrow(/"owner"/);
    await expect(store.acquire('k', 'a', 0)).rejects.toThrow(/"ttlMs" to be a positive safe integer/);
    await expect(store.renew('k', 'a', 0)).rejects.toThrow(/"ttlMs"/);
    expect(await store.acquire('k', 'a', 1)).toBeDefined();
  });

  it('a lease is over at its exact end: no renewal, no release, and the key is free', async () => {
    const clock = new FakeClock(0);
    const store = memoryLockStore({ clock });
    await store.acquire('k', 'a', 100);
    await clock.advance(100);
    expect(await store.renew('k', 'a', 100)).toBe(false);
    expect(await store.release('k', 'a')).toBe(false);
    expect(await store.acquire('k', 'b', 100)).toBeDefined();
  });

  it('sweeps only every 1,024 acquisitions, and only free leases whose fence the clock has passed', async () => {
    const clock = new FakeClock(1_000);
    const store = memoryLockStore({ clock });
    const leases = (store as unknown as { leases: Map<string, unknown> }).leases;
    await store.acquire('live', 'a', 60_000); // acquisition 1: held throughout
    await store.acquire('expired', 'a', 10); // 2
    await store.acquire('released-now', 'a', 60_000); // 3
    await clock.advance(20);
    for (let i = 4; i < 1_024; i++) await store.acquire(`k${i}`, 'a', 60_000);
    await store.release('released-now', 'a'); // the clock passed its fence: dropped at once
    expect(leases.has('expired')).toBe(true); // not swept yet: 1 023 acquisitions
    await store.acquire('the-1024th', 'a', 60_000);
    expect(leases.has('expired')).toBe(false);
    expect(leases.has('live')).toBe(true);
    expect(leases.has('k4')).toBe(true); // held
    await clock.advance(1);
    await store.release('k4', 'a');
    expect(leases.has('k4')).toBe(false);
  });

  it('a released entry whose fence the clock has not passed survives the sweep, so the next fence is above it', async () => {
    const clock = new FakeClock(1_000);
    const store = memoryLockStore({ clock });
    await store.acquire('same-µs', 'a', 60_000);
    await store.release('same-µs', 'a');
    for (let i = 1; i < 1_024; i++) await store.acquire(`k${i}`, 'a', 60_000); // the sweep runs
    expect((await store.acquire('same-µs', 'b', 1_000))?.fence).toBe(1_000_001);
  });

  it('watch: unwatching drops the key; a spent unwatch leaves a new watcher alone', () => {
    const store = memoryLockStore({ clock: new FakeClock(0) });
    const { wakers } = store as unknown as { wakers: KeyedWakers };
    const unwatch = store.watch('k', () => {});
    unwatch();
    expect(wakers.size).toBe(0);
    const again = store.watch('k', () => {});
    unwatch();
    expect(wakers.has('k')).toBe(true);
    again();
    expect(wakers.size).toBe(0);
  });
});

describe('memoryLockStore sweep edges', () => {
  const leasesOf = (store: object) => (store as unknown as { leases: Map<string, unknown> }).leases;

  it('sweeps a released entry once the clock passed its fence, though its old lease has not ended', async () => {
    const clock = new FakeClock(1_000);
    const store = memoryLockStore({ clock });
    await store.acquire('released', 'a', 60_000);
    await store.release('released', 'a'); // same µs as its fence: kept for now
    await clock.advance(1);
    for (let i = 1; i < 1_024; i++) await store.acquire(`k${i}`, 'a', 60_000); // the 1,024th sweeps
    expect(leasesOf(store).has('released')).toBe(false);
  });

  it('sweeps a held lease whose end is exactly now', async () => {
    const clock = new FakeClock(1_000);
    const store = memoryLockStore({ clock });
    await store.acquire('ending', 'a', 10);
    await clock.advance(10); // its lease ends at this very ms
    for (let i = 1; i < 1_024; i++) await store.acquire(`k${i}`, 'a', 60_000);
    expect(leasesOf(store).has('ending')).toBe(false);
  });

  it('names itself in an unknown-option error', () => {
    expect(() => memoryLockStore({ clok: 1 } as never)).toThrow(
      /^unknown option "clok" in memoryLockStore options/,
    );
  });
});

describe('memoryFenceStore details', () => {
  it('a third writer waits for the second even when the first settled in between', async () => {
    const store = memoryFenceStore();
    const events: string[] = [];
    let finishSecond!: () => void;
    const first = store.write('r', 1, () => {
      events.push('first');
    });
    const second = store.write('r', 2, () => {
      events.push('second starts');
      return new Promise<void>((resolve) => {
        finishSecond = () => {
          events.push('second ends');
          resolve();
        };
      });
    });
    await first;
    await new Promise((resolve) => setImmediate(resolve)); // the first write's queue entry is settled
    const third = store.write('r', 3, () => {
      events.push('third');
    });
    await new Promise((resolve) => setImmediate(resolve));
    expect(events).toEqual(['first', 'second starts']);
    finishSecond();
    await Promise.all([second, third]);
    expect(events).toEqual(['first', 'second starts', 'second ends', 'third']);
  });

  it('a second writer does not start until the first one’s apply has settled', async () => {
    const store = memoryFenceStore();
    const events: string[] = [];
    let finishFirst!: () => void;
    const first = store.write('r', 5, async () => {
      events.push('first starts');
      await new Promise<void>((resolve) => (finishFirst = resolve));
      events.push('first ends');
    });
    const second = store.write('r', 6, () => events.push('second runs'));
    await new Promise((resolve) => setImmediate(resolve));
    expect(events).toEqual(['first starts']);
    finishFirst();
    await Promise.all([first, second]);
    expect(events).toEqual(['first starts', 'first ends', 'second runs']);
    const queues = (store as unknown as { queues: Map<string, unknown> }).queues;
    await new Promise((resolve) => setImmediate(resolve));
    expect(queues.size).toBe(0);
  });

  it('names the bad argument', async () => {
    const store = memoryFenceStore();
    await expect(store.write('', 1, () => {})).rejects.toThrow(/"resource"/);
    await expect(store.write('r', -1, () => {})).rejects.toThrow(/"fence" to be a non-negative safe integer/);
    await expect(store.write('r', 1, 'v' as never)).rejects.toThrow(/expected "apply" to be a function/);
    await expect(store.highest('')).rejects.toThrow(/"resource"/);
  });
});
