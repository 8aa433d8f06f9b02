/**
 * Every Redis store's conformance suite, unchanged, against a local Redis Cluster (3 masters, 3
 * replicas) through an ioredis `Cluster` client: the rate-limit, idempotency, lock, fence and cache
 * layer stores, and the Redis Streams publisher. Every script call and multi-key command the suites
 * make goes through {@link slotChecked}: after the suites, no call may have spanned two slots
 * (CROSSSLOT), and the suites must have made multi-key calls for that to mean something.
 */
import { randomUUID } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import { afterAll, describe, expect, it } from 'vitest';
import type { OutboxMessage } from '../../src/outbox/store.js';
import { rateLimiter } from '../../src/rate-limit/rate-limiter.js';
import { redisStores, redisStreamPublisher } from '../../src/stores/redis/index.js';
import { cacheLayerConformance } from '../../src/testing/cache-layer-conformance.js';
import { idempotencyStoreConformance } from '../../src/testing/idempotency-conformance.js';
import { fenceStoreConformance, lockStoreConformance } from '../../src/testing/lock-conformance.js';
import { rateLimitStoreConformance } from '../../src/testing/rate-limit-conformance.js';
import { clusterDescribe, useRedisCluster } from '../support/redis-cluster.js';
import { uniqueToken } from '../support/service-env.js';
import { keySlotOf, type SlotLog, slotChecked } from '../support/slot-checked.js';

const cluster = await useRedisCluster();
const logs: SlotLog[] = [];

/** The store set of one conformance case: its own prefix, on a slot-checked cluster client. */
function stores() {
  const { client, log } = slotChecked(cluster!.client());
  logs.push(log);
  return redisStores(client, { prefix: `c:${uniqueToken()}:`, timeoutMs: 2_000 });
}

clusterDescribe('Redis stores on a Redis Cluster', () => {
  rateLimitStoreConformance(
    'rate-limit store on a cluster',
    () => ({ store: stores().rateLimit, elapse: (ms) => sleep(ms), slackMs: 1_000 }),
    { describe, it },
  );

  idempotencyStoreConformance(
    'idempotency store on a cluster',
    () => {
      const set = stores();
      return { store: set.idempotency, elapse: (ms) => sleep(ms), slackMs: 50, close: () => set.close() };
    },
    { describe, it },
  );

  lockStoreConformance(
    'lock store on a cluster',
    () => {
      const set = stores();
      return { store: set.lock, elapse: (ms) => sleep(ms), slackMs: 50, close: () => set.close() };
    },
    { describe, it },
  );

  fenceStoreConformance(
    'fence store on a cluster',
    () => {
      const set = stores();
      return {
        store: set.fence,
        write: (resource, fence, value) => set.fence.write(resource, fence, value),
        read: async (resource) => (await set.fence.read(resource))?.value,
        close: () => set.close(),
      };
    },
    { describe, it },
  );

  cacheLayerConformance(
    'cache layer on a cluster',
    () => {
      const set = stores();
      return {
        layer: set.cacheLayer,
        now: () => Date.now(),
        elapse: (ms) => sleep(ms),
        slackMs: 50,
        close: () => set.close(),
      };
    },
    { describe, it },
  );

  it('a combined limit (rateLimiter.all) decides over one slot: one script call, keys of one hash tag', async () => {
    const store = stores().rateLimit;
    const perSecond = rateLimiter({ name: 'second', limit: 2, periodMs: 1_000, store });
    const perHour = rateLimiter({ name: 'hour', limit: 3, periodMs: 3_600_000, store });
    const both = rateLimiter.all([perSecond, perHour]);
    const decisions = [];
    for (let i = 0; i < 4; i++) decisions.push((await both.take('user:1')).allowed);
    expect(decisions).toEqual([true, true, false, false]);
    expect((await perHour.peek('user:1')).remaining).toBe(1); // the refusals took nothing
  });

  it.each(['}', '}x', '{', '{}', '{x}', 'a}b', '\u0000', '\u0000}x', 'ü}'])(
    'hostile key %j: every store works on it, no call spans two slots',
    async (key) => {
      const set = stores();
      const limiter = rateLimiter({ name: 'a', limit: 1, periodMs: 60_000, store: set.rateLimit });
      const other = rateLimiter({ name: 'b', limit: 5, periodMs: 60_000, store: set.rateLimit });
      const both = rateLimiter.all([limiter, other]);
      expect((await both.take(key)).allowed).toBe(true);
      expect((await both.take(key)).allowed).toBe(false);
      const lease = await set.lock.acquire(key, 'me', 5_000);
      expect(lease?.fence).toBeGreaterThan(0);
      expect(await set.lock.release(key, 'me')).toBe(true);
      const claim = await set.idempotency.claim(key, 'fp', 5_000);
      expect(claim.status).toBe('claimed');
      await set.fence.write(key, 1, 'v');
      expect((await set.fence.read(key))?.value).toBe('v');
      await set.cacheLayer.set(key, '"x"', 5_000, 0, 'changed');
      expect((await set.cacheLayer.get(key))?.payload).toBe('"x"');
      expect(await set.cacheLayer.claimLoad(key, 'me', 5_000)).toBe(true);
      await set.cacheLayer.delete(key, 'gone');
      await set.close();
    },
  );

  it('the Redis Streams publisher appends to streams spread over every master, in order', async () => {
    const { client } = slotChecked(cluster!.client());
    const prefix = `c:${uniqueToken()}:events:`;
    const topics = Array.from({ length: 12 }, (_, i) => `topic-${i}`);
    const publish = redisStreamPublisher(client, { stream: (m) => `${prefix}{${m.topic}}` });
    const messages: OutboxMessage[] = topics.flatMap((topic, n) =>
      [0, 1].map((i) => ({
        id: randomUUID(),
        topic,
        key: `k${n}`,
        payload: { n, i },
        headers: {},
        attempts: 0,
        createdAt: 0,
      })),
    );
    await publish(messages, { signal: new AbortController().signal });
    const masters = await cluster!.masters();
    const ownersOf = new Set<number>();
    for (const topic of topics) {
      const stream = `${prefix}{${topic}}`;
      const entries = await client.xrange(stream, '-', '+');
      const ids = entries.map(([, fields]) => fields[fields.indexOf('id') + 1]);
      expect(ids).toEqual(messages.filter((m) => m.topic === topic).map((m) => m.id));
      const slot = keySlotOf(stream);
      ownersOf.add(masters.find((m) => m.slots.some(([from, to]) => slot >= from && slot <= to))!.port);
    }
    expect(ownersOf.size).toBe(3);
  });

  afterAll(() => {
    const violations = logs.flatMap((log) => log.violations);
    expect(violations).toEqual([]);
    // The check saw the suites' multi-key calls (combined limits, cache loads): it is not vacuous.
    expect(logs.reduce((n, log) => n + log.multiKeyCalls, 0)).toBeGreaterThan(0);
  });
});
