/**
 * Worker scenario for the multi-process rate-limit test: one process of several, each with its own
 * ioredis client and limiter on the shared Redis store, taking from one key as fast as it can.
 */
import { Redis } from 'ioredis';
import { rateLimiter } from '../../../src/rate-limit/rate-limiter.js';
import { redisStores } from '../../../src/stores/redis/index.js';
import { runScenario } from '../../support/multi-process.js';

/** Input of this scenario. */
export interface TakeInput {
  readonly url: string;
  readonly prefix: string;
  readonly key: string;
  readonly takes: number;
  readonly burst: number;
  readonly algorithm: 'gcra' | 'token-bucket' | 'sliding-window';
}

/** What each worker reports. */
export interface TakeResult {
  readonly workerIndex: number;
  readonly admitted: number;
  readonly refused: number;
  readonly failed: number;
}

runScenario<TakeInput, TakeResult>(async (input, { workerIndex, barrier }) => {
  const client = new Redis(input.url, { maxRetriesPerRequest: 1 });
  try {
    // Negligible refill: the burst per hour, so the test's few seconds add nothing.
    const limiter = rateLimiter({
      algorithm: input.algorithm,
      limit: input.burst,
      periodMs: 3_600_000,
      store: redisStores(client, { prefix: input.prefix, timeoutMs: 2_000 }).rateLimit,
    });
    await client.ping();
    await barrier();
    let admitted = 0;
    let refused = 0;
    let failed = 0;
    // Eight takes in flight at a time per process, so the processes interleave at the server.
    const inFlight = 8;
    let next = 0;
    await Promise.all(
      Array.from({ length: inFlight }, async () => {
        while (next < input.takes) {
          next += 1;
          try {
            if ((await limiter.take(input.key)).allowed) admitted += 1;
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
