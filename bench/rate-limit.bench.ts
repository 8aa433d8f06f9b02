/**
 * Rate limiter decisions per second: ours vs rate-limiter-flexible, in one process and run.
 *
 * - In memory (mitata): one hot key, 10 000 keys round-robin, and the refused path, each through
 *   ours `take` (a promise, as with every store; a refusal is a result) and `takeSync` (the in-memory
 *   fast path, no promise); `RateLimiterMemory.consume` returns a promise and rejects on refusal.
 *   Promise cases are awaited per call, so the await of a settled promise is measured too: the floor
 *   every promise-returning limiter pays, shown beside the plain ratio as the ratio above it.
 * - Redis (throughput in 5 rounds of 400 ms slices, the cases taking turns, at concurrency 1 and
 *   64, one ioredis client): ours with the Redis store (GCRA, the 100 ms store deadline on; one
 *   EVALSHA per decision at concurrency 1, the decisions of one tick coalesced into batch calls of
 *   up to 32 at concurrency 64), `RateLimiterRedis`, and a raw `EVALSHA` of `return 1` per
 *   operation (the round-trip ceiling of one call per decision). Allowed path: our blocked-key
 *   memory would answer refusals without Redis, which would not compare round trips.
 * - Redis Cluster (when `redis-server` and `redis-cli` are installed): a local cluster of the
 *   bench's own (3 masters, 3 replicas, stopped at the end), the same ours vs `RateLimiterRedis`
 *   cases through one ioredis `Cluster` client, ours coalescing a tick's decisions per hash slot;
 *   the ratio printed beside the standalone one.
 */
import { rateLimiter } from 'bulwark';
import { redisStores } from 'bulwark/redis';
import { type Cluster, Redis } from 'ioredis';
import { RateLimiterMemory, RateLimiterRedis } from 'rate-limiter-flexible';
import { clusterToolsInstalled, launchRedisCluster } from '../test/support/redis-cluster-nodes.js';
import { deleteKeys } from './servers.js';
import { type Case, interleavedThroughput, machine, measureAll, ns, table } from './support.js';

const KEYS = 10_000;
const keys = Array.from({ length: KEYS }, (_, i) => `user:${i}`);
const noop = () => {};

function memoryCases(): Case[] {
  // Huge bursts so the allowed cases never run dry during the measurement.
  const oursHot = rateLimiter({ limit: 1_000_000, periodMs: 1_000, burst: 1_000_000_000 });
  const oursMany = rateLimiter({
    limit: 1_000_000,
    periodMs: 1_000,
    burst: 1_000_000_000,
    maxKeys: 2 * KEYS,
  });
  const oursRefused = rateLimiter({ limit: 1, periodMs: 3_600_000 });
  oursRefused.takeSync('k');
  const peerHot = new RateLimiterMemory({ points: 1_000_000_000, duration: 3_600 });
  const peerMany = new RateLimiterMemory({ points: 1_000_000_000, duration: 3_600 });
  const peerRefused = new RateLimiterMemory({ points: 1, duration: 3_600 });
  void peerRefused.consume('k');
  const settled = Promise.resolve(undefined);
  let i = 0;
  let j = 0;
  let k = 0;
  return [
    { name: 'await of a settled promise (the floor of any promise API)', fn: () => settled },
    { name: 'bulwark take, one key', fn: () => oursHot.take('k') },
    { name: 'bulwark takeSync, one key', fn: () => oursHot.takeSync('k') },
    { name: 'RateLimiterMemory consume, one key', fn: () => peerHot.consume('k') },
    {
      name: 'bulwark take, 10k keys',
      fn: () => {
        i = (i + 1) % KEYS;
        return oursMany.take(keys[i]!);
      },
    },
    {
      name: 'bulwark takeSync, 10k keys',
      fn: () => {
        k = (k + 1) % KEYS;
        return oursMany.takeSync(keys[k]!);
      },
    },
    {
      name: 'RateLimiterMemory consume, 10k keys',
      fn: () => {
        j = (j + 1) % KEYS;
        return peerMany.consume(keys[j]!);
      },
    },
    { name: 'bulwark take, refused', fn: () => oursRefused.take('k') },
    { name: 'bulwark takeSync, refused', fn: () => oursRefused.takeSync('k') },
    { name: 'RateLimiterMemory consume, refused', fn: () => peerRefused.consume('k').catch(noop) },
  ];
}

interface RedisRow {
  readonly name: string;
  readonly perSecond: [number, number];
}

interface RedisCase {
  readonly name: string;
  readonly op: (n: number) => Promise<unknown>;
}

/**
 * Ours (GCRA, the store deadline on) and `RateLimiterRedis` on `client`, over 1 000 keys
 * round-robin; `where` ends their names.
 */
function limiterCases(client: Redis | Cluster, prefix: string, where: string): RedisCase[] {
  const ours = rateLimiter({
    limit: 1_000_000,
    periodMs: 1_000,
    burst: 1_000_000_000,
    store: redisStores(client, { prefix }).rateLimit,
  });
  const peer = new RateLimiterRedis({
    storeClient: client,
    keyPrefix: `${prefix}rlf`,
    points: 1_000_000_000,
    duration: 3_600,
  });
  const benchKeys = keys.slice(0, 1_000);
  return [
    { name: `bulwark take (Redis store${where}, GCRA)`, op: (n) => ours.take(benchKeys[n % 1_000]!) },
    { name: `RateLimiterRedis consume${where}`, op: (n) => peer.consume(benchKeys[n % 1_000]!) },
  ];
}

/** Decisions per second of each case at concurrency 1 and 64. */
async function measureRedis(cases: readonly RedisCase[]): Promise<RedisRow[]> {
  // Interleaved in slices, so that the machine's drift (a shared VM) hits every case alike.
  const ops = cases.map((c) => c.op);
  const byConcurrency: number[][] = [];
  for (const concurrency of [1, 64]) {
    await interleavedThroughput(ops, concurrency, 1, 150); // warm-up
    byConcurrency.push(await interleavedThroughput(ops, concurrency, 5, 400));
  }
  return cases.map((c, i) => ({
    name: c.name,
    perSecond: [byConcurrency[0]![i]!, byConcurrency[1]![i]!],
  }));
}

async function redisRows(client: Redis): Promise<RedisRow[]> {
  const prefix = `bench:${process.pid}:`;
  const trivial = 'return 1';
  const sha = (await client.script('LOAD', trivial)) as string;
  const rows = await measureRedis([
    ...limiterCases(client, prefix, ''),
    {
      name: 'raw EVALSHA of `return 1`',
      // NOSCRIPT (another process flushed scripts) reloads, so the ceiling stays measurable.
      op: () =>
        client.evalsha(sha, 0).catch(async () => {
          await client.script('LOAD', trivial);
        }),
    },
  ]);
  await deleteKeys(client, prefix);
  return rows;
}

/**
 * The cases on a local Redis Cluster of the bench's own, stopped after; undefined when
 * `redis-server` or `redis-cli` is not installed.
 */
async function clusterRows(): Promise<RedisRow[] | undefined> {
  if (!clusterToolsInstalled) return undefined;
  const cluster = await launchRedisCluster();
  try {
    return await measureRedis(limiterCases(cluster.client(), 'bench:', ' on a Cluster'));
  } finally {
    cluster.stop();
  }
}

/** The ours ÷ peer ratio of two rows at concurrency 1 and 64. */
const ratios = (ours: RedisRow, peer: RedisRow) =>
  [0, 1].map((at) => (ours.perSecond[at]! / peer.perSecond[at]!).toFixed(2));

/** The table of rows: decisions per second at concurrency 1 and 64. */
const rowTable = (rows: readonly RedisRow[]) =>
  table(
    ['case', 'concurrency 1', 'concurrency 64'],
    rows.map((r) => [r.name, kPerSecond(r.perSecond[0]), kPerSecond(r.perSecond[1])]),
  );

const perSecond = (avgNs: number) => `${(1e9 / avgNs / 1e6).toFixed(2)} M/s`;
const kPerSecond = (value: number) => `${(value / 1_000).toFixed(1)} k/s`;

export default async function rateLimitBench(): Promise<string> {
  const results = await measureAll(memoryCases());
  const avg = (name: string) => results.find((r) => r.name === name)!.avgNs;
  const speedup = (ours: string, peer: string) => (avg(peer) / avg(ours)).toFixed(2);
  // Every promise case is awaited per call (~75-200 ns here, more than takeSync's whole decision):
  // the same ratio on the time above that floor shows what each library itself costs.
  const floor = avg('await of a settled promise (the floor of any promise API)');
  const aboveFloor = (ours: string, peer: string) =>
    ((avg(peer) - floor) / Math.max(1, avg(ours) - floor)).toFixed(2);
  const memoryTable = table(
    ['case', 'ns/op', 'decisions/s'],
    results.map((r) => [r.name, ns(r.avgNs), perSecond(r.avgNs)]),
  );
  const memoryRatios = table(
    ['in memory (decisions/s ours ÷ peer)', 'ratio', 'target'],
    [
      ['take, one key', speedup('bulwark take, one key', 'RateLimiterMemory consume, one key'), '≥ 2'],
      [
        'take, one key, above the await floor',
        aboveFloor('bulwark take, one key', 'RateLimiterMemory consume, one key'),
        '(information)',
      ],
      [
        'takeSync, one key',
        speedup('bulwark takeSync, one key', 'RateLimiterMemory consume, one key'),
        '≥ 1.5',
      ],
      ['take, 10k keys', speedup('bulwark take, 10k keys', 'RateLimiterMemory consume, 10k keys'), '≥ 2'],
      [
        'takeSync, 10k keys',
        speedup('bulwark takeSync, 10k keys', 'RateLimiterMemory consume, 10k keys'),
        '≥ 2',
      ],
      ['take, refused', speedup('bulwark take, refused', 'RateLimiterMemory consume, refused'), '≥ 5'],
      [
        'takeSync, refused',
        speedup('bulwark takeSync, refused', 'RateLimiterMemory consume, refused'),
        '≥ 5 (≈ 13 before issue 9)',
      ],
    ],
  );

  let redisSection: string;
  let standaloneRatios = ['—', '—'];
  const url = process.env.REDIS_URL || 'redis://127.0.0.1:6379';
  const client = new Redis(url, { lazyConnect: true, maxRetriesPerRequest: 1, connectTimeout: 1_000 });
  client.on('error', noop);
  try {
    await client.connect();
    const rows = await redisRows(client);
    const [ours, peer, raw] = rows as [RedisRow, RedisRow, RedisRow];
    standaloneRatios = ratios(ours, peer);
    const redisRatios = table(
      ['Redis (decisions/s)', 'concurrency 1', 'concurrency 64', 'target'],
      [
        ['ours ÷ RateLimiterRedis', ...standaloneRatios, '≥ 1'],
        ['ours ÷ raw EVALSHA', ...ratios(ours, raw), '≥ 0.8 at 64'],
      ],
    );
    redisSection = `${rowTable(rows)}\n\n${redisRatios}`;
  } catch (error) {
    redisSection = `Redis at ${url} unavailable (${(error as Error).message}): Redis cases skipped.`;
  } finally {
    client.disconnect();
  }

  let clusterSection: string;
  try {
    const rows = await clusterRows();
    if (rows === undefined) {
      clusterSection = 'redis-server or redis-cli not installed: Redis Cluster cases skipped.';
    } else {
      const clusterRatios = table(
        ['ours ÷ RateLimiterRedis (decisions/s)', 'concurrency 1', 'concurrency 64', 'target'],
        [
          ['Redis Cluster', ...ratios(rows[0]!, rows[1]!), '≥ 1'],
          ['standalone Redis (above)', ...standaloneRatios, '≥ 1'],
        ],
      );
      clusterSection = `${rowTable(rows)}\n\n${clusterRatios}`;
    }
  } catch (error) {
    clusterSection = `the local Redis Cluster failed (${(error as Error).message}): Redis Cluster cases skipped.`;
  }

  const report = `### Rate limiting\n\n${machine()}\n\nIn memory:\n\n${memoryTable}\n\n${memoryRatios}\n\nRedis (allowed path, keys round-robin over 1 000):\n\n${redisSection}\n\nRedis Cluster (local, 3 masters and 3 replicas on this machine; allowed path, keys round-robin over 1 000):\n\n${clusterSection}\n`;
  console.log(report);
  return report;
}
