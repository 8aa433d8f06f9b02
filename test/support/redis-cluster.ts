/**
 * A Redis Cluster of the test file's own: 3 masters and 3 replicas, each a `redis-server` on free
 * ports (its cluster bus on another, `--cluster-port`), created with `redis-cli --cluster create`,
 * kept in a temporary directory and killed after the file. The shared Redis on 6379 is never
 * touched. Ready once every node reports `cluster_state:ok` and every replica
 * `master_link_status:up` (a replica that has not finished its first sync is never promoted).
 *
 * Gated on `redis-server` and `redis-cli` being installed: without them the suites are skipped
 * with a loud notice, and fail under CI (`REQUIRE_SERVICES=1`).
 */
import { type ChildProcess, execFile, spawn, spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { Cluster, type ClusterOptions, Redis } from 'ioredis';
import { afterAll, describe } from 'vitest';
import { freePort } from './free-port.js';
import { requireServices } from './service-env.js';

const run = promisify(execFile);

/** One node of the cluster. */
export interface ClusterNode {
  readonly port: number;
  /** Its process; `kill('SIGKILL')` it to fail the node over. */
  readonly process: ChildProcess;
}

/** A running local cluster, from {@link startRedisCluster}. */
export interface LocalCluster {
  readonly nodes: readonly ClusterNode[];
  /** `{ host, port }` of every node: what `new Cluster(...)` takes. */
  readonly startupNodes: readonly { host: string; port: number }[];
  /** A new Cluster client (disconnected after the file). */
  client(options?: ClusterOptions): Cluster;
  /** A plain client of one node (disconnected after the file). */
  node(port: number): Redis;
  /** The ports of the current masters, each with the slot ranges it serves. */
  masters(): Promise<{ port: number; slots: [number, number][] }[]>;
  /** Resolves once the cluster is `ok` on every live node and every live replica is in sync. */
  ready(timeoutMs?: number): Promise<void>;
}

/** Whether `redis-server` and `redis-cli` can be run here. */
export const clusterToolsInstalled: boolean = ['redis-server', 'redis-cli'].every(
  (tool) => spawnSync(tool, ['--version'], { stdio: 'ignore' }).status === 0,
);

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
  const dir = mkdtempSync(join(tmpdir(), 'bulwark-cluster-'));
  const nodes: ClusterNode[] = [];
  const clients: (Redis | Cluster)[] = [];
  const stop = (): void => {
    for (const client of clients) client.disconnect();
    for (const node of nodes) node.process.kill('SIGKILL');
    rmSync(dir, { recursive: true, force: true });
  };
  afterAll(stop);
  // Also if the worker ends without running afterAll (a crash, a timeout): never leave nodes behind.
  process.once('exit', stop);
  for (let i = 0; i < 6; i++) {
    const port = await freePort();
    const bus = await freePort();
    const child = spawn(
      'redis-server',
      [
        '--port',
        String(port),
        '--cluster-port',
        String(bus),
        '--bind',
        '127.0.0.1',
        '--cluster-enabled',
        'yes',
        '--cluster-config-file',
        join(dir, `nodes-${port}.conf`),
        '--cluster-node-timeout',
        '1000',
        '--dir',
        dir,
        '--save',
        '',
        '--appendonly',
        'no',
      ],
      { stdio: 'ignore' },
    );
    nodes.push({ port, process: child });
  }
  const node = (port: number): Redis => {
    const client = new Redis(port, '127.0.0.1', { maxRetriesPerRequest: 1, retryStrategy: () => 100 });
    client.on('error', () => {});
    clients.push(client);
    return client;
  };
  const admins = new Map(nodes.map(({ port }) => [port, node(port)]));
  await waitFor(
    async () => (await Promise.all([...admins.values()].map((c) => c.ping()))).length === 6,
    10_000,
  );
  await run('redis-cli', [
    '--cluster',
    'create',
    ...nodes.map(({ port }) => `127.0.0.1:${port}`),
    '--cluster-replicas',
    '1',
    '--cluster-yes',
  ]);
  const live = () => nodes.filter((n) => n.process.exitCode === null && n.process.signalCode === null);
  const cluster: LocalCluster = {
    nodes,
    startupNodes: nodes.map(({ port }) => ({ host: '127.0.0.1', port })),
    client(options) {
      const client = new Cluster(cluster.startupNodes as { host: string; port: number }[], options);
      client.on('error', () => {});
      clients.push(client);
      return client;
    },
    node,
    async masters() {
      for (const { port } of live()) {
        try {
          const slots = (await admins.get(port)!.cluster('SLOTS')) as unknown as [
            number,
            number,
            [string, number],
          ][];
          const byPort = new Map<number, [number, number][]>();
          for (const [from, to, [, masterPort]] of slots) {
            byPort.set(masterPort, [...(byPort.get(masterPort) ?? []), [from, to]]);
          }
          return [...byPort].map(([masterPort, ranges]) => ({ port: masterPort, slots: ranges }));
        } catch {
          // that node is down or not ready: ask the next
        }
      }
      throw new Error('no node of the cluster answers CLUSTER SLOTS');
    },
    async ready(timeoutMs = 30_000) {
      await waitFor(async () => {
        for (const { port } of live()) {
          const admin = admins.get(port)!;
          if (!String(await admin.cluster('INFO')).includes('cluster_state:ok')) return false;
          const replication = await admin.info('replication');
          if (replication.includes('role:slave') && !replication.includes('master_link_status:up'))
            return false;
        }
        return true;
      }, timeoutMs);
    },
  };
  await cluster.ready();
  return cluster;
}

/** Polls `check` every 100 ms until it resolves true; throws after `timeoutMs`. */
async function waitFor(check: () => Promise<boolean>, timeoutMs: number): Promise<void> {
  const started = Date.now();
  for (;;) {
    try {
      if (await check()) return;
    } catch {
      // not yet
    }
    if (Date.now() - started > timeoutMs)
      throw new Error(`the local Redis Cluster was not ready in ${timeoutMs} ms`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

/**
 * The file's cluster, or undefined when the tools are missing outside CI (its suites, declared
 * with {@link clusterDescribe}, are then skipped). Call once, at the top level of the file.
 */
export async function useRedisCluster(): Promise<LocalCluster | undefined> {
  if (!clusterToolsInstalled && !requireServices) return undefined;
  return startRedisCluster();
}
