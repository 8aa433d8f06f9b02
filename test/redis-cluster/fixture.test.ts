/**
 * The local cluster fixture itself: six nodes, three masters covering all 16 384 slots, replicas
 * in sync, and a Cluster client that routes by slot.
 */
import { expect, it } from 'vitest';
import { clusterDescribe, useRedisCluster } from '../support/redis-cluster.js';

const cluster = await useRedisCluster();

clusterDescribe('local Redis Cluster fixture', () => {
  it('starts 3 masters covering every slot, each with a replica in sync, and routes a client', async () => {
    const masters = await cluster!.masters();
    expect(masters).toHaveLength(3);
    const covered = masters.flatMap((m) => m.slots).reduce((n, [from, to]) => n + to - from + 1, 0);
    expect(covered).toBe(16_384);
    const client = cluster!.client();
    await client.set('{a}x', '1');
    await client.set('{b}x', '2');
    expect(await client.get('{a}x')).toBe('1');
    expect(await client.get('{b}x')).toBe('2');
  });
});
