/**
 * `limiter.wait` on real Redis: the store decides on its own clock, between the client's send and
 * the reply, so the wait's deadline must allow for the round trip.
 */
import { expect, it } from 'vitest';
import { rateLimiter } from '../../src/rate-limit/rate-limiter.js';
import { redisStores } from '../../src/stores/redis/index.js';
import { useRedis } from '../support/services.js';

const redis = await useRedis();

redis.describe('limiter.wait on real Redis', () => {
  it('an uncontended waiter that needs exactly one refill (the default maxWaitMs) is served, not refused', async () => {
    const store = redisStores(redis.client(), { prefix: redis.prefix, timeoutMs: 2_000 }).rateLimit;
    for (const algorithm of ['gcra', 'token-bucket'] as const) {
      const limiter = rateLimiter({ name: `wait-${algorithm}`, algorithm, limit: 1, periodMs: 250, store });
      for (let i = 0; i < 3; i++) {
        const key = `k${i}`;
        expect(await limiter.take(key)).toMatchObject({ allowed: true });
        // One unit per 250 ms: the default maxWaitMs (250 ms) is exactly what this wait needs.
        expect(await limiter.wait(key)).toMatchObject({ allowed: true });
      }
    }
  });

  it('a waiter whose quota comes back after maxWaitMs is still refused at once', async () => {
    const store = redisStores(redis.client(), { prefix: redis.prefix, timeoutMs: 2_000 }).rateLimit;
    const limiter = rateLimiter({ limit: 1, periodMs: 60_000, store });
    await limiter.take('k');
    const started = performance.now();
    await expect(limiter.wait('k', { maxWaitMs: 30_000 })).rejects.toMatchObject({
      code: 'ERR_RATE_LIMITED',
      retryAfterMs: expect.any(Number),
    });
    // Refused on the store's first answer, not after sleeping (a generous bound: no timing race).
    expect(performance.now() - started).toBeLessThan(10_000);
  });
});
