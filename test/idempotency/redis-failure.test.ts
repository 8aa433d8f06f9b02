/**
 * The Redis idempotency store when Redis misbehaves, through our fault proxy: paused (a black
 * hole) and connections cut. Every call must fail with `StoreUnavailableError` from the store's
 * own deadline (never a refusal, a mismatch or a free key), and work again once Redis is back.
 *
 * Real time against a real server: the upper bound is the deadline plus a generous slack.
 */
import { performance } from 'node:perf_hooks';
import { setTimeout as sleep } from 'node:timers/promises';
import { afterEach, beforeEach, expect, it } from 'vitest';
import { isStoreUnavailableError, isTimeoutError } from '../../src/core/errors.js';
import type { ClaimResult } from '../../src/idempotency/store.js';
import { redisStores } from '../../src/stores/redis/index.js';
import { type FaultProxy, startFaultProxy } from '../support/fault-proxy.js';
import { useRedis } from '../support/services.js';

const redis = await useRedis();
const TIMEOUT_MS = 100;
const SLACK_MS = 400;

function tokenOf(result: ClaimResult): string {
  if (result.status !== 'claimed') throw new Error(`expected a claim, got ${JSON.stringify(result)}`);
  return result.token;
}

/** Runs `call`, returning its error and how long it took. */
async function failure(call: () => Promise<unknown>): Promise<{ error: unknown; ms: number }> {
  const start = performance.now();
  try {
    const value = await call();
    throw new Error(`expected a failure, got ${JSON.stringify(value)}`);
  } catch (error) {
    return { error, ms: performance.now() - start };
  }
}

redis.describe('Redis idempotency store under faults', () => {
  let proxy: FaultProxy;

  beforeEach(async () => {
    proxy = await startFaultProxy({ target: redis.target });
  });
  afterEach(async () => {
    await proxy.close();
  });

  function storesThroughProxy() {
    // ioredis defaults: offline queue on, 20 retries per request. The store deadline must cut that.
    const client = redis.client({ url: proxy.url(redis.url) });
    return { client, stores: redisStores(client, { prefix: redis.prefix, timeoutMs: TIMEOUT_MS }) };
  }

  it('paused Redis: claim and complete reject with StoreUnavailableError at the deadline', async () => {
    const { stores } = storesThroughProxy();
    const store = stores.idempotency;
    const token = tokenOf(await store.claim('k', 'fp', 5_000));
    proxy.pause();
    for (const call of [
      () => store.claim('other', 'fp', 5_000),
      () => store.complete('k', token, 'r', 60_000),
      () => store.renew('k', token, 5_000),
      () => store.release('k', token),
    ]) {
      const { error, ms } = await failure(call);
      console.log(`paused: rejected after ${ms.toFixed(1)} ms (deadline ${TIMEOUT_MS} ms)`);
      expect(isStoreUnavailableError(error)).toBe(true);
      expect((error as Error).message).toBe(`Redis did not answer within ${TIMEOUT_MS} ms`);
      expect(isTimeoutError((error as Error).cause)).toBe(true);
      expect(ms).toBeGreaterThanOrEqual(TIMEOUT_MS - 1);
      expect(ms).toBeLessThan(TIMEOUT_MS + SLACK_MS);
    }
    expect(proxy.connections).toBe(1); // still paused: the deadline answered
    proxy.resume();
    // The held commands still ran, late and in order: the owner's complete stored its result (what
    // the owner asked for), so the renew and release after it were refused. Nothing else changed.
    await expect.poll(() => store.claim('k', 'fp', 5_000)).toEqual({ status: 'completed', result: 'r' });
    expect((await store.claim('other', 'fp', 5_000)).status).toBe('in_progress');
    await stores.close();
  });

  it('connections cut and refused: StoreUnavailableError within the deadline, then it works again', async () => {
    const { client, stores } = storesThroughProxy();
    const store = stores.idempotency;
    const token = tokenOf(await store.claim('k', 'fp', 5_000));
    proxy.refuse(true);
    proxy.cut({ reset: true });
    for (const call of [
      () => store.claim('k2', 'fp', 5_000),
      () => store.complete('k', token, 'r', 60_000),
    ]) {
      const { error, ms } = await failure(call);
      console.log(`cut: rejected after ${ms.toFixed(1)} ms`);
      expect(isStoreUnavailableError(error)).toBe(true);
      expect(ms).toBeLessThan(TIMEOUT_MS + SLACK_MS);
    }
    proxy.refuse(false);
    await expect.poll(() => client.status, { timeout: 10_000 }).toBe('ready');
    const complete = () =>
      store.complete('k', token, 'r', 60_000).then(
        (done) => String(done),
        () => 'failed',
      );
    await expect.poll(complete, { timeout: 10_000 }).toBe('true');
    expect(await store.claim('k', 'fp', 5_000)).toEqual({ status: 'completed', result: 'r' });
    await stores.close();
  });

  it('a dropped subscriber loses notifications only while down: it resubscribes after reconnecting', async () => {
    const { stores } = storesThroughProxy();
    const direct = redisStores(redis.client(), { prefix: redis.prefix }).idempotency;
    let woken = 0;
    stores.idempotency.watch('k', () => woken++);
    await expect.poll(() => woken).toBe(1); // subscribed: the watcher looks once
    proxy.cut({ reset: true });
    // Resubscribed once reconnected: the watcher looks again (what was published meanwhile was lost).
    await expect.poll(() => woken, { timeout: 10_000 }).toBeGreaterThanOrEqual(2);
    const resubscribed = woken;
    // And a release wakes it (polled: the client whose claim marks the key reconnects on its own).
    await expect
      .poll(
        async () => {
          const token = tokenOf(await direct.claim('k', 'fp', 5_000));
          // The waiting process's claim finds the key in progress and marks it (once reconnected).
          await stores.idempotency.claim('k', 'fp', 5_000).catch(() => undefined);
          await direct.release('k', token);
          await sleep(20);
          return woken > resubscribed;
        },
        { timeout: 10_000, interval: 50 },
      )
      .toBe(true);
    expect(proxy.accepted).toBeGreaterThanOrEqual(3); // the client, its subscriber, and a reconnection
    await stores.close();
  });
});
