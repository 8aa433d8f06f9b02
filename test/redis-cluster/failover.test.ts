/**
 * A master of a local Redis Cluster killed (SIGKILL) under load: the rate-limit, idempotency and
 * lock stores keep answering through the failover — every call either succeeds or fails with
 * `StoreUnavailableError` at its own deadline (never another error, never a hang) — and answer
 * again on the killed master's slots once its replica is promoted. A fence issued before the
 * failover is still below every fence issued after it. What each store guarantees meanwhile is in
 * docs/stores.md ("Redis Cluster and failover").
 */
import { expect, it } from 'vitest';
import { isStoreUnavailableError } from '../../src/core/errors.js';
import { rateLimiter } from '../../src/rate-limit/rate-limiter.js';
import { redisStores } from '../../src/stores/redis/index.js';
import { clusterDescribe, useRedisCluster } from '../support/redis-cluster.js';
import { uniqueToken } from '../support/service-env.js';
import { keySlotOf } from '../support/slot-checked.js';

const cluster = await useRedisCluster();

interface Tally {
  ok: number;
  unavailable: number;
  other: unknown[];
}

/** Runs `call` over and over until `stop()` says so, tallying how each call ended. */
async function loop(call: (n: number) => Promise<unknown>, stop: () => boolean, tally: Tally): Promise<void> {
  for (let n = 0; !stop(); n++) {
    try {
      await call(n);
      tally.ok++;
    } catch (error) {
      if (isStoreUnavailableError(error)) tally.unavailable++;
      else tally.other.push(error);
    }
  }
}

clusterDescribe('Redis stores through a Redis Cluster failover', () => {
  it('answer or fail with StoreUnavailableError throughout, and answer again once the replica is promoted', async () => {
    const local = cluster!;
    const client = local.client();
    const stores = redisStores(client, { prefix: `f:${uniqueToken()}:`, timeoutMs: 100 });
    const [victim] = await local.masters();
    const onVictim = (key: string) =>
      victim!.slots.some(([from, to]) => keySlotOf(key) >= from && keySlotOf(key) <= to);
    const keys = Array.from({ length: 60 }, (_, i) => `k${i}`);
    const victimKeys = keys.filter(onVictim);
    expect(victimKeys.length).toBeGreaterThan(5);

    // Before: a lock on a key of the victim, its fence noted, released.
    const before = await stores.lock.acquire(victimKeys[0]!, 'before', 10_000);
    expect(before).toBeDefined();
    await stores.lock.release(victimKeys[0]!, 'before');

    const limiter = rateLimiter({ limit: 1_000_000, periodMs: 1_000, store: stores.rateLimit });
    const tallies = { rateLimit: emptyTally(), idempotency: emptyTally(), lock: emptyTally() };
    let stopped = false;
    const stop = () => stopped;
    const load = Promise.all([
      loop((n) => limiter.take(keys[n % keys.length]!), stop, tallies.rateLimit),
      loop(
        (n) => stores.idempotency.claim(`${keys[n % keys.length]!}:${n}`, 'fp', 5_000),
        stop,
        tallies.idempotency,
      ),
      loop(
        async (n) => {
          const key = keys[n % keys.length]!;
          if (await stores.lock.acquire(key, 'loop', 5_000)) await stores.lock.release(key, 'loop');
        },
        stop,
        tallies.lock,
      ),
    ]);
    await new Promise((resolve) => setTimeout(resolve, 300));
    const node = local.nodes.find((n) => n.port === victim!.port)!;
    node.process.kill('SIGKILL');
    await local.ready(30_000); // the replica is promoted, every live node says cluster_state:ok
    // Keep the load on until every key answers again (ioredis refreshes its slot map meanwhile).
    const answeringAgain = await everyKeyAnswers(keys, limiter, 20_000);
    stopped = true;
    await load;

    expect(answeringAgain).toBe(true);
    for (const tally of Object.values(tallies)) {
      expect(tally.other).toEqual([]);
      expect(tally.ok).toBeGreaterThan(0);
    }
    // The failover was felt: calls on the victim's slots failed at their deadline meanwhile.
    expect(
      tallies.rateLimit.unavailable + tallies.idempotency.unavailable + tallies.lock.unavailable,
    ).toBeGreaterThan(0);
    // After it every store answers on the promoted replica's slots, and fences kept increasing. The
    // load's lock on this key may still be held: an acquire whose reply the failover cut off, or a
    // release that failed, leaves the lease to its end (5 s); wait for that, then acquire.
    let after = await stores.lock.acquire(victimKeys[0]!, 'after', 10_000);
    for (const start = Date.now(); after === undefined && Date.now() - start < 7_000; ) {
      await new Promise((resolve) => setTimeout(resolve, 100));
      after = await stores.lock.acquire(victimKeys[0]!, 'after', 10_000);
    }
    expect(after!.fence).toBeGreaterThan(before!.fence);
    expect((await stores.idempotency.claim(`${victimKeys[1]!}:after`, 'fp', 5_000)).status).toBe('claimed');
    expect((await limiter.take(victimKeys[2]!)).allowed).toBe(true);
  }, 90_000);
});

function emptyTally(): Tally {
  return { ok: 0, unavailable: 0, other: [] };
}

/** True once a take on every key succeeds in one pass (passes retried until `timeoutMs`). */
async function everyKeyAnswers(
  keys: readonly string[],
  limiter: ReturnType<typeof rateLimiter>,
  timeoutMs: number,
): Promise<boolean> {
  const started = Date.now();
  while (Date.now() - started < timeoutMs) {
    const results = await Promise.allSettled(keys.map((key) => limiter.take(key)));
    if (results.every((r) => r.status === 'fulfilled')) return true;
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
  return false;
}
