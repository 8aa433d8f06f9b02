/**
 * Quota control and combined limits when Redis misbehaves, through our fault proxy: paused (a
 * black hole) and down (connections cut and refused), and SCRIPT FLUSH on a server of our own.
 * `penalty`, `reward` and `block` fail with `StoreUnavailableError` within the store deadline
 * whatever `storeFailure` says, never as a refusal; `rateLimiter.all()` applies each limiter's mode.
 *
 * Real time against a real server: only lower bounds and facts are asserted, never an upper bound.
 */
import { performance } from 'node:perf_hooks';
import { afterEach, beforeEach, expect, it } from 'vitest';
import { isStoreUnavailableError, isTimeoutError } from '../../src/core/errors.js';
import { isRateLimitedError } from '../../src/rate-limit/errors.js';
import type { StoreFailureMode } from '../../src/rate-limit/options.js';
import { rateLimiter } from '../../src/rate-limit/rate-limiter.js';
import type { RateLimitResult } from '../../src/rate-limit/store.js';
import { redisStores } from '../../src/stores/redis/index.js';
import { type FaultProxy, startFaultProxy } from '../support/fault-proxy.js';
import { startPrivateRedis } from '../support/private-redis.js';
import { useRedis } from '../support/services.js';

const redis = await useRedis();
// SCRIPT FLUSH runs against a redis-server of this file's own, on a free port.
const own = await startPrivateRedis();
const TIMEOUT_MS = 100;

redis.describe('Redis quota control and combined limits under faults', () => {
  let proxy: FaultProxy;

  beforeEach(async () => {
    proxy = await startFaultProxy({ target: redis.target });
  });
  afterEach(async () => {
    await proxy.close();
  });

  function throughProxy(storeFailure: StoreFailureMode) {
    const client = redis.client({ url: proxy.url(redis.url) });
    const store = redisStores(client, { prefix: redis.prefix, timeoutMs: TIMEOUT_MS }).rateLimit;
    const second = rateLimiter({ name: 's', limit: 10, periodMs: 1_000, store, storeFailure });
    const hour = rateLimiter({ name: 'h', limit: 100, periodMs: 3_600_000, store, storeFailure });
    return { client, second, hour, both: rateLimiter.all([second, hour]) };
  }

  /** The outcome of `call`: its error, and how long it took (printed, lower bounds only). */
  async function failure(what: string, call: () => Promise<unknown>): Promise<Error> {
    const start = performance.now();
    const error = await call().then(
      () => new Error(`${what} resolved`),
      (e: unknown) => e as Error,
    );
    console.log(`${what}: rejected after ${(performance.now() - start).toFixed(1)} ms`);
    return error;
  }

  it.each(['fail-closed', 'fail-open', 'local'] as const)(
    'paused Redis, %s: penalty, reward and block fail at the deadline, never a refusal',
    async (mode) => {
      const { hour } = throughProxy(mode);
      await hour.take('warm-up');
      proxy.pause();
      for (const [what, call] of [
        ['penalty', () => hour.penalty('k', 2)],
        ['reward', () => hour.reward('k', 2)],
        ['block', () => hour.block('k', 60_000)],
      ] as const) {
        const error = await failure(`paused, ${mode}, ${what}`, call);
        expect(isStoreUnavailableError(error)).toBe(true);
        expect(isRateLimitedError(error)).toBe(false);
        expect(error.message).toBe(`Redis did not answer within ${TIMEOUT_MS} ms`);
        expect(isTimeoutError(error.cause)).toBe(true);
      }
      expect(proxy.connections).toBe(1); // still paused, never resumed: the deadline answered
      proxy.resume();
    },
  );

  it('paused Redis: rateLimiter.all rejects under fail-closed and admits with fallback under fail-open', async () => {
    const closed = throughProxy('fail-closed');
    const open = throughProxy('fail-open');
    await Promise.all([closed.both.take('warm-up'), open.both.take('warm-up')]);
    proxy.pause();
    const error = await failure('paused, all, fail-closed', () => closed.both.take('k'));
    expect(isStoreUnavailableError(error)).toBe(true);
    const admitted: RateLimitResult = await open.both.take('k');
    expect(admitted).toMatchObject({ allowed: true, fallback: 'fail-open' });
    proxy.resume();
  });

  it('Redis down: a block fails at once, without waiting in the offline queue, then works again', async () => {
    const { client, hour } = throughProxy('fail-closed');
    await hour.take('warm-up');
    proxy.refuse(true);
    proxy.cut({ reset: true });
    await expect.poll(() => client.status).toBe('reconnecting');
    const error = await failure('down, block', () => hour.block('k', 60_000));
    expect(error.message).toBe('Redis connection is reconnecting');
    proxy.refuse(false);
    await expect.poll(() => client.status, { timeout: 10_000 }).toBe('ready');
    await expect
      .poll(
        () =>
          hour.block('k', 60_000).then(
            (r) => r.remaining,
            () => 'failed',
          ),
        { timeout: 10_000 },
      )
      .toBe(0);
    expect((await hour.take('k')).allowed).toBe(false);
  });

  it('SCRIPT FLUSH mid-run: adjust, block and all reload their scripts and succeed', async () => {
    const store = redisStores(own.client(), { prefix: redis.prefix }).rateLimit;
    const second = rateLimiter({ name: 's', limit: 5, periodMs: 1_000, store });
    const hour = rateLimiter({ name: 'h', limit: 5, periodMs: 3_600_000, store });
    const both = rateLimiter.all([second, hour]);
    await hour.penalty('k');
    await hour.block('b', 60_000);
    await both.take('k');
    await own.client().script('FLUSH'); // our own redis-server: the shared one is never flushed
    expect((await hour.penalty('k')).remaining).toBe(2);
    expect((await hour.reward('k')).remaining).toBe(3);
    expect((await hour.block('b2', 60_000)).remaining).toBe(0);
    expect(await both.take('k')).toMatchObject({ allowed: true, remaining: 2, limit: 5 });
  });
});
