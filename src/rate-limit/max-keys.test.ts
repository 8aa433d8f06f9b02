/**
 * `maxKeys` is a bound, not a preallocation: every per-key map of a limiter (the in-memory store,
 * the blocked-key memory, the `local` fallback) grows with the keys actually used, so a large bound
 * costs nothing until keys arrive.
 */
import { describe, expect, it } from 'vitest';
import { FakeClock } from '../testing/fake-clock.js';
import { memoryRateLimitStore } from './memory-store.js';
import { rateLimiter } from './rate-limiter.js';
import type { RateLimitResult, RateLimitRule, RateLimitStore } from './store.js';

/** An asynchronous store (so the limiter keeps its blocked-key memory and local fallback). */
function asyncStore(clock: FakeClock): RateLimitStore {
  const inner = memoryRateLimitStore({ clock, maxKeys: 2 ** 32 });
  return {
    take: (key: string, cost: number, rule: RateLimitRule): Promise<RateLimitResult> =>
      inner.take(key, cost, rule),
    peek: (key: string, rule: RateLimitRule) => inner.peek(key, rule),
    reset: (key: string, rule: RateLimitRule) => inner.reset(key, rule),
  };
}

/** Heap and typed-array memory in use now, after a full GC when the runtime exposes it. */
function memoryInUse(): number {
  (globalThis as { gc?: () => void }).gc?.();
  const { heapUsed, arrayBuffers } = process.memoryUsage();
  return heapUsed + arrayBuffers;
}

describe('maxKeys', () => {
  it('maxKeys: 2 ** 32 works with the in-memory store, and still evicts at its bound', () => {
    const clock = new FakeClock();
    const limiter = rateLimiter({ limit: 1, periodMs: 60_000, maxKeys: 2 ** 32, clock });
    expect(limiter.takeSync('a')).toMatchObject({ allowed: true });
    expect(limiter.takeSync('a')).toMatchObject({ allowed: false });
    const store = memoryRateLimitStore({ maxKeys: 2 ** 32, clock });
    const rule = limiter.rule;
    for (let i = 0; i < 1_000; i++) store.takeSync(`k${i}`, 1, rule);
    expect(store.size).toBe(1_000);
  });

  it('maxKeys: 2 ** 32 works with a remote store (blocked-key memory and local fallback)', async () => {
    const clock = new FakeClock();
    const limiter = rateLimiter({
      limit: 1,
      periodMs: 60_000,
      maxKeys: 2 ** 32,
      clock,
      store: asyncStore(clock),
      storeFailure: 'local',
    });
    expect(await limiter.take('a')).toMatchObject({ allowed: true });
    expect(await limiter.take('a')).toMatchObject({ allowed: false });
    expect(await limiter.take('a')).toMatchObject({ allowed: false });
  });

  it('memory follows the keys used, not maxKeys: 2e7 costs next to nothing until keys arrive', () => {
    const before = memoryInUse();
    const limiter = rateLimiter({ limit: 1, periodMs: 60_000, maxKeys: 2e7, clock: new FakeClock() });
    limiter.takeSync('a');
    const store = memoryRateLimitStore({ maxKeys: 2e7, clock: new FakeClock() });
    store.takeSync('a', 1, limiter.rule);
    // Preallocating 2e7 slots costs hundreds of MB; growing lazily costs a few kB here. The bound
    // is generous so that unrelated allocations in the test process never make it flaky.
    expect(memoryInUse() - before).toBeLessThan(32 * 1024 * 1024);
    expect(limiter.takeSync('a').allowed).toBe(false);
  });

  it.each([0, -1, 1.5, Number.NaN, Infinity, '10'])(
    'maxKeys %o is refused with a TypeError naming it',
    (maxKeys) => {
      expect(() => rateLimiter({ limit: 1, periodMs: 1_000, maxKeys: maxKeys as never })).toThrow(
        /"maxKeys" to be a positive integer/,
      );
      expect(() => memoryRateLimitStore({ maxKeys: maxKeys as never })).toThrow(
        /"maxKeys" to be a positive integer/,
      );
    },
  );
});
