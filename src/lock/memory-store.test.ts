import { describe, expect, it } from 'vitest';
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
    expect((store as unknown as { watchers: Map<string, unknown> }).watchers.size).toBe(1);
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
