/**
 * A limiter on a store that is not the in-memory one (here an asynchronous wrapper of the memory
 * store, with a switch that makes it fail): the blocked-key memory, the events, and each
 * `storeFailure` mode, as a caller of the limiter sees them.
 */
import { describe, expect, it } from 'vitest';
import { isStoreUnavailableError, type StoreUnavailableError } from '../core/errors.js';
import { FakeClock } from '../testing/fake-clock.js';
import type { RateLimitRejectedEvent, RateLimitStoreErrorEvent } from './events.js';
import { memoryRateLimitStore } from './memory-store.js';
import type { RateLimiterOptions } from './options.js';
import { rateLimiter } from './rate-limiter.js';
import type { RateLimitResult, RateLimitRule, RateLimitStore } from './store.js';

/** The memory store behind promises; `failing` makes every call reject with it. */
class FlakyStore implements RateLimitStore {
  readonly inner: ReturnType<typeof memoryRateLimitStore>;
  calls = 0;
  failing: unknown;
  constructor(clock: FakeClock) {
    this.inner = memoryRateLimitStore({ clock });
  }
  take(key: string, cost: number, rule: RateLimitRule): Promise<RateLimitResult> {
    this.calls++;
    if (this.failing !== undefined) return Promise.reject(this.failing);
    return this.inner.take(key, cost, rule);
  }
  peek(key: string, rule: RateLimitRule): Promise<RateLimitResult> {
    this.calls++;
    if (this.failing !== undefined) return Promise.reject(this.failing);
    return this.inner.peek(key, rule);
  }
  reset(key: string, rule: RateLimitRule): Promise<void> {
    if (this.failing !== undefined) return Promise.reject(this.failing);
    return this.inner.reset(key, rule);
  }
}

function setup(options: Partial<RateLimiterOptions> = {}) {
  const clock = new FakeClock();
  const store = new FlakyStore(clock);
  const limiter = rateLimiter({ limit: 10, periodMs: 1_000, store, clock, ...options });
  const rejected: RateLimitRejectedEvent[] = [];
  const storeErrors: RateLimitStoreErrorEvent[] = [];
  limiter.onRejected((e) => rejected.push(e));
  limiter.onStoreError((e) => storeErrors.push(e));
  return { clock, store, limiter, rejected, storeErrors };
}

describe('remote store: blocked keys', () => {
  it('a refusal answered from local memory is an onRejected event too, with the remembered numbers', async () => {
    const { clock, store, limiter, rejected } = setup({ limit: 2 });
    await limiter.take('k', 2);
    await limiter.take('k');
    const calls = store.calls;
    await clock.advance(100);
    expect(await limiter.take('k')).toEqual({
      allowed: false,
      remaining: 0,
      retryAfterMs: 400,
      resetMs: 900,
      limit: 2,
    });
    expect(store.calls).toBe(calls); // answered locally
    expect(rejected).toEqual([
      { key: 'k', cost: 1, retryAfterMs: 500, remaining: 0 },
      { key: 'k', cost: 1, retryAfterMs: 400, remaining: 0 },
    ]);
  });

  it('a store that answers take with a plain result (no promise) is used as it is', async () => {
    const clock = new FakeClock();
    const inner = memoryRateLimitStore({ clock });
    const store = {
      take: (key: string, cost: number, rule: RateLimitRule) => inner.takeSync(key, cost, rule),
      peek: (key: string, rule: RateLimitRule) => inner.peek(key, rule),
      reset: (key: string, rule: RateLimitRule) => inner.reset(key, rule),
    } as unknown as RateLimitStore;
    const limiter = rateLimiter({ limit: 1, periodMs: 1_000, store, clock });
    const rejected: unknown[] = [];
    limiter.onRejected((e) => rejected.push(e));
    expect(await limiter.take('k')).toMatchObject({ allowed: true, remaining: 0 });
    expect(await limiter.take('k')).toMatchObject({ allowed: false, retryAfterMs: 1_000 });
    expect(rejected).toHaveLength(1);
  });
});

describe('remote store: failures', () => {
  it('wraps an Error in a StoreUnavailableError naming its message, and tells onStoreError', async () => {
    const { store, limiter, storeErrors } = setup();
    const cause = new Error('connection reset');
    store.failing = cause;
    const error = (await limiter.take('k').catch((e: unknown) => e)) as StoreUnavailableError;
    expect(isStoreUnavailableError(error)).toBe(true);
    expect(error.message).toBe('rate-limit store failed: connection reset');
    expect(error.cause).toBe(cause);
    expect(storeErrors).toEqual([{ key: 'k', error, mode: 'fail-closed' }]);
  });

  it('a rejection with something other than an Error is named as a string', async () => {
    const { store, limiter } = setup();
    store.failing = 'ECONNREFUSED';
    await expect(limiter.take('k')).rejects.toThrow('rate-limit store failed: ECONNREFUSED');
    await expect(limiter.peek('k')).rejects.toThrow('rate-limit store failed: ECONNREFUSED');
    await expect(limiter.reset('k')).rejects.toThrow('rate-limit store failed: ECONNREFUSED');
  });

  it('a failed reset rejects with the StoreUnavailableError whatever the mode', async () => {
    for (const storeFailure of ['fail-open', 'local'] as const) {
      const { store, limiter } = setup({ storeFailure });
      store.failing = new Error('down');
      const error = await limiter.reset('k').catch((e: unknown) => e);
      expect(isStoreUnavailableError(error)).toBe(true);
      expect((error as Error).message).toBe('rate-limit store failed: down');
    }
  });
});

describe('remote store: the local fallback', () => {
  it('a local refusal is an onRejected event, with the fallback numbers', async () => {
    const { store, limiter, rejected } = setup({ limit: 2, storeFailure: 'local', instances: 2 });
    store.failing = new Error('down');
    expect(await limiter.take('k')).toMatchObject({ allowed: true, fallback: 'local', limit: 1 });
    expect(await limiter.take('k')).toEqual({
      allowed: false,
      remaining: 0,
      retryAfterMs: 1_000,
      resetMs: 1_000,
      limit: 1,
      fallback: 'local',
    });
    expect(rejected).toEqual([{ key: 'k', cost: 1, retryAfterMs: 1_000, remaining: 0 }]);
  });

  it('a cost above the local share, refused while the store is down, is an onRejected event', async () => {
    const { store, limiter, rejected } = setup({ storeFailure: 'local', instances: 4 });
    store.failing = new Error('down');
    expect(await limiter.take('k', 3)).toEqual({
      allowed: false,
      remaining: 2,
      retryAfterMs: 4_000,
      resetMs: 0,
      limit: 2,
      fallback: 'local',
    });
    expect(rejected).toEqual([{ key: 'k', cost: 3, retryAfterMs: 4_000, remaining: 2 }]);
  });

  it('a peek while the store is down answers from the local fallback and takes nothing', async () => {
    const { store, limiter, storeErrors } = setup({ storeFailure: 'local', instances: 2 });
    await limiter.take('k', 2); // the local share (burst 5) remembers these 2
    store.failing = new Error('down');
    for (let i = 0; i < 3; i++) {
      expect(await limiter.peek('k')).toEqual({
        allowed: true,
        remaining: 3,
        retryAfterMs: 0,
        resetMs: 400,
        limit: 5,
        fallback: 'local',
      });
    }
    expect(storeErrors.map((e) => e.mode)).toEqual(['local', 'local', 'local']);
    expect((await limiter.take('k', 3)).allowed).toBe(true);
  });

  it('a take of exactly the local share while the store works keeps the fallback warm', async () => {
    const { store, limiter } = setup({ storeFailure: 'local', instances: 2 });
    expect(await limiter.take('k', 5)).toMatchObject({ allowed: true, remaining: 5 });
    store.failing = new Error('down');
    expect(await limiter.take('k')).toMatchObject({ allowed: false, fallback: 'local', retryAfterMs: 200 });
  });

  it('a store that throws synchronously is decided locally like one that rejects: takes consume the local share', async () => {
    const clock = new FakeClock();
    const broken: RateLimitStore = {
      take: () => {
        throw new Error('sync boom');
      },
      peek: () => {
        throw new Error('sync boom');
      },
      reset: () => Promise.resolve(),
    };
    const limiter = rateLimiter({ limit: 2, periodMs: 1_000, store: broken, clock, storeFailure: 'local' });
    expect(await limiter.take('k')).toMatchObject({ allowed: true, remaining: 1, fallback: 'local' });
    expect(await limiter.peek('k')).toMatchObject({ allowed: true, remaining: 1, fallback: 'local' });
    expect(await limiter.take('k')).toMatchObject({ allowed: true, remaining: 0, fallback: 'local' });
    expect(await limiter.take('k')).toMatchObject({ allowed: false, fallback: 'local' });
  });

  it('a take above the local share, admitted by the store, displaces no key the fallback remembers', async () => {
    const { store, limiter } = setup({ storeFailure: 'local', instances: 4, maxKeys: 1 });
    await limiter.take('a', 2); // the whole local share (burst 2) of key a
    expect(await limiter.take('b', 3)).toMatchObject({ allowed: true }); // more than the local share
    store.failing = new Error('down');
    expect(await limiter.take('a')).toMatchObject({ allowed: false, fallback: 'local' });
  });

  it('reset forgets the key in the local fallback too', async () => {
    const { store, limiter } = setup({ storeFailure: 'local', instances: 2 });
    await limiter.take('k', 5);
    await limiter.reset('k');
    store.failing = new Error('down');
    expect(await limiter.take('k', 5)).toMatchObject({ allowed: true, fallback: 'local', remaining: 0 });
  });

  it('with one instance (the default) the fallback has the whole rule', async () => {
    const { store, limiter } = setup({ storeFailure: 'local' });
    store.failing = new Error('down');
    expect(await limiter.take('k', 10)).toMatchObject({ allowed: true, fallback: 'local', limit: 10 });
    expect(await limiter.take('k')).toMatchObject({ allowed: false, retryAfterMs: 100 });
  });

  it('more instances than the burst still leave each process one unit', async () => {
    const { store, limiter } = setup({ limit: 3, storeFailure: 'local', instances: 5 });
    store.failing = new Error('down');
    expect(await limiter.take('k')).toMatchObject({ allowed: true, fallback: 'local', limit: 1 });
    // 3 per second over 5 processes: one unit every 5/3 s.
    expect(await limiter.take('k')).toMatchObject({ allowed: false, retryAfterMs: 1_667 });
  });

  it('more instances than the sliding window limit still leave each process one unit per window', async () => {
    const { store, limiter } = setup({
      algorithm: 'sliding-window',
      limit: 3,
      storeFailure: 'local',
      instances: 5,
    });
    store.failing = new Error('down');
    expect(await limiter.take('k')).toMatchObject({ allowed: true, fallback: 'local', limit: 1 });
    expect(await limiter.take('k')).toMatchObject({ allowed: false, fallback: 'local' });
  });
});
