import { describe, expect, it } from 'vitest';
import { isStoreUnavailableError } from '../core/errors.js';
import { FakeClock } from '../testing/fake-clock.js';
import { idempotencyStoreConformance } from '../testing/idempotency-conformance.js';
import { memoryIdempotencyStore } from './memory-store.js';

idempotencyStoreConformance(
  'memory store on a FakeClock',
  () => {
    const clock = new FakeClock(1_000_000);
    return { store: memoryIdempotencyStore({ clock }), elapse: (ms) => clock.advance(ms), slackMs: 0 };
  },
  { describe, it },
);

describe('memoryIdempotencyStore', () => {
  it('refuses bad and unknown options by name', () => {
    expect(() => memoryIdempotencyStore({ maxKeys: 0 })).toThrow(/"maxKeys"/);
    expect(() => memoryIdempotencyStore({ maxKey: 5 } as never)).toThrow(
      /unknown option "maxKey" in memoryIdempotencyStore options.*"maxKeys"/,
    );
    expect(() => memoryIdempotencyStore({ clock: {} as never })).toThrow(/"clock"/);
  });

  it('when full drops expired records first, then the oldest completed, never one in progress', async () => {
    const clock = new FakeClock(0);
    const store = memoryIdempotencyStore({ clock, maxKeys: 3 });
    const a = await store.claim('a', 'fp', 100);
    const b = await store.claim('b', 'fp', 10_000);
    const c = await store.claim('c', 'fp', 10_000);
    if (a.status !== 'claimed' || b.status !== 'claimed' || c.status !== 'claimed') throw new Error('claims');
    await clock.advance(200); // a's lease ended
    expect((await store.claim('d', 'fp', 10_000)).status).toBe('claimed');
    expect(store.size).toBe(3);
    await store.complete('c', c.token, 'C', 60_000);
    await store.complete('b', b.token, 'B', 60_000);
    // c completed first, so it is the oldest completed: it goes, b's replay stays.
    expect((await store.claim('e', 'fp', 10_000)).status).toBe('claimed');
    expect(await store.claim('b', 'fp', 10_000)).toEqual({ status: 'completed', result: 'B' });
    expect((await store.claim('c', 'fp', 10_000)).status).toBe('claimed');
  });

  it('a claim that would evict an in-progress record rejects with StoreUnavailableError', async () => {
    const store = memoryIdempotencyStore({ clock: new FakeClock(), maxKeys: 2 });
    await store.claim('a', 'fp', 10_000);
    await store.claim('b', 'fp', 10_000);
    const error = await store.claim('c', 'fp', 10_000).catch((e: unknown) => e);
    expect(isStoreUnavailableError(error)).toBe(true);
    expect(String(error)).toMatch(/full.*maxKeys/);
    expect((await store.claim('a', 'fp', 10_000)).status).toBe('in_progress');
  });

  it('wakes watchers after complete and release, never synchronously, and stops after unwatch', async () => {
    const store = memoryIdempotencyStore({ clock: new FakeClock() });
    const woken: string[] = [];
    const unwatch = store.watch('k', () => woken.push('k'));
    store.watch('other', () => woken.push('other'));
    const claim = await store.claim('k', 'fp', 1_000);
    if (claim.status !== 'claimed') throw new Error('claim');
    const released = store.release('k', claim.token);
    expect(woken).toEqual([]);
    await released;
    await Promise.resolve();
    expect(woken).toEqual(['k']);
    unwatch();
    unwatch();
    const again = await store.claim('k', 'fp', 1_000);
    if (again.status !== 'claimed') throw new Error('claim');
    await store.complete('k', again.token, 'r', 1_000);
    await Promise.resolve();
    expect(woken).toEqual(['k']);
  });
});

describe('memoryIdempotencyStore boundaries', () => {
  it('a lease ends exactly at leaseMs: the key is free at that instant', async () => {
    const clock = new FakeClock(0);
    const store = memoryIdempotencyStore({ clock });
    const first = await store.claim('k', 'fp', 100);
    await clock.advance(99);
    expect((await store.claim('k', 'fp', 100)).status).toBe('in_progress');
    await clock.advance(1);
    expect((await store.claim('k', 'other', 100)).status).toBe('claimed');
    if (first.status !== 'claimed') throw new Error('claim');
    expect(await store.renew('k', first.token, 100)).toBe(false);
  });

  it('when full, a record that expires exactly now makes room', async () => {
    const clock = new FakeClock(0);
    const store = memoryIdempotencyStore({ clock, maxKeys: 1 });
    await store.claim('a', 'fp', 100);
    await clock.advance(100);
    expect((await store.claim('b', 'fp', 100)).status).toBe('claimed');
    expect(store.size).toBe(1);
  });

  it('unwatching the last watcher of a key forgets the key; another watcher keeps it', () => {
    const store = memoryIdempotencyStore({ clock: new FakeClock() });
    const one = store.watch('k', () => {});
    const two = store.watch('k', () => {});
    expect(store.watched).toBe(1);
    one();
    expect(store.watched).toBe(1);
    two();
    expect(store.watched).toBe(0);
    const again = store.watch('k', () => {});
    one(); // a stale unwatch of the old set leaves the new watcher alone
    expect(store.watched).toBe(1);
    again();
  });
});
