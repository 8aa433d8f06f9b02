/**
 * Four processes take at once through their own Cluster clients on a local Redis Cluster: the
 * store's atomic decisions admit exactly the burst per key, never one more — on one key, and on
 * 100 keys spread over all three masters (no failover during these runs). Workers run the built
 * dist/ under plain node.
 */
import { expect, it } from 'vitest';
import { runWorkers } from '../support/multi-process.js';
import { clusterDescribe, useRedisCluster } from '../support/redis-cluster.js';
import { uniqueToken } from '../support/service-env.js';
import { keySlotOf } from '../support/slot-checked.js';

const cluster = await useRedisCluster();
const entry = new URL('./scenarios/take.mjs', import.meta.url);

interface TakeResult {
  readonly workerIndex: number;
  readonly admitted: Record<string, number>;
  readonly refused: number;
  readonly failed: number;
}

async function run(keys: readonly string[], burst: number, algorithm: string) {
  const input = {
    nodes: cluster!.startupNodes,
    prefix: `mp:${uniqueToken()}:`,
    keys,
    takes: 500,
    burst,
    algorithm,
  };
  const results = await runWorkers<TakeResult>({ entry, workers: 4, input, timeoutMs: 60_000 });
  const admitted = new Map(keys.map((key) => [key, 0]));
  for (const r of results)
    for (const [key, n] of Object.entries(r.admitted)) admitted.set(key, admitted.get(key)! + n);
  return {
    admitted,
    refused: results.reduce((sum, r) => sum + r.refused, 0),
    failed: results.reduce((sum, r) => sum + r.failed, 0),
  };
}

clusterDescribe('rate limit across processes on a Redis Cluster', () => {
  it.each(['gcra', 'token-bucket', 'sliding-window'] as const)(
    '%s: 4 workers × 500 takes on one key with burst 100 admit exactly 100',
    async (algorithm) => {
      const { admitted, refused, failed } = await run(['shared'], 100, algorithm);
      expect(failed).toBe(0);
      expect(admitted.get('shared')).toBe(100);
      expect(refused).toBe(4 * 500 - 100);
    },
  );

  it('4 workers × 500 takes over 100 keys on all three masters, burst 10: exactly 10 per key', async () => {
    const keys = Array.from({ length: 100 }, (_, i) => `user:${i}`);
    const masters = await cluster!.masters();
    const owners = new Set(
      keys.map(
        (key) =>
          masters.find((m) => m.slots.some(([a, b]) => keySlotOf(key) >= a && keySlotOf(key) <= b))!.port,
      ),
    );
    expect(owners.size).toBe(3);
    const { admitted, refused, failed } = await run(keys, 10, 'gcra');
    expect(failed).toBe(0);
    expect([...admitted.values()].filter((n) => n !== 10)).toEqual([]);
    expect(refused).toBe(4 * 500 - 100 * 10);
  });
});
