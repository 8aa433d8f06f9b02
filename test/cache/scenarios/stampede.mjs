// Worker of the multi-process cache test, run under plain node on the built dist/: one process of
// several, each sending `gets` concurrent gets of one cold key at the same moment, with fleet-wide
// stampede protection. Counts the loader's calls in a Redis counter shared by all processes.
import { Redis } from 'ioredis';
import { memoryLayer, readThroughCache } from '../../../dist/index.js';
import { redisStores } from '../../../dist/stores/redis/index.js';
import { runScenario } from '../../support/scenario-worker.mjs';

runScenario(async (input, { barrier }) => {
  const redis = new Redis(input.redisUrl, { maxRetriesPerRequest: 1 });
  const stores = redisStores(redis, { prefix: input.prefix, timeoutMs: 2_000 });
  const cache = readThroughCache({
    layers: [memoryLayer({ maxEntries: 100 }), stores.cacheLayer],
    ttlMs: 60_000,
    fleetLoadWaitMs: 5_000,
  });
  const loader = async () => {
    await redis.incr(`${input.prefix}loads`);
    await new Promise((resolve) => setTimeout(resolve, input.loadMs));
    return { price: 42 };
  };
  try {
    await redis.ping();
    await barrier();
    const values = await Promise.all(Array.from({ length: input.gets }, () => cache.get('cold', loader)));
    return { wrong: values.filter((v) => v?.price !== 42).length };
  } finally {
    cache.close();
    await stores.close();
    redis.disconnect();
  }
});
