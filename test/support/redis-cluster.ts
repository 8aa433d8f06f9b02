/**
 * A Redis Cluster of the test file's own (see {@link launchRedisCluster}: 3 masters and 3 replicas
 * on free ports, the shared Redis on 6379 never touched), stopped after the file.
 *
 * Gated on `redis-server` and `redis-cli` being installed: without them the suites are skipped
 * with a loud notice, and fail under CI (`REQUIRE_SERVICES=1`).
 */
import { afterAll, describe } from 'vitest';
import { clusterToolsInstalled, type LocalCluster, launchRedisCluster } from './redis-cluster-nodes.js';
import { requireServices } from './service-env.js';

export { type ClusterNode, clusterToolsInstalled, type LocalCluster } from './redis-cluster-nodes.js';

/**
 * `describe` of the cluster suites: skipped with a loud notice when the tools are missing, except
 * under CI, where the suite runs (and fails in {@link startRedisCluster}).
 */
export function clusterDescribe(name: string, factory: () => void): void {
  if (!clusterToolsInstalled && !requireServices) {
    console.error(
      `SKIPPING "${name}": redis-server and redis-cli are not installed (apt-get install redis-server).`,
    );
  }
  describe.skipIf(!clusterToolsInstalled && !requireServices)(name, factory);
}

/**
 * Starts the cluster; stops every node and client, and removes its files, after the file. Call it
 * at the top level of the file (`await`), where `afterAll` registers for the file: from inside a
 * hook or a test nothing would stop the nodes. Use {@link useRedisCluster} for the gating.
 */
export async function startRedisCluster(): Promise<LocalCluster> {
  const cluster = await launchRedisCluster();
  afterAll(cluster.stop);
  return cluster;
}

/**
 * The file's cluster, or undefined when the tools are missing outside CI (its suites, declared
 * with {@link clusterDescribe}, are then skipped). Call once, at the top level of the file.
 */
export async function useRedisCluster(): Promise<LocalCluster | undefined> {
  if (!clusterToolsInstalled && !requireServices) return undefined;
  return startRedisCluster();
}
