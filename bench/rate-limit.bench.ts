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
 */
import { rateLimiter } from 'bulwark';
import { redisStores } from 'bulwark/redis';
import { Redis } from 'ioredis';
import { RateLimiterMemory, RateLimiterRedis } from 'rate-limiter-flexible';
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

async function redisRows(client: Redis): Promise<RedisRow[]> {
  const prefix = `bench:${process.pid}:`;
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
  const trivial = 'return 1';
  const sha = (await client.script('LOAD', trivial)) as string;
  const benchKeys = keys.slice(0, 1_000);
  const cases: { name: string; op: (n: number) => Promise<unknown> }[] = [
    { name: 'bulwark take (Redis store, GCRA)', op: (n) => ours.take(benchKeys[n % 1_000]!) },
    { name: 'RateLimiterRedis consume', op: (n) => peer.consume(benchKeys[n % 1_000]!) },
    {
      name: 'raw EVALSHA of `return 1`',
      // NOSCRIPT (another process flushed scripts) reloads, so the ceiling stays measurable.
      op: () =>
        client.evalsha(sha, 0).catch(async () => {
          await client.script('LOAD', trivial);
        }),
    },
  ];
  // Interleaved in slices, so that the machine's drift (a shared VM) hits every case alike.
  const ops = cases.map((c) => c.op);
  const byConcurrency: number[][] = [];
  for (const concurrency of [1, 64]) {
    await interleavedThroughput(ops, concurrency, 1, 150); // warm-up
    byConcurrency.push(await interleavedThroughput(ops, concurrency, 5, 400));
  }
  await deleteKeys(client, prefix);
  return cases.map((c, i) => ({
    name: c.name,
    perSecond: [byConcurrency[0]![i]!, byConcurrency[1]![i]!],
  }));
}

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
  const url = process.env.REDIS_URL || 'redis://127.0.0.1:6379';
  const client = new Redis(url, { lazyConnect: true, maxRetriesPerRequest: 1, connectTimeout: 1_000 });
  client.on('error', noop);
  try {
    await client.connect();
    const rows = await redisRows(client);
    const [ours, peer, raw] = rows as [RedisRow, RedisRow, RedisRow];
    const redisTable = table(
      ['case', 'concurrency 1', 'concurrency 64'],
      rows.map((r) => [r.name, kPerSecond(r.perSecond[0]), kPerSecond(r.perSecond[1])]),
    );
    const redisRatios = table(
      ['Redis (decisions/s)', 'concurrency 1', 'concurrency 64', 'target'],
      [
        [
          'ours ÷ RateLimiterRedis',
          (ours.perSecond[0] / peer.perSecond[0]).toFixed(2),
          (ours.perSecond[1] / peer.perSecond[1]).toFixed(2),
          '≥ 1',
        ],
        [
          'ours ÷ raw EVALSHA',
          (ours.perSecond[0] / raw.perSecond[0]).toFixed(2),
          (ours.perSecond[1] / raw.perSecond[1]).toFixed(2),
          '≥ 0.8 at 64',
        ],
      ],
    );
    redisSection = `${redisTable}\n\n${redisRatios}`;
  } catch (error) {
    redisSection = `Redis at ${url} unavailable (${(error as Error).message}): Redis cases skipped.`;
  } finally {
    client.disconnect();
  }

  const report = `### Rate limiting\n\n${machine()}\n\nIn memory:\n\n${memoryTable}\n\n${memoryRatios}\n\nRedis (allowed path, keys round-robin over 1 000):\n\n${redisSection}\n`;
  console.log(report);
  return report;
}
