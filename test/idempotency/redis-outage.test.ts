/**
 * `idempotency()` on the Redis store when Redis misbehaves: a store outage answers within the
 * store's deadline and the handler never runs; a lost wake-up (the subscriber's connection black-
 * holed) still lets a waiting duplicate get the result, by polling.
 */
import { performance } from 'node:perf_hooks';
import { afterEach, beforeEach, expect, it, vi } from 'vitest';
import { isStoreUnavailableError } from '../../src/core/errors.js';
import { idempotency } from '../../src/idempotency/idempotency.js';
import { redisStores } from '../../src/stores/redis/index.js';
import { type FaultProxy, startFaultProxy } from '../support/fault-proxy.js';
import { useRedis } from '../support/services.js';

const redis = await useRedis();

redis.describe('idempotency on Redis under faults', () => {
  let proxy: FaultProxy;
  beforeEach(async () => {
    proxy = await startFaultProxy({ target: redis.target });
  });
  afterEach(async () => {
    await proxy.close();
  });

  it('Redis paused: the call rejects with StoreUnavailableError within the store deadline; the handler never runs', async () => {
    const client = redis.client({ url: proxy.url(redis.url) });
    const stores = redisStores(client, { prefix: redis.prefix, timeoutMs: 150 });
    const payments = idempotency({ store: stores.idempotency });
    expect(await payments.execute('warm', 1, () => 'ok')).toBe('ok');
    proxy.pause();
    const handler = vi.fn(() => 'charged');
    const started = performance.now();
    const error = await payments.execute('k', 1, handler).catch((e: unknown) => e);
    const elapsed = performance.now() - started;
    console.log(
      `idempotency with Redis paused: StoreUnavailableError after ${elapsed.toFixed(0)} ms (deadline 150 ms)`,
    );
    expect(isStoreUnavailableError(error)).toBe(true);
    expect(handler).not.toHaveBeenCalled();
    proxy.resume();
    // The claim that timed out may still have landed after the resume: its outcome is unknown, so
    // it may hold 'k' for one lease, like a crashed owner. Another key shows the store is back.
    expect(await payments.execute('after', 1, handler)).toBe('charged');
    await stores.close();
  });

  it("a lost wake-up (the waiter's subscriber black-holed) still delivers the result by polling", async () => {
    const owner = redisStores(redis.client(), { prefix: redis.prefix, timeoutMs: 2_000 });
    const waiterClient = redis.client();
    // The waiter's subscriber connects through the proxy; its commands go straight to Redis.
    waiterClient.duplicate = () => redis.client({ url: proxy.url(redis.url) });
    const waiter = redisStores(waiterClient, { prefix: redis.prefix, timeoutMs: 2_000 });
    let release!: () => void;
    const gate = new Promise<void>((resolve) => {
      release = resolve;
    });
    const first = idempotency({ store: owner.idempotency }).execute('k', 'req', async () => {
      await gate;
      return 'the result';
    });
    await expect.poll(() => redis.admin().exists(owner.idempotency.keyOf('k'))).toBe(1);
    const duplicate = idempotency({ store: waiter.idempotency, maxWaitMs: 10_000 }).execute(
      'k',
      'req',
      () => 'ran twice',
    );
    await expect.poll(() => proxy.connections).toBe(1); // the subscriber is up, through the proxy
    proxy.pause();
    release();
    expect(await first).toBe('the result');
    expect(await duplicate).toBe('the result');
    proxy.resume();
    await owner.close();
    await waiter.close();
  });
});
