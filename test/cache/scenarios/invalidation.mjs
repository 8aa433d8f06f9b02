// Worker of the multi-process invalidation test, run under plain node on the built dist/: two
// processes cache one key in their L1; after a barrier, worker 1 sets a new value, and worker 0
// reads until its L1 copy was dropped and it sees the new value (bounded). Reports what worker 0
// saw and how long it took.
import { Redis } from 'ioredis';
import { memoryLayer, readThroughCache } from '../../../dist/index.js';
import { redisStores } from '../../../dist/stores/redis/index.js';
import { runScenario } from '../../support/scenario-worker.mjs';

runScenario(async (input, { barrier, workerIndex }) => {
  const redis = new Redis(input.redisUrl, { maxRetriesPerRequest: 1 });
  const stores = redisStores(redis, { prefix: input.prefix, timeoutMs: 2_000 });
  const cache = readThroughCache({ layers: [memoryLayer({ maxEntries: 100 }), stores.cacheLayer], ttlMs: 600_000 });
  try {
    const first = await cache.get('k', () => 'v1');
    await new Promise((resolve) => setTimeout(resolve, 200)); // the subscription is in place
    await barrier();
    if (workerIndex === 1) {
      await cache.set('k', 'v2');
      return { first, seen: 'v2', afterMs: 0 };
    }
    const started = performance.now();
    let seen = first;
    while (seen !== 'v2' && performance.now() - started < 5_000) {
      await new Promise((resolve) => setTimeout(resolve, 5));
      seen = await cache.get('k', () => 'loader');
    }
    return { first, seen, afterMs: Math.round(performance.now() - started) };
  } finally {
    cache.close();
    await stores.close();
    redis.disconnect();
  }
});
