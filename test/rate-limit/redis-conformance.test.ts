/**
 * The rate-limit store conformance suite against real Redis (the same suite the in-memory store
 * passes on a FakeClock), plus what only Redis has: server time, key layout and hash tags, expiry,
 * one round trip per decision.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import type { Redis } from 'ioredis';
import { describe, expect, it } from 'vitest';
import { rateLimiter } from '../../src/rate-limit/rate-limiter.js';
import { ruleOf } from '../../src/rate-limit/rule.js';
import { redisStores } from '../../src/stores/redis/index.js';
import { rateLimitStoreConformance } from '../../src/testing/rate-limit-conformance.js';
import { useRedis } from '../support/services.js';

const redis = await useRedis();

/** A client whose script and delete calls are counted (the calls still go to Redis). */
function counted(client: Redis): { client: Redis; calls: string[] } {
  const calls: string[] = [];
  const proxy = new Proxy(client, {
    get(target, property, receiver) {
      const value = Reflect.get(target, property, receiver);
      if (typeof value !== 'function') return value;
      return (...args: unknown[]) => {
        if (typeof property === 'string' && /^(eval|evalsha|del|get|set)$/.test(property))
          calls.push(property);
        return value.apply(target, args);
      };
    },
  });
  return { client: proxy, calls };
}

redis.describe('rate-limit store on real Redis', () => {
  rateLimitStoreConformance(
    'Redis store (server clock)',
    () => ({
      store: redisStores(redis.client(), { prefix: redis.prefix, timeoutMs: 2_000 }).rateLimit,
      elapse: (ms) => sleep(ms),
      // Real time passes between calls of a scenario; the suite only loosens lower bounds with it.
      slackMs: 1_000,
    }),
    { describe, it },
  );

  it('keeps one key per limiter and key, with the key as its own {hash tag}, under the prefix', async () => {
    const stores = redisStores(redis.client(), { prefix: redis.prefix });
    const limiter = rateLimiter({ name: 'api', limit: 5, periodMs: 60_000, store: stores.rateLimit });
    await limiter.take('user:42');
    expect(await redis.keys()).toEqual([`${redis.prefix}rl:api:{user:42}`]);
    expect(stores.rateLimit.keyOf('user:42', limiter.rule)).toBe(`${redis.prefix}rl:api:{user:42}`);
  });

  it.each(['gcra', 'token-bucket', 'sliding-window'] as const)(
    '%s: the key expires when it is back at full capacity (PEXPIRE = resetMs), and expiry changes nothing',
    async (algorithm) => {
      const stores = redisStores(redis.client(), { prefix: redis.prefix });
      const limiter = rateLimiter({ algorithm, limit: 4, periodMs: 200, store: stores.rateLimit });
      const result = await limiter.take('k', 2);
      const key = stores.rateLimit.keyOf('k', limiter.rule);
      const ttl = await redis.admin().pttl(key);
      expect(ttl).toBeGreaterThan(0);
      expect(ttl).toBeLessThanOrEqual(result.resetMs);
      await sleep(result.resetMs + 50);
      expect(await redis.admin().exists(key)).toBe(0);
      expect(await limiter.take('k', 4)).toMatchObject({ allowed: true, remaining: 0 });
    },
  );

  it('refusals write nothing; peeks write nothing', async () => {
    const stores = redisStores(redis.client(), { prefix: redis.prefix });
    const rule = ruleOf({ limit: 1, periodMs: 60_000 });
    await stores.rateLimit.take('k', 1, rule);
    const key = stores.rateLimit.keyOf('k', rule);
    const before = await redis.admin().get(key);
    await stores.rateLimit.take('k', 1, rule);
    await stores.rateLimit.peek('k', rule);
    await stores.rateLimit.peek('fresh', rule);
    expect(await redis.admin().get(key)).toBe(before);
    expect(await redis.admin().exists(stores.rateLimit.keyOf('fresh', rule))).toBe(0);
  });

  it('one round trip per decision: EVAL the first time on a client, EVALSHA after', async () => {
    const { client, calls } = counted(redis.client());
    const stores = redisStores(client, { prefix: redis.prefix });
    const limiter = rateLimiter({ limit: 100, periodMs: 60_000, store: stores.rateLimit });
    for (let i = 0; i < 5; i++) await limiter.take(`k${i}`);
    expect(calls).toEqual(['eval', 'evalsha', 'evalsha', 'evalsha', 'evalsha']);
  });

  it('uses the server clock: a client clock far off changes nothing', async () => {
    const stores = redisStores(redis.client(), { prefix: redis.prefix });
    const skewed = {
      now: () => 0,
      sleep: () => Promise.resolve(),
      setTimer: setTimeout,
      clearTimer: clearTimeout,
    };
    const limiter = rateLimiter({
      limit: 1,
      periodMs: 60_000,
      store: stores.rateLimit,
      clock: skewed as never,
    });
    expect((await limiter.take('k')).allowed).toBe(true);
    const refused = await limiter.take('k');
    expect(refused.allowed).toBe(false);
    expect(refused.retryAfterMs).toBeGreaterThan(59_000);
    const [seconds] = await redis.admin().time();
    // GCRA's state is byte 1, then the TAT's whole ms and its rest in token·ms, big-endian doubles.
    const state = await redis.admin().getBuffer(stores.rateLimit.keyOf('k', limiter.rule));
    expect(state?.length).toBe(17);
    expect(state?.[0]).toBe(1);
    expect(state?.readDoubleBE(1)).toBeGreaterThan(Number(seconds) * 1_000); // server time, not the client's 0
  });

  it('reads the GCRA state of earlier versions, written as text: "<TAT ms> <rest>" or "<TAT ms>"', async () => {
    const stores = redisStores(redis.client(), { prefix: redis.prefix });
    const limiter = rateLimiter({ limit: 1, periodMs: 60_000, store: stores.rateLimit });
    const [seconds] = await redis.admin().time();
    const tat = Number(seconds) * 1_000 + 60_000; // one period of debt ahead: the next take waits ~60 s
    for (const [key, text] of [
      ['two-part', `${tat} 0`],
      ['one-number', `${tat}`],
    ]) {
      await redis.admin().set(stores.rateLimit.keyOf(key!, limiter.rule), text!, 'PX', 200_000);
      const refused = await limiter.take(key!);
      expect(refused.allowed).toBe(false);
      expect(refused.retryAfterMs).toBeGreaterThan(55_000);
      expect(refused.retryAfterMs).toBeLessThanOrEqual(61_000);
    }
  });

  it('token bucket: a shortfall allowed within the slack is carried in the stored level, as in memory', async () => {
    const stores = redisStores(redis.client(), { prefix: redis.prefix });
    // One unit per 9e15 ms: the slack (a billionth of a unit) is 9e6 token·ms, while the refill is
    // 1 token·ms per ms, so the time the test itself takes is noise.
    const periodMs = 9e15;
    const slack = periodMs * 1e-9;
    const rule = ruleOf({ algorithm: 'token-bucket', limit: 1, periodMs });
    const key = stores.rateLimit.keyOf('k', rule);
    const [seconds, micros] = await redis.admin().time();
    const now = Number(seconds) * 1_000 + Number(micros) / 1_000;
    await redis.admin().set(key, tokenBucketState(periodMs - slack / 2, now, periodMs)); // half the slack short
    expect(await stores.rateLimit.take('k', 1, rule)).toMatchObject({ allowed: true, remaining: 0 });
    const state = await redis.admin().getBuffer(key);
    expect(state?.[0]).toBe(2);
    const level = state!.readDoubleBE(1);
    expect(level).toBeLessThan(0); // the shortfall is carried, not forgiven (which would store 0)
    expect(level).toBeGreaterThan(-slack);
    expect(await stores.rateLimit.take('k', 1, rule)).toMatchObject({ allowed: false, remaining: 0 });
  });

  it('token bucket: a state written at a later server time counts it as still to come, as GCRA does', async () => {
    const stores = redisStores(redis.client(), { prefix: redis.prefix });
    const rule = ruleOf({ algorithm: 'token-bucket', limit: 10, periodMs: 1_000 });
    const key = stores.rateLimit.keyOf('k', rule);
    const [seconds] = await redis.admin().time();
    // Full, but last brought up to date a minute ahead of the server clock (the clock stepped back),
    // written in the text format of earlier versions, "level last periodMs", which is still read.
    await redis.admin().set(key, `${10 * 1_000} ${Number(seconds) * 1_000 + 61_000} 1000`);
    const refused = await stores.rateLimit.take('k', 1, rule);
    expect(refused).toMatchObject({ allowed: false, remaining: 0 });
    expect(refused.retryAfterMs).toBeGreaterThan(50_000);
  });

  it('limiters with different names share a store without sharing state', async () => {
    const stores = redisStores(redis.client(), { prefix: redis.prefix });
    const a = rateLimiter({ name: 'a', limit: 1, periodMs: 60_000, store: stores.rateLimit });
    const b = rateLimiter({ name: 'b', limit: 1, periodMs: 60_000, store: stores.rateLimit });
    expect((await a.take('k')).allowed).toBe(true);
    expect((await b.take('k')).allowed).toBe(true);
    expect((await a.take('k')).allowed).toBe(false);
  });

  it('a blocked key costs no round trip until its retryAfterMs passes', async () => {
    const { client, calls } = counted(redis.client());
    const limiter = rateLimiter({
      limit: 1,
      periodMs: 300,
      store: redisStores(client, { prefix: redis.prefix }).rateLimit,
    });
    await limiter.take('k');
    const refused = await limiter.take('k');
    expect(refused.allowed).toBe(false);
    const before = calls.length;
    for (let i = 0; i < 200; i++) expect((await limiter.take('k')).allowed).toBe(false);
    expect(calls.length).toBe(before);
    await sleep(refused.retryAfterMs + 20);
    expect((await limiter.take('k')).allowed).toBe(true);
    expect(calls.length).toBe(before + 1);
  });
});

/** A token bucket's state as the script writes it: byte 2, then level, last and periodMs as big-endian doubles. */
function tokenBucketState(level: number, last: number, periodMs: number): Buffer {
  const state = Buffer.alloc(25);
  state[0] = 2;
  state.writeDoubleBE(level, 1);
  state.writeDoubleBE(last, 9);
  state.writeDoubleBE(periodMs, 17);
  return state;
}
