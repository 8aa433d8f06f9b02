/**
 * The cache across processes: fleet-wide stampede protection (4 processes × 250 concurrent gets
 * of one cold key, with `fleetLoadWaitMs`: the loader runs once in all), and a set in one process
 * dropping another process's L1 copy. Workers run the built dist/ under plain node.
 */
import { expect, it } from 'vitest';
import { runWorkers } from '../support/multi-process.js';
import { useRedis } from '../support/services.js';

const redis = await useRedis();
const entry = new URL('./scenarios/stampede.mjs', import.meta.url);
const invalidation = new URL('./scenarios/invalidation.mjs', import.meta.url);

redis.describe('the cache across processes on Redis', () => {
  it('4 processes × 250 gets of a cold key with fleet-wide protection: one load in all', async () => {
    const input = { redisUrl: redis.url, prefix: redis.prefix, gets: 250, loadMs: 200 };
    const results = await runWorkers<{ wrong: number }>({ entry, workers: 4, input, timeoutMs: 60_000 });
    const loads = Number(await redis.admin().get(`${redis.prefix}loads`));
    const wrong = results.reduce((sum, r) => sum + r.wrong, 0);
    console.log(
      `multi-process cold-key stampede (4 × 250 gets, fleet-wide): ${loads} load(s), ${wrong} wrong values`,
    );
    expect(wrong).toBe(0);
    expect(loads).toBe(1);
  });

  it('a set in one process drops the L1 copy of another', async () => {
    const input = { redisUrl: redis.url, prefix: redis.prefix };
    const results = await runWorkers<{ first: string; seen: string; afterMs: number }>({
      entry: invalidation,
      workers: 2,
      input,
      timeoutMs: 30_000,
    });
    console.log(
      `invalidation across processes: the other process saw ${results[0]!.seen} after ${results[0]!.afterMs} ms`,
    );
    expect(results.map((r) => [r.first, r.seen])).toEqual([
      ['v1', 'v2'],
      ['v1', 'v2'],
    ]);
  });
});
