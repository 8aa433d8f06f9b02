/**
 * Coalescing on the Redis rate-limit store: decisions made in the same tick go out as one batch
 * script call (on a Cluster client, one per hash slot: see test/redis-cluster/), bounded by
 * MAX_BATCH, and each is decided exactly as its own call would decide it: in order, with its own
 * deadline, its own Redis error, and NOSCRIPT reload for the batch script too. Real Redis throughout; the "spy" only records the calls a real
 * client makes.
 */
import type { Redis } from 'ioredis';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { Clock, TimerHandle } from '../../src/core/clock.js';
import { isStoreUnavailableError, isTimeoutError } from '../../src/core/errors.js';
import { rateLimiter } from '../../src/rate-limit/rate-limiter.js';
import { ruleOf } from '../../src/rate-limit/rule.js';
import type { RateLimitResult } from '../../src/rate-limit/store.js';
import { redisStores } from '../../src/stores/redis/index.js';
import { MAX_BATCH } from '../../src/stores/redis/rate-limit.js';
import { rateLimitScripts } from '../../src/stores/redis/rate-limit-scripts.js';
import { RedisScript } from '../../src/stores/redis/script.js';
import { type FaultProxy, startFaultProxy } from '../support/fault-proxy.js';
import { startPrivateRedis } from '../support/private-redis.js';
import { useRedis } from '../support/services.js';

const redis = await useRedis();
// SCRIPT FLUSH runs against a redis-server of this file's own, on a free port.
const own = await startPrivateRedis();

interface Call {
  readonly method: string;
  readonly numKeys: number;
  /** `single` or `batch` (which script), `other` for anything else. */
  readonly script: 'single' | 'batch' | 'other';
}

const single = new Set(Object.values(rateLimitScripts).map((s) => s.single));
const batch = new Set(Object.values(rateLimitScripts).map((s) => s.batch));
for (const source of [...single]) single.add(new RedisScript(source).sha);
for (const source of [...batch]) batch.add(new RedisScript(source).sha);

/** `client` with its eval/evalsha calls recorded (they still go to Redis), optionally as a Cluster. */
function spied(client: Redis, isCluster = false): { client: Redis; calls: Call[] } {
  const calls: Call[] = [];
  const proxy = new Proxy(client, {
    get(target, property, receiver) {
      if (property === 'isCluster') return isCluster;
      const value = Reflect.get(target, property, receiver);
      if (typeof value !== 'function') return value;
      return (...args: unknown[]) => {
        if (property === 'eval' || property === 'evalsha') {
          const id = args[0] as string;
          const script = single.has(id) ? 'single' : batch.has(id) ? 'batch' : 'other';
          calls.push({ method: property, numKeys: args[1] as number, script });
        }
        return value.apply(target, args);
      };
    },
  });
  return { client: proxy, calls };
}

/** A clock whose time the test sets synchronously; timers fire on {@link ManualClock.set}. */
class ManualClock implements Clock {
  private time = 0;
  private timers: { at: number; callback: () => void }[] = [];
  now(): number {
    return this.time;
  }
  sleep(): Promise<void> {
    return Promise.reject(new Error('not used'));
  }
  setTimer(callback: () => void, ms: number): TimerHandle {
    const timer = { at: this.time + ms, callback };
    this.timers.push(timer);
    return timer;
  }
  clearTimer(handle: TimerHandle): void {
    this.timers = this.timers.filter((t) => t !== handle);
  }
  /** Sets the time; with `fire`, runs the timers now due. */
  set(ms: number, fire = false): void {
    this.time = ms;
    if (!fire) return;
    const due = this.timers.filter((t) => t.at <= ms);
    this.timers = this.timers.filter((t) => t.at > ms);
    for (const t of due) t.callback();
  }
}

const shape = (r: RateLimitResult) => ({ allowed: r.allowed, remaining: r.remaining, limit: r.limit });

redis.describe('Redis rate-limit store: coalescing the decisions of one tick', () => {
  it('a decision alone in its tick is one single-key call (EVAL, then EVALSHA), as without batching', async () => {
    const { client, calls } = spied(redis.client());
    const limiter = rateLimiter({
      limit: 10,
      periodMs: 60_000,
      store: redisStores(client, { prefix: redis.prefix }).rateLimit,
    });
    for (let i = 0; i < 3; i++) await limiter.take(`k${i}`);
    expect(calls).toEqual([
      { method: 'eval', numKeys: 1, script: 'single' },
      { method: 'evalsha', numKeys: 1, script: 'single' },
      { method: 'evalsha', numKeys: 1, script: 'single' },
    ]);
  });

  it.each(['gcra', 'token-bucket', 'sliding-window'] as const)(
    '%s: N concurrent takes of one key in one batch admit exactly burst, in order',
    async (algorithm) => {
      const { client, calls } = spied(redis.client());
      const limiter = rateLimiter({
        algorithm,
        limit: 10,
        periodMs: 3_600_000,
        store: redisStores(client, { prefix: redis.prefix }).rateLimit,
      });
      const results = await Promise.all(Array.from({ length: 25 }, () => limiter.take('k')));
      expect(calls).toEqual([{ method: 'eval', numKeys: 25, script: 'batch' }]);
      // Decided in the order of the calls: the first ten admitted, counting down.
      expect(results.map((r) => r.allowed)).toEqual(Array.from({ length: 25 }, (_, i) => i < 10));
      expect(results.slice(0, 10).map((r) => r.remaining)).toEqual([9, 8, 7, 6, 5, 4, 3, 2, 1, 0]);
      for (const r of results.slice(10)) {
        expect(r).toMatchObject({ remaining: 0, limit: 10 });
        expect(r.retryAfterMs).toBeGreaterThan(0);
      }
    },
  );

  it.each(['gcra', 'token-bucket', 'sliding-window'] as const)(
    '%s: mixed keys, costs and peeks in one batch decide as the same calls one at a time',
    async (algorithm) => {
      const plan: [key: string, cost: number][] = [
        ['a', 1],
        ['b', 2],
        ['a', 2],
        ['c', 0],
        ['b', 2],
        ['a', 1],
        ['c', 3],
        ['a', 0],
        ['b', 1],
        ['c', 1],
      ];
      const rule = (name: string) => ruleOf({ name, algorithm, limit: 3, periodMs: 3_600_000 });
      const { client, calls } = spied(redis.client());
      const store = redisStores(client, { prefix: redis.prefix }).rateLimit;
      const batched = rule('batched');
      const together = await Promise.all(
        plan.map(([key, cost]) => (cost === 0 ? store.peek(key, batched) : store.take(key, cost, batched))),
      );
      expect(calls).toEqual([{ method: 'eval', numKeys: plan.length, script: 'batch' }]);
      const alone: RateLimitResult[] = [];
      const sequential = rule('sequential');
      for (const [key, cost] of plan)
        alone.push(await (cost === 0 ? store.peek(key, sequential) : store.take(key, cost, sequential)));
      expect(together.map(shape)).toEqual(alone.map(shape));
      // limit 3: a 1 ✓, b 2 ✓, a 2 ✓, peek c, b 2 ✗, a 1 ✗, c 3 ✓, peek a, b 1 ✓, c 1 ✗
      expect(together.map((r) => r.allowed)).toEqual([
        true,
        true,
        true,
        true,
        false,
        false,
        true,
        true,
        true,
        false,
      ]);
      for (const [i, r] of together.entries()) {
        // Same decisions; durations may differ by the real time between the two runs.
        expect(Math.abs(r.retryAfterMs - alone[i]!.retryAfterMs)).toBeLessThanOrEqual(1_000);
        expect(Math.abs(r.resetMs - alone[i]!.resetMs)).toBeLessThanOrEqual(1_000);
      }
    },
  );

  it(`sends at most MAX_BATCH (${MAX_BATCH}) decisions per call, in order`, async () => {
    const { client, calls } = spied(redis.client());
    const limiter = rateLimiter({
      limit: 1_000,
      periodMs: 60_000,
      store: redisStores(client, { prefix: redis.prefix }).rateLimit,
    });
    const n = 2 * MAX_BATCH + 5;
    const results = await Promise.all(Array.from({ length: n }, (_, i) => limiter.take(`k${i % 7}`)));
    expect(calls.map((c) => c.numKeys)).toEqual([MAX_BATCH, MAX_BATCH, 5]);
    expect(calls.every((c) => c.script === 'batch')).toBe(true);
    // Key k0 was taken at 0, 7, 14, ...: its remaining counts down across the three calls.
    const k0 = results.filter((_, i) => i % 7 === 0).map((r) => r.remaining);
    expect(k0).toEqual(k0.map((_, j) => 999 - j));
    // A remainder of one goes out as a single-key call.
    calls.length = 0;
    await Promise.all(Array.from({ length: MAX_BATCH + 1 }, (_, i) => limiter.take(`m${i}`)));
    expect(calls.map((c) => [c.numKeys, c.script])).toEqual([
      [MAX_BATCH, 'batch'],
      [1, 'single'],
    ]);
  });

  it('cross-checks the call count with INFO commandstats on the server', async () => {
    const admin = redis.admin();
    const limiter = rateLimiter({
      limit: 1_000,
      periodMs: 60_000,
      store: redisStores(redis.client(), { prefix: redis.prefix }).rateLimit,
    });
    await Promise.all([limiter.take('warm-1'), limiter.take('warm-2')]); // loads the batch script
    const evalshaCalls = async () => {
      const info = await admin.info('commandstats');
      return Number(/cmdstat_evalsha:calls=(\d+)/.exec(info)?.[1] ?? 0);
    };
    // Other test files may run scripts on this server meanwhile: retry until a quiet window.
    let delta = 0;
    for (let attempt = 0; attempt < 5; attempt++) {
      const before = await evalshaCalls();
      await Promise.all(Array.from({ length: 3 * MAX_BATCH }, (_, i) => limiter.take(`k${i}`)));
      delta = (await evalshaCalls()) - before;
      if (delta === 3) break;
    }
    expect(delta).toBe(3);
  });

  it('a Cluster client batches per hash slot: decisions on one key share a call', async () => {
    const { client, calls } = spied(redis.client(), true);
    const limiter = rateLimiter({
      limit: 10,
      periodMs: 60_000,
      store: redisStores(client, { prefix: redis.prefix }).rateLimit,
    });
    const results = await Promise.all(Array.from({ length: 12 }, () => limiter.take('k')));
    expect(results.filter((r) => r.allowed)).toHaveLength(10);
    expect(calls).toEqual([{ method: 'eval', numKeys: 12, script: 'batch' }]);
  });

  it('limiters with equal rules share a batch; different rules get one call each', async () => {
    const { client, calls } = spied(redis.client());
    const store = redisStores(client, { prefix: redis.prefix }).rateLimit;
    const a = rateLimiter({ name: 'a', limit: 5, periodMs: 60_000, store });
    const b = rateLimiter({ name: 'b', limit: 5, periodMs: 60_000, store });
    const c = rateLimiter({ name: 'c', limit: 7, periodMs: 60_000, store });
    const results = await Promise.all([a.take('k'), b.take('k'), c.take('k'), a.take('k'), c.take('k')]);
    expect(results.map((r) => r.remaining)).toEqual([4, 4, 6, 3, 5]);
    expect(calls.map((x) => [x.numKeys, x.script])).toEqual([
      [3, 'batch'],
      [2, 'batch'],
    ]);
  });

  it('a key of the wrong type fails its own decision only', async () => {
    const store = redisStores(redis.client(), { prefix: redis.prefix }).rateLimit;
    const rule = ruleOf({ limit: 5, periodMs: 60_000 });
    await redis.admin().hset(store.keyOf('bad', rule), 'x', '1');
    const outcomes = await Promise.allSettled([
      store.take('ok', 1, rule),
      store.take('bad', 1, rule),
      store.take('ok', 1, rule),
    ]);
    expect(outcomes.map((o) => o.status)).toEqual(['fulfilled', 'rejected', 'fulfilled']);
    const error = (outcomes[1] as PromiseRejectedResult).reason as Error;
    expect(isStoreUnavailableError(error)).toBe(true);
    expect(error.message).toMatch(/WRONGTYPE/);
    expect((outcomes[2] as PromiseFulfilledResult<RateLimitResult>).value.remaining).toBe(3);
    // Alone, it fails just the same.
    await expect(store.take('bad', 1, rule)).rejects.toThrow(/WRONGTYPE/);
  });

  it('a reset made after takes in the same tick runs after them (order kept)', async () => {
    const store = redisStores(redis.client(), { prefix: redis.prefix }).rateLimit;
    const rule = ruleOf({ limit: 1, periodMs: 60_000 });
    const [first, , second] = await Promise.all([
      store.take('k', 1, rule),
      store.reset('k', rule),
      store.take('k', 1, rule),
    ]);
    expect(first).toMatchObject({ allowed: true, remaining: 0 });
    expect(second).toMatchObject({ allowed: true, remaining: 0 });
  });

  it('SCRIPT FLUSH: the batch script gets NOSCRIPT, is reloaded with EVAL, and decides right', async () => {
    const { client, calls } = spied(own.client());
    const limiter = rateLimiter({
      limit: 6,
      periodMs: 60_000,
      store: redisStores(client, { prefix: redis.prefix }).rateLimit,
    });
    const first = await Promise.all([limiter.take('k'), limiter.take('k')]);
    const second = await Promise.all([limiter.take('k'), limiter.take('k')]);
    await own.client().script('FLUSH'); // our own redis-server: the shared one is never flushed
    const third = await Promise.all([limiter.take('k'), limiter.take('k'), limiter.take('k')]);
    expect([...first, ...second, ...third].map((r) => r.remaining)).toEqual([5, 4, 3, 2, 1, 0, 0]);
    expect(third.map((r) => r.allowed)).toEqual([true, true, false]);
    expect(calls.map((c) => [c.method, c.numKeys, c.script])).toEqual([
      ['eval', 2, 'batch'],
      ['evalsha', 2, 'batch'],
      ['evalsha', 3, 'batch'], // NOSCRIPT
      ['eval', 3, 'batch'], // runs and reloads
    ]);
  });

  describe('with faults', () => {
    let proxy: FaultProxy;
    beforeEach(async () => {
      proxy = await startFaultProxy({ target: redis.target });
    });
    afterEach(async () => {
      await proxy.close();
    });

    it('a decision whose deadline passes fails alone; the rest of its batch is decided', async () => {
      const clock = new ManualClock();
      const { client, calls } = spied(redis.client({ url: proxy.url(redis.url) }));
      const store = redisStores(client, { prefix: redis.prefix, timeoutMs: 100, clock }).rateLimit;
      const rule = ruleOf({ limit: 5, periodMs: 3_600_000 });
      await Promise.all([store.peek('warm-1', rule), store.peek('warm-2', rule)]);
      calls.length = 0;
      proxy.pause('downstream'); // Redis executes; its reply is held
      clock.set(0);
      const early = store.take('k', 1, rule).catch((e: unknown) => e); // deadline 100
      clock.set(60);
      const late = store.take('k', 1, rule); // deadline 160, same tick: same batch
      await new Promise((resolve) => setTimeout(resolve, 50)); // the batch is on the wire
      expect(calls).toEqual([{ method: 'evalsha', numKeys: 2, script: 'batch' }]);
      clock.set(100, true);
      const error = (await early) as Error;
      expect(isStoreUnavailableError(error)).toBe(true);
      expect(isTimeoutError(error.cause)).toBe(true);
      proxy.resume();
      // The expired decision did execute on Redis (it consumed its unit; its reply was dropped):
      // the other one, decided after it, says so.
      expect(await late).toMatchObject({ allowed: true, remaining: 3 });
      expect((await store.peek('k', rule)).remaining).toBe(3);
    });

    it('connection down (reconnecting): every pending decision fails at once', async () => {
      const { client, calls } = spied(redis.client({ url: proxy.url(redis.url) }));
      const store = redisStores(client, { prefix: redis.prefix, timeoutMs: 2_000 }).rateLimit;
      const rule = ruleOf({ limit: 5, periodMs: 60_000 });
      await store.take('warm', 1, rule);
      proxy.refuse(true);
      proxy.cut({ reset: true });
      await expect.poll(() => client.status).toBe('reconnecting');
      calls.length = 0;
      const outcomes = await Promise.allSettled(Array.from({ length: 10 }, () => store.take('k', 1, rule)));
      for (const o of outcomes) {
        expect(o.status).toBe('rejected');
        expect(((o as PromiseRejectedResult).reason as Error).message).toBe(
          'Redis connection is reconnecting',
        );
      }
      expect(calls).toEqual([]);
      client.disconnect();
    });

    it('a batch cut mid-flight fails each of its decisions with StoreUnavailableError', async () => {
      const client = redis.client({ url: proxy.url(redis.url) });
      const store = redisStores(client, { prefix: redis.prefix, timeoutMs: 300 }).rateLimit;
      const rule = ruleOf({ limit: 5, periodMs: 60_000 });
      await store.take('warm', 1, rule);
      proxy.pause();
      const pending = Promise.allSettled(Array.from({ length: 4 }, () => store.take('k', 1, rule)));
      await new Promise((resolve) => setTimeout(resolve, 20));
      proxy.cut({ reset: true });
      const outcomes = await pending;
      for (const o of outcomes) {
        expect(o.status).toBe('rejected');
        expect(isStoreUnavailableError((o as PromiseRejectedResult).reason)).toBe(true);
      }
      client.disconnect();
    });
  });
});
