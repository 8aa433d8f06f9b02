// Worker of the multi-process rate-limit test on a Redis Cluster, run under plain node on the
// built dist/: one process of several, each with its own ioredis Cluster client and limiter on
// the Redis store, taking round-robin over the given keys with eight takes in flight, and
// counting what was admitted per key.
import { Cluster } from 'ioredis';
import { rateLimiter } from '../../../dist/index.js';
import { redisStores } from '../../../dist/stores/redis/index.js';
import { runScenario } from '../../support/scenario-worker.mjs';

runScenario(async (input, { workerIndex, barrier }) => {
  const client = new Cluster(input.nodes, { redisOptions: { maxRetriesPerRequest: 1 } });
  client.on('error', () => {});
  try {
    // Negligible refill: the burst per hour, so the test's few seconds add nothing.
    const limiter = rateLimiter({
      algorithm: input.algorithm,
      limit: input.burst,
      periodMs: 3_600_000,
      store: redisStores(client, { prefix: input.prefix, timeoutMs: 2_000 }).rateLimit,
    });
    await Promise.all(input.keys.map((key) => limiter.peek(key))); // connected to every master
    await barrier();
    const admitted = Object.fromEntries(input.keys.map((key) => [key, 0]));
    let refused = 0;
    let failed = 0;
    let next = 0;
    await Promise.all(
      Array.from({ length: 8 }, async () => {
        while (next < input.takes) {
          const key = input.keys[(next + workerIndex) % input.keys.length];
          next += 1;
          try {
            if ((await limiter.take(key)).allowed) admitted[key] += 1;
            else refused += 1;
          } catch {
            failed += 1;
          }
        }
      }),
    );
    return { workerIndex, admitted, refused, failed };
  } finally {
    client.disconnect();
  }
});
