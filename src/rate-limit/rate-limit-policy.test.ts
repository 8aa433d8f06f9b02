import { describe, expect, it } from 'vitest';
import { isStoreUnavailableError, isTimeoutError } from '../core/errors.js';
import { pipeline } from '../core/pipeline.js';
import { retry } from '../retry/retry.js';
import { FakeClock } from '../testing/fake-clock.js';
import { timeout } from '../timeout/timeout.js';
import { isRateLimitedError, type RateLimitedError } from './errors.js';
import { rateLimiter } from './rate-limiter.js';
import type { RateLimitStore } from './store.js';

describe('limiter.policy', () => {
  it('is named after a named limiter (its events, its telemetry), unless named itself', async () => {
    const clock = new FakeClock();
    const named = rateLimiter({ name: 'per-user', limit: 1, periodMs: 60_000, clock });
    const anonymous = rateLimiter({ limit: 1, periodMs: 60_000, clock });
    expect(named.policy('k').name).toBe('per-user');
    expect(named.policy('k', { name: 'checkout' }).name).toBe('checkout');
    expect(anonymous.policy('k').name).toBe('rate-limit');
    const refusals: string[] = [];
    const policy = named.policy('k', { onRejected: (event) => refusals.push(event.policy) });
    await policy.execute(() => 'ok');
    await policy.execute(() => 'ok').catch(() => {});
    expect(refusals).toEqual(['per-user']);
  });

  it('runs the operation when allowed and fails with RateLimitedError without running it when refused', async () => {
    const clock = new FakeClock();
    const policy = rateLimiter({ limit: 2, periodMs: 1_000, clock }).policy('api');
    let runs = 0;
    const op = () => ++runs;
    expect(await policy.execute(op)).toBe(1);
    expect(await policy.execute(op)).toBe(2);
    const error = (await policy.execute(op).catch((e: unknown) => e)) as RateLimitedError;
    expect(isRateLimitedError(error)).toBe(true);
    expect(error).toMatchObject({
      kind: 'rate_limited',
      code: 'ERR_RATE_LIMITED',
      retryAfterMs: 500,
      key: 'api',
    });
    expect(runs).toBe(2);
  });

  it('takes `cost` units per call', async () => {
    const limiter = rateLimiter({ limit: 10, periodMs: 1_000, clock: new FakeClock() });
    const policy = limiter.policy('bulk', { cost: 4 });
    await policy.execute(() => 1);
    await policy.execute(() => 1);
    await expect(policy.execute(() => 1)).rejects.toSatisfy(isRateLimitedError);
    expect((await limiter.peek('bulk')).remaining).toBe(2);
  });

  it('with wait: true, waits for quota and then runs', async () => {
    const clock = new FakeClock();
    const policy = rateLimiter({ limit: 1, periodMs: 1_000, clock }).policy('api', { wait: true });
    await policy.execute(() => 'first');
    let done = false;
    const second = policy
      .execute(() => 'second')
      .then((v) => {
        done = true;
        return v;
      });
    await clock.advance(999);
    expect(done).toBe(false);
    await clock.advance(1);
    expect(await second).toBe('second');
  });

  it('with wait: true, the call deadline bounds the wait and the call signal aborts it', async () => {
    const clock = new FakeClock();
    const limiter = rateLimiter({ limit: 1, periodMs: 1_000, clock });
    const waiting = limiter.policy('api', { wait: true });
    await waiting.execute(() => 0);
    // A deadline sooner than the quota: refused at once, not slept on.
    await expect(waiting.execute(() => 1, { deadline: clock.now() + 500 })).rejects.toSatisfy(
      isRateLimitedError,
    );
    expect(clock.now()).toBe(0);

    const controller = new AbortController();
    const aborted = waiting.execute(() => 2, { signal: controller.signal }).catch((e: unknown) => e);
    await clock.advance(10);
    controller.abort(new Error('stop'));
    expect(((await aborted) as Error).message).toBe('stop');
    expect(clock.pendingTimers).toBe(0);
  });

  it('composes: an outer timeout bounds the wait; retry retries a rate-limited call after retryAfterMs', async () => {
    const clock = new FakeClock();
    const limiter = rateLimiter({ limit: 1, periodMs: 1_000, clock });
    limiter.takeSync('api');
    const timed = pipeline(timeout(200, { clock }), limiter.policy('api', { wait: true, maxWaitMs: 5_000 }));
    // The quota comes back in 1 000 ms, after the timeout's deadline: refused at once, no sleep.
    const error = await timed.execute(() => 'x').catch((e: unknown) => e);
    expect(isRateLimitedError(error)).toBe(true);
    expect(isTimeoutError(error)).toBe(false);
    expect(clock.now()).toBe(0);
    await clock.advance(500);
    // With the quota 500 ms away and a 800 ms timeout, the wait fits and the call runs.
    const fits = pipeline(timeout(800, { clock }), limiter.policy('api', { wait: true })).execute(
      () => 'ran',
    );
    await clock.advance(500);
    expect(await fits).toBe('ran');

    const retried = pipeline(retry({ maxAttempts: 2, clock, backoff: () => 0 }), limiter.policy('api'));
    let runs = 0;
    const call = retried.execute(() => ++runs);
    await clock.advance(999);
    expect(runs).toBe(0);
    await clock.advance(1);
    expect(await call).toBe(1);
  });

  it('a refusal carries the decision: limit, remaining, and a message with retryAfterMs but not the key', async () => {
    const limiter = rateLimiter({ limit: 4, periodMs: 1_000, burst: 6, clock: new FakeClock() });
    limiter.takeSync('user:7', 5);
    const error = (await limiter
      .policy('user:7', { cost: 3 })
      .execute(() => 'ran')
      .catch((e: unknown) => e)) as RateLimitedError;
    expect(error).toMatchObject({ key: 'user:7', limit: 6, remaining: 1, retryAfterMs: 500 });
    expect(error.message).toBe('rate limit exceeded; retry in 500 ms');
  });

  it('with wait: true, maxWaitMs still bounds the wait when the call deadline is later', async () => {
    const clock = new FakeClock();
    const limiter = rateLimiter({ limit: 1, periodMs: 1_000, clock });
    limiter.takeSync('api');
    const policy = limiter.policy('api', { wait: true, maxWaitMs: 100 });
    const error = await policy
      .execute(() => 'ran', { deadline: clock.now() + 10_000 })
      .catch((e: unknown) => e);
    expect(isRateLimitedError(error)).toBe(true);
    expect(clock.now()).toBe(0);
  });

  it('with wait: true, a store failure fails the call with the StoreUnavailableError, not a refusal', async () => {
    const store: RateLimitStore = {
      take: () => Promise.reject(new Error('down')),
      peek: () => Promise.reject(new Error('down')),
      reset: () => Promise.resolve(),
    };
    const limiter = rateLimiter({ limit: 1, periodMs: 1_000, store, clock: new FakeClock() });
    let runs = 0;
    const policy = limiter.policy('api', { wait: true });
    const refusals: unknown[] = [];
    policy.onRejected((e) => refusals.push(e));
    const error = await policy.execute(() => ++runs).catch((e: unknown) => e);
    expect(isStoreUnavailableError(error)).toBe(true);
    expect(isRateLimitedError(error)).toBe(false);
    expect(runs).toBe(0);
    expect(refusals).toEqual([]); // a failure, not a refusal
  });

  it('with wait: true, an abort while waiting is not a refusal', async () => {
    const clock = new FakeClock();
    const limiter = rateLimiter({ limit: 1, periodMs: 1_000, clock });
    limiter.takeSync('api');
    const policy = limiter.policy('api', { wait: true });
    const refusals: unknown[] = [];
    policy.onRejected((e) => refusals.push(e));
    const controller = new AbortController();
    const call = policy.execute(() => 'ran', { signal: controller.signal }).catch((e: unknown) => e);
    await clock.advance(10);
    controller.abort(new Error('stop'));
    expect(((await call) as Error).message).toBe('stop');
    expect(refusals).toEqual([]);
  });

  it('with wait: true, the call deadline is measured from now on the clock', async () => {
    const clock = new FakeClock(50_000);
    const limiter = rateLimiter({ limit: 1, periodMs: 1_000, clock });
    limiter.takeSync('api');
    const policy = limiter.policy('api', { wait: true });
    // The quota comes back in 1 000 ms: a deadline 500 ms from now refuses at once.
    const error = await policy.execute(() => 'ran', { deadline: clock.now() + 500 }).catch((e: unknown) => e);
    expect(isRateLimitedError(error)).toBe(true);
    expect(clock.now()).toBe(50_000);
    const fits = policy.execute(() => 'ran', { deadline: clock.now() + 1_000 });
    await clock.advance(1_000);
    expect(await fits).toBe('ran');
  });

  it('rejects bad policy options with a TypeError', () => {
    const limiter = rateLimiter({ limit: 1, periodMs: 1_000 });
    expect(() => limiter.policy('k', { wait: 'yes' as never })).toThrow(/"wait" to be a boolean/);
    expect(() => limiter.policy('k', { maxWaitMs: -1 })).toThrow(/"maxWaitMs"/);
    expect(() => limiter.policy('k', 3 as never)).toThrow(/"policy options"/);
  });
});
