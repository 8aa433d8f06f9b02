/**
 * Coalescing on a real Redis Cluster (3 masters, 3 replicas, the file's own): the decisions of one
 * tick go out as one script call per rule group and hash slot, every call's keys in one slot (no
 * `CROSSSLOT`), with the client's `keyPrefix` taken into account, and each decision is the one the
 * single-key path gives, failing alone on a Redis error of its own key.
 */
import type { Cluster, ClusterOptions } from 'ioredis';
import { expect, it } from 'vitest';
import { isStoreUnavailableError } from '../../src/core/errors.js';
import { ruleOf } from '../../src/rate-limit/rule.js';
import type { RateLimitResult } from '../../src/rate-limit/store.js';
import { redisStores } from '../../src/stores/redis/index.js';
import { MAX_BATCH } from '../../src/stores/redis/rate-limit.js';
import { rateLimitScripts } from '../../src/stores/redis/rate-limit-scripts.js';
import { RedisScript } from '../../src/stores/redis/script.js';
import { keySlot } from '../../src/stores/redis/slot.js';
import { clusterDescribe, useRedisCluster } from '../support/redis-cluster.js';
import { uniqueToken } from '../support/service-env.js';

const cluster = await useRedisCluster();

/** One script call the client was asked to make. */
interface Call {
  readonly numKeys: number;
  readonly keys: readonly string[];
  readonly script: 'single' | 'batch';
}

const batchScripts = new Set(
  Object.values(rateLimitScripts).flatMap(({ batch }) => [batch, new RedisScript(batch).sha]),
);

/** A Cluster client whose eval/evalsha calls are recorded (they still go to the cluster). */
function spied(options?: ClusterOptions): { client: Cluster; calls: Call[] } {
  const calls: Call[] = [];
  const client = new Proxy(cluster!.client(options), {
    get(target, property, receiver) {
      const value = Reflect.get(target, property, receiver);
      if (typeof value !== 'function') return value;
      return (...args: unknown[]) => {
        if (property === 'eval' || property === 'evalsha') {
          const numKeys = args[1] as number;
          const script = batchScripts.has(args[0] as string) ? 'batch' : 'single';
          calls.push({ numKeys, keys: args.slice(2, 2 + numKeys) as string[], script });
        }
        return value.apply(target, args);
      };
    },
  });
  return { client, calls };
}

/** Limit 3 per hour (burst 3): nothing refills during a test. */
const rule = (name: string) => ruleOf({ name, limit: 3, periodMs: 3_600_000 });

const shape = (r: RateLimitResult) => ({ allowed: r.allowed, remaining: r.remaining, limit: r.limit });

/** The slots of a call's keys. */
const slotsOf = (call: Call) => new Set(call.keys.map((key) => keySlot(key)));

/** Two user keys `k<i>` whose state keys (any prefix and name: the tag is the user key) share a slot. */
function sameSlotPair(): [string, string] {
  const seen = new Map<number, string>();
  for (let i = 0; ; i++) {
    const key = `k${i}`;
    const other = seen.get(keySlot(key));
    if (other !== undefined) return [other, key];
    seen.set(keySlot(key), key);
  }
}

clusterDescribe('Redis rate-limit store on a Redis Cluster: coalescing by rule group and slot', () => {
  it('200 takes over 50 keys on every master in one tick: one call per slot, decided as one by one', async () => {
    const { client, calls } = spied();
    const store = redisStores(client, { prefix: `b:${uniqueToken()}:`, timeoutMs: 2_000 }).rateLimit;
    const batched = rule('batched');
    const keys = Array.from({ length: 50 }, (_, i) => `user:${i}`);
    const plan = Array.from({ length: 200 }, (_, i) => keys[i % keys.length]!);

    // Our slots are the server's, and the keys are spread over the three masters. (KEYSLOT is asked
    // of one node: a Cluster client sends CLUSTER commands at once, before its slot map is ready.)
    const masters = await cluster!.masters();
    const node = cluster!.node(masters[0]!.port);
    const ownerOf = (slot: number) =>
      masters.find((m) => m.slots.some(([f, t]) => slot >= f && slot <= t))!.port;
    const slotOf = new Map(keys.map((key) => [key, keySlot(store.keyOf(key, batched))]));
    for (const key of keys) {
      expect(await node.cluster('KEYSLOT', store.keyOf(key, batched))).toBe(slotOf.get(key));
    }
    expect(new Set(keys.map((key) => ownerOf(slotOf.get(key)!))).size).toBe(3);

    const together = await Promise.all(plan.map((key) => store.take(key, 1, batched)));

    // One call per slot, of every decision on its keys (4 per key, under MAX_BATCH), one slot each.
    const perSlot = new Map<number, number>();
    for (const key of plan) perSlot.set(slotOf.get(key)!, (perSlot.get(slotOf.get(key)!) ?? 0) + 1);
    expect(Math.max(...perSlot.values())).toBeLessThanOrEqual(MAX_BATCH);
    expect(calls.map((c) => c.numKeys).sort((x, y) => x - y)).toEqual(
      [...perSlot.values()].sort((x, y) => x - y),
    );
    for (const call of calls) {
      expect(slotsOf(call).size).toBe(1);
      expect(call.script).toBe('batch');
    }

    // Exactly burst (3) admitted per key, the first three of its takes, as taking one by one gives.
    for (const key of keys) {
      const mine = together.filter((_, i) => plan[i] === key);
      expect(mine.map((r) => r.allowed)).toEqual([true, true, true, false]);
    }
    const alone = rule('alone');
    const sequential: RateLimitResult[] = [];
    for (const key of plan) sequential.push(await store.take(key, 1, alone));
    expect(together.map(shape)).toEqual(sequential.map(shape));
  });

  it('keys of different user keys in one slot share calls of at most MAX_BATCH, in order', async () => {
    const { client, calls } = spied();
    const store = redisStores(client, { prefix: `s:${uniqueToken()}:`, timeoutMs: 2_000 }).rateLimit;
    const limit = rule('pair');
    const [a, b] = sameSlotPair();
    const plan = Array.from({ length: MAX_BATCH + 8 }, (_, i) => (i % 2 === 0 ? a : b));
    const results = await Promise.all(plan.map((key) => store.take(key, 1, limit)));
    expect(calls.map((c) => [c.numKeys, c.script])).toEqual([
      [MAX_BATCH, 'batch'],
      [8, 'batch'],
    ]);
    for (const call of calls) expect(slotsOf(call).size).toBe(1);
    for (const key of [a, b]) {
      const mine = results.filter((_, i) => plan[i] === key).map((r) => r.remaining);
      expect(mine.slice(0, 4)).toEqual([2, 1, 0, 0]);
    }
    // A slot with a single decision in its tick is a single-key call.
    calls.length = 0;
    await Promise.all([store.take('x1', 1, limit), store.take('x2', 1, limit)]);
    expect(keySlot('x1')).not.toBe(keySlot('x2'));
    expect(calls.map((c) => [c.numKeys, c.script])).toEqual([
      [1, 'single'],
      [1, 'single'],
    ]);
  });

  it("computes each slot on the key the client sends, with the client's keyPrefix", async () => {
    // Same slot without a prefix; with `p{` in front the tag becomes `<prefix>rl:<name>:{k…`.
    const [a, b] = sameSlotPair();
    const split = spied({ keyPrefix: 'p{' });
    const limit = rule('prefixed');
    const slotsApart = (prefix: string) => {
      const store = redisStores(split.client, { prefix, timeoutMs: 2_000 }).rateLimit;
      return keySlot(`p{${store.keyOf(a, limit)}`) !== keySlot(`p{${store.keyOf(b, limit)}`);
    };
    // The tag now holds the random prefix: its slots collide about once in 10,000 prefixes.
    let prefix = `p:${uniqueToken()}:`;
    while (!slotsApart(prefix)) prefix = `p:${uniqueToken()}:`;
    const store = redisStores(split.client, { prefix, timeoutMs: 2_000 }).rateLimit;
    const outcomes = await Promise.all([store.take(a, 1, limit), store.take(b, 1, limit)]);
    expect(outcomes.map((r) => r.remaining)).toEqual([2, 2]); // no CROSSSLOT
    expect(split.calls.map((c) => c.numKeys)).toEqual([1, 1]);

    // `{t}` in front: every key in slot `t`, so one call for keys of any user key.
    const joined = spied({ keyPrefix: '{t}' });
    const together = redisStores(joined.client, {
      prefix: `t:${uniqueToken()}:`,
      timeoutMs: 2_000,
    }).rateLimit;
    const keys = ['u1', 'u2', 'u3', 'u1'];
    const results = await Promise.all(keys.map((key) => together.take(key, 1, limit)));
    expect(results.map((r) => r.remaining)).toEqual([2, 2, 2, 1]);
    expect(joined.calls.map((c) => [c.numKeys, c.script])).toEqual([[4, 'batch']]);
  });

  it('a key of the wrong type fails its own decision only, in a batch of its slot', async () => {
    const { client, calls } = spied();
    const store = redisStores(client, { prefix: `w:${uniqueToken()}:`, timeoutMs: 2_000 }).rateLimit;
    const limit = rule('wrong');
    const [ok, bad] = sameSlotPair();
    await client.hset(store.keyOf(bad, limit), 'x', '1');
    const outcomes = await Promise.allSettled([
      store.take(ok, 1, limit),
      store.take(bad, 1, limit),
      store.take(ok, 1, limit),
    ]);
    expect(calls.map((c) => [c.numKeys, c.script])).toEqual([[3, 'batch']]);
    expect(outcomes.map((o) => o.status)).toEqual(['fulfilled', 'rejected', 'fulfilled']);
    const error = (outcomes[1] as PromiseRejectedResult).reason as Error;
    expect(isStoreUnavailableError(error)).toBe(true);
    expect(error.message).toMatch(/WRONGTYPE/);
    expect((outcomes[2] as PromiseFulfilledResult<RateLimitResult>).value.remaining).toBe(1);
  });
});
