/**
 * Worker scenario for the multi-process harness tests: INCR a shared Redis key `times` times.
 *
 * Before the start barrier each worker INCRs `arrivedKey`; right after it reads that key back,
 * so a working barrier shows every worker `workers` arrivals.
 */
import { Redis } from 'ioredis';
import { runScenario } from '../multi-process.js';

/** Input of this scenario. */
export interface IncrInput {
  readonly url: string;
  readonly key: string;
  readonly arrivedKey: string;
  readonly times: number;
}

/** What each worker reports. */
export interface IncrResult {
  readonly workerIndex: number;
  readonly incremented: number;
  readonly arrivedAtStart: number;
}

runScenario<IncrInput, IncrResult>(async (input, { workerIndex, barrier }) => {
  const client = new Redis(input.url, { maxRetriesPerRequest: 1 });
  try {
    await client.incr(input.arrivedKey);
    await barrier();
    const arrivedAtStart = Number(await client.get(input.arrivedKey));
    let incremented = 0;
    for (let i = 0; i < input.times; i += 1) {
      await client.incr(input.key);
      incremented += 1;
    }
    return { workerIndex, incremented, arrivedAtStart };
  } finally {
    client.disconnect();
  }
});
