import { describe, expect, expectTypeOf, it, vi } from 'vitest';
import { classify } from '../core/classify.js';
import { isStoreUnavailableError, StoreUnavailableError } from '../core/errors.js';
import { setListenerErrorHandler } from '../core/events.js';
import { toHttpStatus } from '../core/http-status.js';
import { FakeClock } from '../testing/fake-clock.js';
import { isRateLimitedError, RateLimitedError } from './errors.js';
import { memoryRateLimitStore } from './memory-store.js';
import { rateLimiter } from './rate-limiter.js';
import type { RateLimitResult, RateLimitRule, RateLimitStore } from './store.js';

/**
 * An asynchronous store for unit tests: the real in-memory store behind a promise, with a switch
 * that makes it fail like a remote store does (no Redis involved; Redis runs for real in test/).
 */
class AsyncStore implements RateLimitStore {
  readonly inner: ReturnType<typeof memoryRateLimitStore>;
  calls = 0;
  failing: Error | undefined;
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

describe('rateLimiter options', () => {
  const base = { limit: 10, periodMs: 1_000 };
  const noop = () => undefined;
  it.each([
    [{ periodMs: 1_000 }, /"limit".*undefined/],
    [{ ...base, limit: 0 }, /"limit" to be a positive integer, got 0/],
    [{ ...base, limit: -3 }, /"limit".*-3/],
    [{ ...base, limit: Number.NaN }, /"limit".*NaN/],
    [{ ...base, limit: 1.5 }, /"limit".*1.5/],
    [{ ...base, limit: Infinity }, /"limit".*Infinity/],
    [{ ...base, limit: '10' }, /"limit".*"10"/],
    [{ limit: 10 }, /"periodMs".*undefined/],
    [{ ...base, periodMs: 0 }, /"periodMs" to be a positive finite number, got 0/],
    [{ ...base, periodMs: -1 }, /"periodMs".*-1/],
    [{ ...base, periodMs: Number.NaN }, /"periodMs".*NaN/],
    [{ ...base, periodMs: Infinity }, /"periodMs".*Infinity/],
    [{ ...base, burst: 0 }, /"burst" to be a positive integer, got 0/],
    [{ ...base, burst: -1 }, /"burst".*-1/],
    [{ ...base, burst: Number.NaN }, /"burst".*NaN/],
    [{ ...base, burst: 2.5 }, /"burst".*2.5/],
    [{ ...base, algorithm: 'sliding-window', burst: 20 }, /"burst" to be omitted or equal to "limit" \(10\)/],
    [{ ...base, algorithm: 'sliding-window', buckets: 0 }, /"buckets".*0/],
    [{ ...base, algorithm: 'sliding-window', buckets: 1_001 }, /"buckets" to be an integer from 1 to 1000/],
    [{ ...base, algorithm: 'sliding-window', buckets: Number.NaN }, /"buckets".*NaN/],
    [{ ...base, buckets: 10 }, /"buckets" to be omitted for the gcra algorithm/],
    [
      { ...base, algorithm: 'leaky' },
      /"algorithm" to be one of "token-bucket", "gcra", "sliding-window", got "leaky"/,
    ],
    [{ ...base, name: '' }, /"name".*""/],
    [{ ...base, name: 'has space' }, /"name"/],
    [{ ...base, name: 'x'.repeat(65) }, /"name"/],
    [{ ...base, name: 42 }, /"name".*42/],
    [{ ...base, maxKeys: 0 }, /"maxKeys".*0/],
    [{ ...base, maxKeys: Number.NaN }, /"maxKeys".*NaN/],
    [{ ...base, instances: 0 }, /"instances".*0/],
    [{ ...base, instances: 1.5 }, /"instances".*1.5/],
    [{ ...base, storeFailure: 'retry' }, /"storeFailure" to be one of "fail-open", "fail-closed", "local"/],
    [{ ...base, clock: { now: () => 0 } }, /"clock"/],
    [{ ...base, store: {} }, /"store" to be a RateLimitStore/],
    [{ ...base, store: null }, /"store"/],
    [{ ...base, store: { peek: noop, reset: noop } }, /"store" to be a RateLimitStore \(take, peek, reset\)/],
    [{ ...base, store: { take: noop, reset: noop } }, /"store" to be a RateLimitStore \(take, peek, reset\)/],
    [{ ...base, store: { take: noop, peek: noop } }, /"store" to be a RateLimitStore \(take, peek, reset\)/],
    [
      { ...base, store: Object.assign(() => undefined, { take: noop, peek: noop, reset: noop }) },
      /"store" to be a RateLimitStore \(take, peek, reset\), got /,
    ],
    [{ limit: 1, periodMs: 1e15, burst: 100 }, /"burst" × "periodMs" to be at most 2\^53/],
  ])('rejects %o with a TypeError naming the option', (options, message) => {
    expect(() => rateLimiter(options as never)).toThrow(TypeError);
    expect(() => rateLimiter(options as never)).toThrow(message);
  });

  it('rejects a missing or non-object options argument', () => {
    expect(() => rateLimiter(undefined as never)).toThrow(/"limit"/);
    expect(() => rateLimiter(7 as never)).toThrow(/"rateLimiter options" to be an options object/);
  });

  it('defaults: gcra, burst = limit, name "default", 10 sub-windows for the sliding window', () => {
    expect(rateLimiter(base).rule).toEqual({
      name: 'default',
      algorithm: 'gcra',
      limit: 10,
      periodMs: 1_000,
      burst: 10,
      buckets: 1,
    });
    expect(rateLimiter({ ...base, algorithm: 'sliding-window' }).rule.buckets).toBe(10);
  });
});

describe('take and takeSync (in-memory store)', () => {
  it('takeSync answers synchronously with a plain result', () => {
    const limiter = rateLimiter({ limit: 2, periodMs: 1_000, clock: new FakeClock() });
    const result = limiter.takeSync('k');
    expect(result).not.toBeInstanceOf(Promise);
    expect(result).toEqual({ allowed: true, remaining: 1, retryAfterMs: 0, resetMs: 500, limit: 2 });
    limiter.takeSync('k');
    expect(limiter.takeSync('k')).toEqual({
      allowed: false,
      remaining: 0,
      retryAfterMs: 500,
      resetMs: 1_000,
      limit: 2,
    });
  });

  it('a global limiter is one fixed key', async () => {
    const clock = new FakeClock();
    const global = rateLimiter({ limit: 3, periodMs: 1_000, clock });
    const admitted = Array.from({ length: 10 }, () => global.takeSync('global').allowed).filter(Boolean);
    expect(admitted).toHaveLength(3);
    await clock.advance(333);
    expect((await global.take('global')).allowed).toBe(false);
    await clock.advance(1);
    expect(global.takeSync('global').allowed).toBe(true);
  });

  it('a cost above 1 is taken at once; a cost equal to burst is allowed on a full key', async () => {
    const limiter = rateLimiter({ limit: 10, periodMs: 1_000, clock: new FakeClock() });
    expect(await limiter.take('k', 10)).toMatchObject({ allowed: true, remaining: 0 });
    expect(limiter.takeSync('k', 3)).toMatchObject({ allowed: false, retryAfterMs: 300 });
  });

  it.each([
    ['', /"key" to be a non-empty string, got ""/],
    [undefined, /"key".*undefined/],
    [42, /"key".*42/],
  ])('rejects key %o with a TypeError', async (key, message) => {
    const limiter = rateLimiter({ limit: 1, periodMs: 1_000 });
    expect(() => limiter.takeSync(key as never)).toThrow(message);
    await expect(limiter.take(key as never)).rejects.toThrow(message);
    await expect(limiter.peek(key as never)).rejects.toThrow(message);
    await expect(limiter.reset(key as never)).rejects.toThrow(message);
    expect(() => limiter.policy(key as never)).toThrow(message);
  });

  it.each([
    [0, /"cost" to be a positive integer, got 0/],
    [-2, /"cost".*-2/],
    [Number.NaN, /"cost".*NaN/],
    [1.5, /"cost".*1.5/],
    ['2', /"cost".*"2"/],
    [11, /"cost" to be at most "burst" \(10\): a larger cost could never be allowed, got 11/],
  ])('rejects cost %o with a TypeError, never an eternal wait', async (cost, message) => {
    const limiter = rateLimiter({ limit: 10, periodMs: 1_000 });
    expect(() => limiter.takeSync('k', cost as never)).toThrow(message);
    await expect(limiter.take('k', cost as never)).rejects.toThrow(message);
    await expect(limiter.wait('k', { cost: cost as never })).rejects.toThrow(message);
    expect(() => limiter.policy('k', { cost: cost as never })).toThrow(message);
  });

  it('emits onRejected for refusals only; the disposer unsubscribes; a throwing listener breaks nothing', () => {
    const limiter = rateLimiter({ limit: 1, periodMs: 1_000, clock: new FakeClock() });
    const events: unknown[] = [];
    const dispose = limiter.onRejected((e) => events.push(e));
    const previous = setListenerErrorHandler(() => {});
    limiter.onRejected(() => {
      throw new Error('listener bug');
    });
    try {
      limiter.takeSync('k');
      expect(limiter.takeSync('k').allowed).toBe(false);
      expect(events).toEqual([{ key: 'k', cost: 1, retryAfterMs: 1_000, remaining: 0 }]);
      dispose();
      limiter.takeSync('k');
      expect(events).toHaveLength(1);
    } finally {
      setListenerErrorHandler(previous);
    }
  });

  it('peek reports without taking; reset restores full capacity', async () => {
    const limiter = rateLimiter({ limit: 4, periodMs: 1_000, clock: new FakeClock() });
    limiter.takeSync('k', 3);
    expect(await limiter.peek('k')).toMatchObject({ allowed: true, remaining: 1 });
    expect(await limiter.peek('k')).toMatchObject({ remaining: 1 });
    await limiter.reset('k');
    expect(limiter.takeSync('k', 4).allowed).toBe(true);
  });

  it('per-key state is bounded by maxKeys; an evicted key restarts at full capacity', () => {
    const limiter = rateLimiter({ limit: 1, periodMs: 60_000, maxKeys: 2, clock: new FakeClock() });
    limiter.takeSync('a');
    limiter.takeSync('b');
    limiter.takeSync('c'); // evicts a
    expect(limiter.takeSync('b').allowed).toBe(false);
    expect(limiter.takeSync('a').allowed).toBe(true);
  });

  it('starts no timer and no AbortController on take or takeSync', async () => {
    const clock = new FakeClock();
    const spy = vi.spyOn(globalThis, 'AbortController');
    try {
      const limiter = rateLimiter({ limit: 1, periodMs: 1_000, clock });
      for (let i = 0; i < 100; i++) limiter.takeSync(`k${i % 7}`);
      for (let i = 0; i < 100; i++) await limiter.take(`k${i % 7}`);
      expect(clock.pendingTimers).toBe(0);
      expect(spy).not.toHaveBeenCalled();
    } finally {
      spy.mockRestore();
    }
  });
});

describe('take with an asynchronous store', () => {
  function setup(options: Record<string, unknown> = {}) {
    const clock = new FakeClock();
    const store = new AsyncStore(clock);
    const limiter = rateLimiter({ limit: 2, periodMs: 1_000, store, clock, ...options });
    return { clock, store, limiter };
  }

  it('returns a promise; bad input rejects instead of throwing', async () => {
    const { limiter } = setup();
    const pending = limiter.take('k');
    expect(pending).toBeInstanceOf(Promise);
    expect(await pending).toMatchObject({ allowed: true, remaining: 1 });
    await expect(limiter.take('')).rejects.toThrow(TypeError);
    await expect(limiter.take('k', 0)).rejects.toThrow(TypeError);
  });

  it('remembers a refused key until retryAfterMs passes: a hammering client costs no store calls', async () => {
    const { clock, store, limiter } = setup();
    await limiter.take('k', 2);
    const refused = await limiter.take('k');
    expect(refused).toMatchObject({ allowed: false, retryAfterMs: 500 });
    const callsAtRefusal = store.calls;
    for (let i = 0; i < 100; i++) expect((await limiter.take('k')).allowed).toBe(false);
    expect(store.calls).toBe(callsAtRefusal);
    await clock.advance(200);
    expect(await limiter.take('k')).toMatchObject({ allowed: false, retryAfterMs: 300 });
    expect(store.calls).toBe(callsAtRefusal);
    // Another cost or another key still asks the store.
    await limiter.take('k', 2);
    await limiter.take('other');
    expect(store.calls).toBe(callsAtRefusal + 2);
    await clock.advance(300);
    expect(await limiter.take('k')).toMatchObject({ allowed: true });
    expect(store.calls).toBe(callsAtRefusal + 3);
  });

  it('reset forgets the remembered refusal too', async () => {
    const { limiter } = setup();
    await limiter.take('k', 2);
    await limiter.take('k');
    await limiter.reset('k');
    expect(await limiter.take('k')).toMatchObject({ allowed: true, remaining: 1 });
  });

  it('fail-closed (default): rejects with StoreUnavailableError, never a refusal, and emits onStoreError', async () => {
    const { store, limiter } = setup();
    const events: { mode: string; error: unknown; key: string }[] = [];
    limiter.onStoreError((e) => events.push(e));
    const cause = new Error('connection reset');
    store.failing = cause;
    const error = await limiter.take('k').then(
      () => expect.unreachable('should reject'),
      (e: unknown) => e,
    );
    expect(isStoreUnavailableError(error)).toBe(true);
    expect(isRateLimitedError(error)).toBe(false);
    expect((error as StoreUnavailableError).cause).toBe(cause);
    expect(classify(error)).toBe('unavailable');
    expect(events).toHaveLength(1);
    expect(events[0]).toMatchObject({ key: 'k', mode: 'fail-closed' });
    expect((events[0]!.error as StoreUnavailableError).cause).toBe(cause);
    await expect(limiter.peek('k')).rejects.toSatisfy(isStoreUnavailableError);
    await expect(limiter.reset('k')).rejects.toSatisfy(isStoreUnavailableError);
    await expect(limiter.policy('k').execute(() => 'ran')).rejects.toSatisfy(isStoreUnavailableError);
  });

  it('a StoreUnavailableError from the store is passed on as is', async () => {
    const { store, limiter } = setup();
    const original = new StoreUnavailableError('Redis did not answer within 100 ms');
    store.failing = original;
    await expect(limiter.take('k')).rejects.toBe(original);
  });

  it('fail-open: admits with fallback "fail-open" while the store fails', async () => {
    const { store, limiter } = setup({ storeFailure: 'fail-open' });
    const modes: string[] = [];
    limiter.onStoreError((e) => modes.push(e.mode));
    store.failing = new Error('down');
    for (let i = 0; i < 5; i++) {
      expect(await limiter.take('k')).toEqual({
        allowed: true,
        remaining: 2,
        retryAfterMs: 0,
        resetMs: 0,
        limit: 2,
        fallback: 'fail-open',
      });
    }
    expect(modes).toEqual(['fail-open', 'fail-open', 'fail-open', 'fail-open', 'fail-open']);
    store.failing = undefined;
    expect(await limiter.take('k')).not.toHaveProperty('fallback');
  });

  it('local: decides in memory at limit / instances, warmed by the traffic the store admitted', async () => {
    const { clock, store, limiter } = setup({
      limit: 10,
      periodMs: 1_000,
      storeFailure: 'local',
      instances: 2,
    });
    // While the store works this process takes 4 units of key k: the local share (5) remembers them.
    for (let i = 0; i < 4; i++) expect((await limiter.take('k')).allowed).toBe(true);
    store.failing = new Error('down');
    const during = [];
    for (let i = 0; i < 4; i++) during.push(await limiter.take('k'));
    expect(during.map((r) => r.allowed)).toEqual([true, false, false, false]);
    expect(during[0]).toMatchObject({ fallback: 'local', limit: 5, remaining: 0 });
    expect(during[1]).toMatchObject({ fallback: 'local', allowed: false, retryAfterMs: 200 });
    // A key this process never saw starts with the local share.
    const fresh = [];
    for (let i = 0; i < 6; i++) fresh.push((await limiter.take('new')).allowed);
    expect(fresh).toEqual([true, true, true, true, true, false]);
    await clock.advance(200); // the local rate is 10 / 2 per second: one unit per 200 ms
    expect(await limiter.take('new')).toMatchObject({ allowed: true, fallback: 'local' });
    store.failing = undefined;
    expect(await limiter.take('fresh-again')).not.toHaveProperty('fallback');
  });

  it('local: a cost above the local share is refused while the store is down, not waited on forever', async () => {
    const { store, limiter } = setup({ limit: 10, periodMs: 1_000, storeFailure: 'local', instances: 4 });
    store.failing = new Error('down');
    expect(await limiter.take('k', 3)).toMatchObject({
      allowed: false,
      fallback: 'local',
      retryAfterMs: 4_000,
    });
    expect(await limiter.take('k', 2)).toMatchObject({ allowed: true, fallback: 'local' });
  });

  it('local with the sliding window keeps the period and divides the limit', async () => {
    const { store, limiter } = setup({
      algorithm: 'sliding-window',
      limit: 9,
      periodMs: 1_000,
      storeFailure: 'local',
      instances: 4,
    });
    store.failing = new Error('down');
    const admitted = [];
    for (let i = 0; i < 5; i++) admitted.push((await limiter.take('k')).allowed);
    expect(admitted).toEqual([true, true, false, false, false]);
  });

  it('a store that throws synchronously is a store failure too', async () => {
    const clock = new FakeClock();
    const store: RateLimitStore = {
      take: () => {
        throw new Error('sync boom');
      },
      peek: () => {
        throw new Error('sync boom');
      },
      reset: () => {
        throw new Error('sync boom');
      },
    };
    const limiter = rateLimiter({ limit: 1, periodMs: 1_000, store, clock, storeFailure: 'fail-open' });
    expect(await limiter.take('k')).toMatchObject({ allowed: true, fallback: 'fail-open' });
    expect(await limiter.peek('k')).toMatchObject({ allowed: true, fallback: 'fail-open' });
    await expect(limiter.reset('k')).rejects.toSatisfy(isStoreUnavailableError);
  });
});

describe('RateLimitedError', () => {
  it('has a stable code, kind rate_limited, retryAfterMs, a cross-copy guard and never shows the key', () => {
    const error = new RateLimitedError('203.0.113.7', 1_500, { limit: 10, remaining: 0 });
    expect(error.code).toBe('ERR_RATE_LIMITED');
    expect(error.kind).toBe('rate_limited');
    expect(error.retryAfterMs).toBe(1_500);
    expect(error.key).toBe('203.0.113.7');
    expect(error.message).not.toContain('203.0.113.7');
    expect(error.name).toBe('RateLimitedError');
    expect(error.message).toBe('rate limit exceeded; retry in 1500 ms');
    expect(error.expose).toBe(true); // the message reaches clients (problem+json detail)
    expect(error).toMatchObject({ limit: 10, remaining: 0 });
    const cause = new Error('root');
    const custom = new RateLimitedError('k', 5, { limit: 1, remaining: 0, message: 'slow down', cause });
    expect(custom.message).toBe('slow down');
    expect(custom.cause).toBe(cause);
    expect(isRateLimitedError(error)).toBe(true);
    expect(isRateLimitedError(new Error('ERR_RATE_LIMITED'))).toBe(false);
    expect(classify(error)).toBe('rate_limited');
    expect(toHttpStatus(classify(error))).toBe(429);
  });
});

describe('types', () => {
  it('take is a promise with the in-memory store and with an asynchronous one; takeSync a plain result', () => {
    const memory = rateLimiter({ limit: 1, periodMs: 1_000 });
    expectTypeOf(memory.take).returns.toEqualTypeOf<Promise<RateLimitResult>>();
    expectTypeOf(memory.takeSync).returns.toEqualTypeOf<RateLimitResult>();
    expectTypeOf(memory.reset).returns.toEqualTypeOf<Promise<void>>();
    const store = new AsyncStore(new FakeClock());
    const remote = rateLimiter({ limit: 1, periodMs: 1_000, store });
    expectTypeOf(remote.take).returns.toEqualTypeOf<Promise<RateLimitResult>>();
    expectTypeOf(remote.reset).returns.toEqualTypeOf<Promise<void>>();
    expectTypeOf(remote.wait).returns.toEqualTypeOf<Promise<RateLimitResult>>();
  });
});
