/**
 * The Redis rate-limit store when Redis misbehaves, through our fault proxy: paused (a black hole),
 * connections cut and refused (Redis down), and SCRIPT FLUSH mid-run. Each `storeFailure` mode must
 * behave as documented within the store deadline, and a store failure must never look like a limit
 * hit.
 *
 * Real time against a real server: only lower bounds and facts are asserted ("answered while the
 * proxy was still paused", "the deadline's own error"), never an upper bound on time.
 */
import { performance } from 'node:perf_hooks';
import { afterEach, beforeEach, expect, it } from 'vitest';
import {
  isStoreUnavailableError,
  isTimeoutError,
  type StoreUnavailableError,
} from '../../src/core/errors.js';
import { isRateLimitedError } from '../../src/rate-limit/errors.js';
import type { StoreFailureMode } from '../../src/rate-limit/options.js';
import { rateLimiter } from '../../src/rate-limit/rate-limiter.js';
import { redisStores } from '../../src/stores/redis/index.js';
import { type FaultProxy, startFaultProxy } from '../support/fault-proxy.js';
import { startPrivateRedis } from '../support/private-redis.js';
import { useRedis } from '../support/services.js';

const redis = await useRedis();
// SCRIPT FLUSH runs against a redis-server of this file's own, on a free port.
const own = await startPrivateRedis();
const TIMEOUT_MS = 100;

redis.describe('Redis rate-limit store under faults', () => {
  let proxy: FaultProxy;

  beforeEach(async () => {
    proxy = await startFaultProxy({ target: redis.target });
  });
  afterEach(async () => {
    await proxy.close();
  });

  function limiterThroughProxy(mode: StoreFailureMode, instances = 1) {
    // ioredis defaults: offline queue on, 20 retries per request. The store deadline must cut that.
    const client = redis.client({ url: proxy.url(redis.url) });
    const stores = redisStores(client, { prefix: redis.prefix, timeoutMs: TIMEOUT_MS });
    const limiter = rateLimiter({
      limit: 10,
      periodMs: 60_000,
      store: stores.rateLimit,
      storeFailure: mode,
      instances,
    });
    const events: { mode: string; error: StoreUnavailableError }[] = [];
    limiter.onStoreError((e) => events.push(e));
    return { client, stores, limiter, events };
  }

  /** Runs `call`, returning its outcome and how long it took (printed, lower bounds only). */
  async function timed<T>(call: () => Promise<T>): Promise<{ value?: T; error?: unknown; ms: number }> {
    const start = performance.now();
    try {
      const value = await call();
      return { value, ms: performance.now() - start };
    } catch (error) {
      return { error, ms: performance.now() - start };
    }
  }

  it('paused Redis, fail-closed: StoreUnavailableError from our deadline while still paused, not a 429', async () => {
    const { limiter, events } = limiterThroughProxy('fail-closed');
    expect((await limiter.take('k')).allowed).toBe(true);
    proxy.pause();
    const outcome = await timed(() => limiter.take('k'));
    console.log(
      `paused, fail-closed: rejected after ${outcome.ms.toFixed(1)} ms (deadline ${TIMEOUT_MS} ms)`,
    );
    expect(proxy.connections).toBe(1); // still paused, never resumed: the deadline answered
    expect(isStoreUnavailableError(outcome.error)).toBe(true);
    expect(isRateLimitedError(outcome.error)).toBe(false);
    expect((outcome.error as Error).message).toBe(`Redis did not answer within ${TIMEOUT_MS} ms`);
    expect(isTimeoutError((outcome.error as Error).cause)).toBe(true);
    expect(outcome.ms).toBeGreaterThanOrEqual(TIMEOUT_MS - 1);
    expect(events.map((e) => e.mode)).toEqual(['fail-closed']);
    proxy.resume();
    expect(await limiter.take('k2')).not.toHaveProperty('fallback');
  });

  it('paused Redis, fail-open: admitted with fallback "fail-open" at the deadline', async () => {
    const { limiter, events } = limiterThroughProxy('fail-open');
    await limiter.take('warm-up');
    proxy.pause();
    const outcome = await timed(() => limiter.take('k'));
    console.log(`paused, fail-open: admitted after ${outcome.ms.toFixed(1)} ms`);
    expect(outcome.value).toMatchObject({ allowed: true, fallback: 'fail-open' });
    expect(outcome.ms).toBeGreaterThanOrEqual(TIMEOUT_MS - 1);
    expect(events).toHaveLength(1);
    proxy.resume();
  });

  it('paused Redis, local: decided in memory at limit / instances', async () => {
    const { limiter } = limiterThroughProxy('local', 5);
    await limiter.take('warm-up');
    proxy.pause();
    const decisions = await Promise.all(Array.from({ length: 4 }, () => limiter.take('k')));
    // The local share of 10 per minute over 5 instances is a burst of 2.
    expect(decisions.map((d) => d.allowed)).toEqual([true, true, false, false]);
    for (const d of decisions) expect(d).toMatchObject({ fallback: 'local', limit: 2 });
    proxy.resume();
  });

  it('a command sent before the pause and executed after it only consumes quota: nothing is admitted twice', async () => {
    const { limiter, stores } = limiterThroughProxy('fail-closed');
    const peekBefore = await stores.rateLimit.peek('k', limiter.rule);
    expect(peekBefore.remaining).toBe(10);
    proxy.pause('downstream'); // Redis executes, its reply is held
    const outcome = await timed(() => limiter.take('k'));
    expect(isStoreUnavailableError(outcome.error)).toBe(true);
    proxy.resume();
    // The late reply reached ioredis and was dropped; Redis did take the unit: the limiter errs on
    // the side of admitting less, never more.
    await expect.poll(async () => (await limiter.peek('k')).remaining).toBe(9);
    expect(await limiter.take('k')).toMatchObject({ allowed: true, remaining: 8 });
  });

  it('Redis down (connections cut and refused): each mode within the deadline, then recovery', async () => {
    const closed = limiterThroughProxy('fail-closed');
    const open = limiterThroughProxy('fail-open');
    const local = limiterThroughProxy('local', 2);
    for (const l of [closed, open, local]) await l.limiter.take('warm-up');

    proxy.refuse(true);
    proxy.cut({ reset: true });
    const results = await Promise.all([
      timed(() => closed.limiter.take('k')),
      timed(() => open.limiter.take('k')),
      timed(() => local.limiter.take('k')),
    ]);
    console.log(
      `Redis down: fail-closed ${results[0].ms.toFixed(1)} ms, fail-open ${results[1].ms.toFixed(1)} ms, local ${results[2].ms.toFixed(1)} ms`,
    );
    expect(isStoreUnavailableError(results[0].error)).toBe(true);
    expect(results[1].value).toMatchObject({ allowed: true, fallback: 'fail-open' });
    expect(results[2].value).toMatchObject({ allowed: true, fallback: 'local', limit: 5 });

    // While the client is reconnecting, calls fail at once instead of waiting in ioredis's offline
    // queue (and running minutes later).
    await expect.poll(() => closed.client.status).toBe('reconnecting');
    const fast = await timed(() => closed.limiter.take('k'));
    expect((fast.error as Error).message).toBe('Redis connection is reconnecting');

    proxy.refuse(false);
    await expect.poll(() => closed.client.status, { timeout: 10_000 }).toBe('ready');
    // Recovered: every mode decides from Redis again. Polled, because on a loaded machine one call
    // may still meet the 100 ms deadline, which is the deadline doing its job.
    const decidedBy = (l: typeof closed) => () =>
      l.limiter.take('k').then(
        (result) => result.fallback ?? 'redis',
        () => 'failed',
      );
    for (const l of [closed, open, local]) {
      await expect.poll(decidedBy(l), { timeout: 10_000 }).toBe('redis');
    }
  });

  it('SCRIPT FLUSH mid-run: the next call gets NOSCRIPT, reloads the script and succeeds', async () => {
    const client = own.client();
    const limiter = rateLimiter({
      limit: 5,
      periodMs: 60_000,
      store: redisStores(client, { prefix: redis.prefix }).rateLimit,
    });
    const remaining: number[] = [];
    for (let i = 0; i < 2; i++) remaining.push((await limiter.take('k')).remaining);
    await own.client().script('FLUSH'); // our own redis-server: the shared one is never flushed
    for (let i = 0; i < 3; i++) remaining.push((await limiter.take('k')).remaining);
    expect(remaining).toEqual([4, 3, 2, 1, 0]);
    expect((await limiter.take('k')).allowed).toBe(false);
  });

  it('a store error is never cached as a refusal: the next call after recovery asks Redis', async () => {
    const { limiter } = limiterThroughProxy('fail-closed');
    await limiter.take('k');
    proxy.pause();
    await expect(limiter.take('k')).rejects.toSatisfy(isStoreUnavailableError);
    proxy.resume();
    // The held command runs once resumed and consumes its unit (10 - 1 - 1 = 8 left)...
    await expect.poll(async () => (await limiter.peek('k')).remaining).toBe(8);
    // ...and the next decision comes from Redis, not from a remembered failure.
    expect(await limiter.take('k')).toEqual({
      allowed: true,
      remaining: 7,
      retryAfterMs: 0,
      resetMs: expect.any(Number),
      limit: 10,
    });
  });
});
