/**
 * readThroughCache on real Redis (L2): a black-holed L2 never holds a read past its deadline, a
 * set in one cache reaches another cache on another client, a read racing that set does not bring
 * the old value back, and 1,000 concurrent gets of a cold key run the loader once.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { afterEach, beforeEach, expect, it } from 'vitest';
import { readThroughCache } from '../../src/cache/cache.js';
import { memoryLayer } from '../../src/cache/memory-store.js';
import type { LayerErrorEvent } from '../../src/cache/options.js';
import { redisStores } from '../../src/stores/redis/index.js';
import { deferred } from '../support/deferred.js';
import { type FaultProxy, startFaultProxy } from '../support/fault-proxy.js';
import { useRedis } from '../support/services.js';

const redis = await useRedis();

redis.describe('readThroughCache on real Redis', () => {
  let proxy: FaultProxy;
  beforeEach(async () => {
    proxy = await startFaultProxy({ target: redis.target });
  });
  afterEach(async () => {
    await proxy.close();
  });

  /** A cache over L1 and the Redis layer of a store set on `client`. */
  function cacheOn(client = redis.client(), options: { timeoutMs?: number; fleetLoadWaitMs?: number } = {}) {
    const stores = redisStores(client, { prefix: redis.prefix, timeoutMs: options.timeoutMs ?? 2_000 });
    const errors: LayerErrorEvent[] = [];
    const cache = readThroughCache({
      layers: [memoryLayer({ maxEntries: 1_000 }), stores.cacheLayer],
      ttlMs: 60_000,
      onLayerError: (event) => errors.push(event),
      ...(options.fleetLoadWaitMs === undefined ? {} : { fleetLoadWaitMs: options.fleetLoadWaitMs }),
    });
    return { cache, stores, errors };
  }

  it('L2 black-holed: reads are served by the loader within the L2 deadline, and the failure is reported', async () => {
    const proxied = redis.client({ url: proxy.url(redis.url) });
    await proxied.ping(); // connected before the 100 ms deadlines count
    const { cache, stores, errors } = cacheOn(proxied, { timeoutMs: 100 });
    proxy.pause(); // every byte to and from Redis is held: a paused or partitioned server
    const started = performance.now();
    expect(await cache.get('k', () => 'from the loader')).toBe('from the loader');
    const tookMs = performance.now() - started;
    console.log(`a read with L2 black-holed took ${tookMs.toFixed(0)} ms (deadline 100 ms per L2 call)`);
    expect(tookMs).toBeLessThan(1_000);
    expect(errors.length).toBeGreaterThan(0);
    expect(await cache.get('k', () => 'loader again')).toBe('from the loader'); // L1 still serves
    cache.close();
    proxy.resume();
    await stores.close();
  });

  it('a set in one cache drops the copy another cache holds (another client), and a read racing it does not bring the old value back', async () => {
    const a = cacheOn();
    const b = cacheOn();
    // What b's cache hears, heard on the same connection and channel (in the same dispatch).
    const bHeard: string[] = [];
    b.stores.cacheLayer.subscribe(
      (message) => bHeard.push(message),
      () => bHeard.push('reset'),
    );
    await expect.poll(() => bHeard).toEqual(['reset']); // b's subscription is in place
    expect(await b.cache.get('k', () => 'loaded')).toBe('loaded');
    await a.cache.set('k', 'set by a');
    await expect.poll(() => b.cache.get('k', () => 'loader')).toBe('set by a');

    const slow = deferred<string>();
    const racing = b.cache.get('race', () => slow.promise);
    await sleep(20);
    const heardBefore = bHeard.length;
    await a.cache.set('race', 'new');
    await expect.poll(() => bHeard.length).toBe(heardBefore + 1); // the message reached b
    slow.resolve('old');
    expect(await racing).toBe('old');
    expect(await b.cache.get('race', () => 'loader')).toBe('new');
    expect(await cacheOn().cache.get('race', () => 'loader')).toBe('new'); // L2 kept "new"
    for (const c of [a, b]) {
      c.cache.close();
      await c.stores.close();
    }
  });

  it('1,000 concurrent gets of a cold key run the loader once', async () => {
    const { cache, stores } = cacheOn();
    let calls = 0;
    const loader = async () => {
      calls++;
      await sleep(50);
      return { id: 1 };
    };
    const values = await Promise.all(Array.from({ length: 1_000 }, () => cache.get('cold', loader)));
    console.log(`1,000 concurrent gets of a cold key: ${calls} loader call(s)`);
    expect(calls).toBe(1);
    expect(new Set(values).size).toBe(1);
    cache.close();
    await stores.close();
  });
});
