/**
 * A local Redis Cluster of its own for a test file or a benchmark: 3 masters and 3 replicas, each a
 * `redis-server` on free ports (its cluster bus on another, `--cluster-port`), created with
 * `redis-cli --cluster create`, kept in a temporary directory. The shared Redis on 6379 is never
 * touched. Ready once every node reports `cluster_state:ok` and every replica
 * `master_link_status:up` (a replica that has not finished its first sync is never promoted).
 * No test runner here: test/support/redis-cluster.ts adds the vitest hooks and gating.
 */
import { type ChildProcess, execFile, spawn, spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { Cluster, type ClusterOptions, Redis } from 'ioredis';
import { freePorts } from './free-port.js';

const run = promisify(execFile);

/** One node of the cluster. */
export interface ClusterNode {
  readonly port: number;
  /** Its process; `kill('SIGKILL')` it to fail the node over. */
  readonly process: ChildProcess;
}

/** A running local cluster, from {@link launchRedisCluster}. */
export interface LocalCluster {
  readonly nodes: readonly ClusterNode[];
  /** `{ host, port }` of every node: what `new Cluster(...)` takes. */
  readonly startupNodes: readonly { host: string; port: number }[];
  /** A new Cluster client (disconnected by {@link LocalCluster.stop}). */
  client(options?: ClusterOptions): Cluster;
  /** A plain client of one node (disconnected by {@link LocalCluster.stop}). */
  node(port: number): Redis;
  /** The ports of the current masters, each with the slot ranges it serves. */
  masters(): Promise<{ port: number; slots: [number, number][] }[]>;
  /** Resolves once the cluster is `ok` on every live node and every live replica is in sync. */
  ready(timeoutMs?: number): Promise<void>;
  /** Disconnects every client made here, kills every node and removes the cluster's files. Idempotent. */
  stop(): void;
}

/** Whether `redis-server` and `redis-cli` can be run here. */
export const clusterToolsInstalled: boolean = ['redis-server', 'redis-cli'].every(
  (tool) => spawnSync(tool, ['--version'], { stdio: 'ignore' }).status === 0,
);

/**
 * Starts a cluster and resolves once it is ready; `stop()` it when done (it is also stopped when
 * the process exits). Rejects, with every node already stopped, when `redis-cli` cannot create the
 * cluster or it is not ready within 30 s. Check {@link clusterToolsInstalled} first.
 */
export async function launchRedisCluster(): Promise<LocalCluster> {
  const dir = mkdtempSync(join(tmpdir(), 'bulwark-cluster-'));
  const nodes: ClusterNode[] = [];
  const clients: (Redis | Cluster)[] = [];
  const stop = (): void => {
    process.off('exit', stop);
    for (const client of clients) client.disconnect();
    for (const node of nodes) node.process.kill('SIGKILL');
    rmSync(dir, { recursive: true, force: true });
  };
  // Also if the process ends without calling stop (a crash, a test worker's timeout): never leave
  // nodes behind.
  process.once('exit', stop);
  try {
    return await launch(dir, nodes, clients, stop);
  } catch (error) {
    stop();
    throw error;
  }
}

/** Starts the nodes into `nodes`, makes them a cluster, and resolves once it is ready. */
async function launch(
  dir: string,
  nodes: ClusterNode[],
  clients: (Redis | Cluster)[],
  stop: () => void,
): Promise<LocalCluster> {
  const spawnNode = async (): Promise<ClusterNode> => {
    const [port, bus] = (await freePorts(2)) as [number, number];
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
    return { port, process: child };
  };
  for (let i = 0; i < 6; i++) nodes.push(await spawnNode());
  const node = (port: number): Redis => {
    const client = new Redis(port, '127.0.0.1', { maxRetriesPerRequest: 1, retryStrategy: () => 100 });
    client.on('error', () => {});
    clients.push(client);
    return client;
  };
  const admins = new Map<number, Redis>();
  const admin = (port: number): Redis => {
    let client = admins.get(port);
    if (client === undefined) {
      client = node(port);
      admins.set(port, client);
    }
    return client;
  };
  const exited = (n: ClusterNode): boolean => n.process.exitCode !== null || n.process.signalCode !== null;
  // A port found free can be taken by another process before its node binds it (tests start
  // servers and open connections in parallel): a node that exited is started again on other ports.
  await waitFor(async () => {
    for (let i = 0; i < nodes.length; i++) if (exited(nodes[i]!)) nodes[i] = await spawnNode();
    return (await Promise.all(nodes.map(({ port }) => admin(port).ping()))).length === 6;
  }, 30_000);
  await run('redis-cli', [
    '--cluster',
    'create',
    ...nodes.map(({ port }) => `127.0.0.1:${port}`),
    '--cluster-replicas',
    '1',
    '--cluster-yes',
  ]);
  const live = () => nodes.filter((n) => !exited(n));
  const cluster: LocalCluster = {
    nodes,
    stop,
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
          const slots = (await admin(port).cluster('SLOTS')) as unknown as [
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
          const client = admin(port);
          if (!String(await client.cluster('INFO')).includes('cluster_state:ok')) return false;
          const replication = await client.info('replication');
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
