/**
 * Four processes take from one key on the shared Redis store at once: the store's atomic decision
 * must admit exactly the burst in total, never one more.
 */
import { expect, it } from 'vitest';
import { runWorkers } from '../support/multi-process.js';
import { useRedis } from '../support/services.js';
import type { TakeInput, TakeResult } from './scenarios/take.js';

const redis = await useRedis();
const entry = new URL('./scenarios/take.ts', import.meta.url);

redis.describe('rate limit across processes', () => {
  it.each(['gcra', 'token-bucket', 'sliding-window'] as const)(
    '%s: 4 workers × 500 takes on one key with burst 100 admit exactly 100',
    async (algorithm) => {
      const input: TakeInput = {
        url: redis.url,
        prefix: redis.prefix,
        key: 'shared',
        takes: 500,
        burst: 100,
        algorithm,
      };
      const results = await runWorkers<TakeResult>({ entry, workers: 4, input, timeoutMs: 30_000 });
      const admitted = results.reduce((sum, r) => sum + r.admitted, 0);
      const refused = results.reduce((sum, r) => sum + r.refused, 0);
      const failed = results.reduce((sum, r) => sum + r.failed, 0);
      console.log(
        `multi-process ${algorithm}: admitted ${admitted} of ${4 * 500} (per worker ${results
          .map((r) => r.admitted)
          .join(' ')}), refused ${refused}, store failures ${failed}`,
      );
      expect(failed).toBe(0);
      expect(admitted).toBe(100);
      expect(refused).toBe(4 * 500 - 100);
    },
  );
});
