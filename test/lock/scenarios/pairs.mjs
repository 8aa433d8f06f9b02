// Worker of the multi-process withLocks test, under plain node on the built dist/: even workers
// lock ['a', 'b'], odd ones ['b', 'a'] (the classic deadlock if taken in the given order), and each
// section read-modify-writes a plain Redis counter; an atomic gauge records overlaps.
import { Redis } from 'ioredis';
import { distributedLock } from '../../../dist/index.js';
import { redisStores } from '../../../dist/stores/redis/index.js';
import { runScenario } from '../../support/scenario-worker.mjs';

runScenario(async (input, { workerIndex, barrier }) => {
  const redis = new Redis(input.redisUrl, { maxRetriesPerRequest: 1 });
  const stores = redisStores(redis, { prefix: input.prefix, timeoutMs: 2_000 });
  const locks = distributedLock({ store: stores.lock });
  const keys = workerIndex % 2 === 0 ? ['a', 'b'] : ['b', 'a'];
  const counter = `${input.prefix}pairs`;
  let overlaps = 0;
  let failures = 0;
  try {
    await barrier();
    for (let i = 0; i < input.sections; i++) {
      try {
        await locks.withLocks(
          keys,
          async () => {
            if ((await redis.incr(`${input.prefix}inside`)) !== 1) overlaps += 1;
            const n = Number((await redis.get(counter)) ?? '0');
            await new Promise((resolve) => setImmediate(resolve));
            await redis.set(counter, String(n + 1));
            await redis.decr(`${input.prefix}inside`);
          },
          { ttlMs: 10_000, waitMs: 60_000 },
        );
      } catch (error) {
        failures += 1;
        if (failures === 1) console.error(error);
      }
    }
    return { overlaps, failures };
  } finally {
    await stores.close();
    redis.disconnect();
  }
});
