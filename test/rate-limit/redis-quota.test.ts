/**
 * Quota control and combined limits on real Redis, beyond the conformance suite (which runs them
 * on every store): a block holds across clients (processes), adjustments are atomic under
 * concurrency, a block lives in the key's own value and expiry, and `rateLimiter.all()` is one
 * script call over keys of one Redis Cluster slot, hostile keys included.
 */
import type { Redis } from 'ioredis';
import { describe, expect, it } from 'vitest';
import { rateLimiter } from '../../src/rate-limit/rate-limiter.js';
import { ruleOf } from '../../src/rate-limit/rule.js';
import { redisStores } from '../../src/stores/redis/index.js';
import { useRedis } from '../support/services.js';

const redis = await useRedis();

/** Redis Cluster's slot of `key`: CRC16 (XMODEM) of its hash tag, or of the whole key, mod 16384. */
function slotOf(key: string): number {
  const bytes = Buffer.from(key);
  let start = 0;
  let end = bytes.length;
  const open = bytes.indexOf('{');
  if (open !== -1) {
    const close = bytes.indexOf('}', open + 1);
    if (close > open + 1) [start, end] = [open + 1, close];
  }
  let crc = 0;
  for (let i = start; i < end; i++) {
    crc ^= bytes[i]! << 8;
    for (let bit = 0; bit < 8; bit++)
      crc = crc & 0x8000 ? ((crc << 1) ^ 0x1021) & 0xffff : (crc << 1) & 0xffff;
  }
  return crc % 16_384;
}

/** `client` with its script calls recorded (they still go to Redis). */
function spied(client: Redis): { client: Redis; calls: { method: string; numKeys: number }[] } {
  const calls: { method: string; numKeys: number }[] = [];
  const proxy = new Proxy(client, {
    get(target, property, receiver) {
      const value = Reflect.get(target, property, receiver);
      if (typeof value !== 'function') return value;
      return (...args: unknown[]) => {
        if (property === 'eval' || property === 'evalsha')
          calls.push({ method: property, numKeys: args[1] as number });
        return value.apply(target, args);
      };
    },
  });
  return { client: proxy, calls };
}

redis.describe('rate-limit quota control and combined limits on real Redis', () => {
  const limiterOn = (client: Redis, name = 'login') =>
    rateLimiter({
      name,
      limit: 10,
      periodMs: 3_600_000,
      store: redisStores(client, { prefix: redis.prefix }).rateLimit,
    });

  describe('slot of the hash tag', () => {
    it('matches what Redis Cluster computes for known keys', () => {
      expect(slotOf('foo')).toBe(12_182);
      expect(slotOf('{user1000}.following')).toBe(slotOf('{user1000}.followers'));
      expect(slotOf('x{foo}y')).toBe(slotOf('foo'));
      expect(slotOf('{}foo')).not.toBe(slotOf('{}bar')); // an empty tag: the whole key is hashed
    });
  });

  it('a block made through one client refuses takes through another; reset through either lifts it', async () => {
    const one = limiterOn(redis.client());
    const other = limiterOn(redis.client());
    const blocked = await one.block('ip:1', 60_000);
    expect(blocked).toMatchObject({ allowed: true, remaining: 0 });
    const refused = await other.take('ip:1');
    expect(refused).toMatchObject({ allowed: false, remaining: 0 });
    expect(refused.retryAfterMs).toBeGreaterThan(55_000);
    expect(refused.retryAfterMs).toBeLessThanOrEqual(60_000);
    await other.reset('ip:1');
    expect(await one.take('ip:1')).toMatchObject({ allowed: true, remaining: 9 });
  });

  it('a block lives in the key: "!<until> " then the state, expiring no earlier than the block, DEL lifts both', async () => {
    const stores = redisStores(redis.client(), { prefix: redis.prefix });
    const rule = ruleOf({ name: 'b', algorithm: 'token-bucket', limit: 10, periodMs: 3_600_000 });
    await stores.rateLimit.take('k', 4, rule);
    await stores.rateLimit.block!('k', 900_000, rule);
    const key = stores.rateLimit.keyOf('k', rule);
    const [seconds] = await redis.admin().time();
    const value = (await redis.admin().getBuffer(key))!;
    const space = value.indexOf(' ');
    expect(value.toString('latin1', 0, 1)).toBe('!');
    expect(Number(value.toString('latin1', 1, space))).toBeGreaterThan(Number(seconds) * 1_000 + 890_000);
    const state = value.subarray(space + 1); // the token bucket's own state: byte 2, level, last, periodMs
    expect(state[0]).toBe(2);
    expect(state.readDoubleBE(1)).toBe(6 * 3_600_000); // the quota underneath, as it was
    expect(state.readDoubleBE(17)).toBe(3_600_000);
    expect(await redis.admin().pttl(key)).toBeGreaterThan(1_400_000); // the state's reset is longer here
    await stores.rateLimit.reset('k', rule);
    expect(await redis.admin().exists(key)).toBe(0);
  });

  it('a block on a fresh key expires with it: nothing is left once it ends', async () => {
    const stores = redisStores(redis.client(), { prefix: redis.prefix });
    const rule = ruleOf({ name: 'short', limit: 10, periodMs: 60_000 });
    await stores.rateLimit.block!('k', 150, rule);
    const key = stores.rateLimit.keyOf('k', rule);
    expect(await redis.admin().pttl(key)).toBeLessThanOrEqual(150);
    await expect.poll(() => redis.admin().exists(key), { interval: 50 }).toBe(0);
    expect(await stores.rateLimit.take('k', 10, rule)).toMatchObject({ allowed: true, remaining: 0 });
  });

  it('adjustments are atomic: 30 concurrent rewards on an empty key give back exactly the burst', async () => {
    const limiter = limiterOn(redis.client());
    await limiter.take('k', 10);
    const reports = await Promise.all(Array.from({ length: 30 }, () => limiter.reward('k')));
    expect(reports.map((r) => r.remaining).sort((a, b) => a - b)).toEqual([
      ...Array.from({ length: 10 }, (_, i) => i + 1),
      ...Array.from({ length: 20 }, () => 10),
    ]);
    expect(await limiter.take('k', 10)).toMatchObject({ allowed: true });
    expect((await limiter.take('k')).allowed).toBe(false);
  });

  it('penalties and takes from two clients at once: each unit goes to exactly one of them', async () => {
    const a = limiterOn(redis.client());
    const b = limiterOn(redis.client());
    const reports = await Promise.all(
      Array.from({ length: 40 }, (_, i) => (i % 2 === 0 ? a.take('k') : b.penalty('k', 1))),
    );
    // Every operation that found a unit saw the state after the one before it: 9 … 1 once each.
    const seen = reports.map((r) => r.remaining).filter((remaining) => remaining > 0);
    expect(seen.sort((x, y) => x - y)).toEqual([1, 2, 3, 4, 5, 6, 7, 8, 9]);
    expect((await a.peek('k')).remaining).toBe(0);
  });

  it('rateLimiter.all: one script call over one key per limiter, all in the hash tag slot', async () => {
    const { client, calls } = spied(redis.client());
    const store = redisStores(client, { prefix: redis.prefix }).rateLimit;
    const second = rateLimiter({ name: 'second', limit: 2, periodMs: 1_000, store });
    const hour = rateLimiter({
      name: 'hour',
      algorithm: 'sliding-window',
      limit: 3,
      periodMs: 3_600_000,
      store,
    });
    const both = rateLimiter.all([second, hour]);
    for (const key of ['user:42', '}x', '}', '{tag}rest', 'a}b', '\u0000x', 'ü {} spaces']) {
      const names = [second, hour].map((l) => store.keyOf(key, l.rule));
      expect(new Set(names.map(slotOf)).size).toBe(1);
      expect(names[0]).not.toMatch(/:\{\}/); // never the empty hash tag
      expect((await both.take(key)).allowed).toBe(true);
    }
    expect(calls.map((c) => c.numKeys)).toEqual(Array.from({ length: 7 }, () => 2));
    expect(calls.map((c) => c.method)).toEqual(['eval', ...Array.from({ length: 6 }, () => 'evalsha')]);
    expect(store.keyOf('user:42', second.rule)).toBe(`${redis.prefix}rl:second:{user:42}`);
    expect(store.keyOf('}x', second.rule)).toBe(`${redis.prefix}rl:second:{\u0000}x}`);
  });

  it('rateLimiter.all: concurrent decisions from two clients never pass either limit', async () => {
    const make = (client: Redis) => {
      const store = redisStores(client, { prefix: redis.prefix }).rateLimit;
      return rateLimiter.all([
        rateLimiter({ name: 'burst', limit: 5, periodMs: 3_600_000, store }),
        rateLimiter({ name: 'window', algorithm: 'sliding-window', limit: 7, periodMs: 3_600_000, store }),
      ]);
    };
    const [a, b] = [make(redis.client()), make(redis.client())];
    const results = await Promise.all(Array.from({ length: 40 }, (_, i) => (i % 2 ? a : b).take('k')));
    expect(results.filter((r) => r.allowed)).toHaveLength(5);
    const limits = a.limiters;
    expect((await limits[0]!.peek('k')).remaining).toBe(0);
    expect((await limits[1]!.peek('k')).remaining).toBe(2); // the window lost only what was admitted
  });
});
