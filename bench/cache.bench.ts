/**
 * Read-through cache: ours (`readThroughCache`) beside bentocache 1.6.1, in one process and run.
 *
 * - **L1 hit** (mitata): one warm key through ours (a `memoryLayer` only) and bentocache (its
 *   memory driver only: `getOrSet` with the default `serialize: true`, `getOrSet` with
 *   `serialize: false`, and `get`), the same 60 s TTL, no grace for either; beside a floor, a `Map`
 *   of entries with an expiry check plus a hand-written singleflight (a `Map` of promises deleted
 *   in `finally`), answering a hit with a resolved promise. The cases run twice, in one order then
 *   in the other, and each is reported as the mean of its two passes. Target: ours ≥ 10 ×
 *   bentocache's `getOrSet` hits per second.
 * - **L1 + L2 on Redis**, one call at a time: per fresh key, a cold `get` (both layers miss, the
 *   loader runs, the value is written to both), then the same key again (an L1 hit); then each of
 *   those keys through a second cache instance over the same Redis prefix, with an empty L1 (an L2
 *   hit). Ours on `redisStores(client).cacheLayer`, bentocache with its redis driver, each on an
 *   ioredis connection and a key prefix of its own on the same Redis. Commands counted where they
 *   leave each client. The contenders run in interleaved rounds, so a host whose speed drifts
 *   (CPU steal on a shared VM) slows them alike. No target: reported as measured.
 * - **Stampede**: 1,000 concurrent `get`s of one cold key whose loader waits 50 ms of real time
 *   (`setTimeout`); loader calls and wall time until every caller has its value, ours vs
 *   bentocache vs the hand-written floor, memory only and L1 + L2 on Redis, several repetitions
 *   with fresh keys, the contenders interleaved. Targets (memory only): ours 1 loader call and
 *   ≤ 55 ms (median over the repetitions).
 */
import { performance } from 'node:perf_hooks';
import { setTimeout as sleep } from 'node:timers/promises';
import { BentoCache, bentostore } from 'bentocache';
import { memoryDriver } from 'bentocache/drivers/memory';
import { redisDriver } from 'bentocache/drivers/redis';
import { memoryLayer, readThroughCache } from 'bulwark';
import { redisStores } from 'bulwark/redis';
import { backendSections, benchRedis, countCommands } from './servers.js';
import { type Case, machine, measureAll, ns, type Result, table } from './support.js';

const run = Date.now().toString(36);
const TTL_MS = 60_000;
const MAX_ENTRIES = 10_000;
const STAMPEDE_CALLERS = 1_000;
const LOADER_MS = 50;
const STAMPEDE_REPETITIONS = 7;
const ROUNDS = 6;
const KEYS_PER_ROUND = 150;

/** What every loader returns: a small record, as a cache usually holds. */
const record = (id: number) => ({ id, name: `user ${id}`, roles: ['reader', 'writer'], active: true });

/** A read-through cache as this benchmark drives it. */
interface Contender {
  readonly name: string;
  get(key: string, load: () => Promise<unknown>): Promise<unknown>;
  close(): Promise<void>;
}

/** The floor: a `Map` of entries with an expiry check, and a hand-written singleflight. */
function floorCache(): Contender {
  const values = new Map<string, { readonly value: unknown; readonly expiresAt: number }>();
  const inFlight = new Map<string, Promise<unknown>>();
  return {
    name: 'floor: `Map` + expiry check + hand-written singleflight',
    get(key, load) {
      const entry = values.get(key);
      if (entry !== undefined && entry.expiresAt > Date.now()) return Promise.resolve(entry.value);
      const running = inFlight.get(key);
      if (running !== undefined) return running;
      const started = load()
        .then((value) => {
          values.set(key, { value, expiresAt: Date.now() + TTL_MS });
          return value;
        })
        .finally(() => inFlight.delete(key));
      inFlight.set(key, started);
      return started;
    },
    close: async () => {},
  };
}

function oursMemory(): Contender {
  const cache = readThroughCache({ layers: [memoryLayer({ maxEntries: MAX_ENTRIES })], ttlMs: TTL_MS });
  return {
    name: 'bulwark readThroughCache (memoryLayer)',
    get: (key, load) => cache.get(key, load),
    close: async () => cache.close(),
  };
}

/** A bentocache instance with its memory driver only (no grace, the same TTL as ours). */
function bentoMemoryCache(serialize: boolean) {
  return new BentoCache({
    default: 'cache',
    stores: { cache: bentostore().useL1Layer(memoryDriver({ maxItems: MAX_ENTRIES, serialize })) },
    ttl: TTL_MS,
    grace: false,
  });
}

function bentoMemory(): Contender {
  const bento = bentoMemoryCache(true);
  return {
    name: 'bentocache getOrSet (memory driver)',
    get: (key, load) => bento.getOrSet({ key, factory: load, ttl: TTL_MS }),
    close: () => bento.disconnectAll(),
  };
}

// ---------------------------------------------------------------------------------------------
// L1 hit

async function l1Hit(): Promise<string> {
  const floor = floorCache();
  const ours = readThroughCache({ layers: [memoryLayer({ maxEntries: MAX_ENTRIES })], ttlMs: TTL_MS });
  const bento = bentoMemoryCache(true);
  const bentoRaw = bentoMemoryCache(false);
  const value = record(1);
  const load = async () => value;
  // What a caller of each API passes per call, built once so that neither side pays for a literal.
  const bentoOptions = { key: 'k', factory: load, ttl: TTL_MS };
  const bentoGet = { key: 'k' };
  await floor.get('k', load);
  await ours.get('k', load);
  await bento.getOrSet(bentoOptions);
  await bentoRaw.getOrSet(bentoOptions);
  const names = {
    floor: floor.name,
    ours: 'bulwark readThroughCache.get (memoryLayer)',
    bento: 'bentocache getOrSet (memory driver, serialize: true, the default)',
    bentoRaw: 'bentocache getOrSet (memory driver, serialize: false)',
    bentoGet: 'bentocache get (memory driver, serialize: true)',
  };
  const cases: Case[] = [
    { name: names.floor, fn: () => floor.get('k', load) },
    { name: names.ours, fn: () => ours.get('k', load) },
    { name: names.bento, fn: () => bento.getOrSet(bentoOptions) },
    { name: names.bentoRaw, fn: () => bentoRaw.getOrSet(bentoOptions) },
    { name: names.bentoGet, fn: () => bento.get(bentoGet) },
  ];
  const forward = await measureAll(cases);
  const backward = await measureAll([...cases].reverse());
  const results: Result[] = forward.map((first) => {
    const second = backward.find((r) => r.name === first.name)!;
    return {
      name: first.name,
      avgNs: (first.avgNs + second.avgNs) / 2,
      p50Ns: (first.p50Ns + second.p50Ns) / 2,
    };
  });
  await bento.disconnectAll();
  await bentoRaw.disconnectAll();

  const avg = (name: string) => results.find((r) => r.name === name)!.avgNs;
  const oursNs = avg(names.ours);
  const perSecond = (value: number) => `${(1e9 / value / 1e6).toFixed(2)} M/s`;
  const perCase = table(
    ['case', 'ns/op (mean)', 'ns/op (p50)', 'hits/s', 'passes (forward / backward)'],
    results.map((r, i) => [
      r.name,
      ns(r.avgNs),
      ns(r.p50Ns),
      perSecond(r.avgNs),
      `${ns(forward[i]!.avgNs)} / ${ns(backward.find((b) => b.name === r.name)!.avgNs)}`,
    ]),
  );
  const speedup = avg(names.bento) / oursNs;
  const ratios = table(
    ['comparison', 'ratio', 'target', 'met'],
    [
      [
        'bentocache getOrSet ns ÷ ours (= ours hits/s ÷ bentocache hits/s)',
        speedup.toFixed(1),
        '≥ 10',
        speedup >= 10 ? 'met' : 'not met',
      ],
      ['bentocache getOrSet, serialize: false, ÷ ours', (avg(names.bentoRaw) / oursNs).toFixed(1), '—', '—'],
      ['bentocache get ÷ ours', (avg(names.bentoGet) / oursNs).toFixed(1), '—', '—'],
      ['ours ÷ floor', (oursNs / avg(names.floor)).toFixed(2), '—', '—'],
    ],
  );
  return `#### L1 hit (one warm key, memory only)\n\n${perCase}\n\n${ratios}`;
}

// ---------------------------------------------------------------------------------------------
// L1 + L2 on Redis

/** Two cache instances over the same L2 (the second one's L1 starts empty), and a command count. */
interface TwoLayerContender {
  readonly name: string;
  readonly first: Contender;
  readonly second: Contender;
  commands(): number;
}

interface RedisSetup {
  readonly ours: TwoLayerContender;
  readonly bento: TwoLayerContender;
  close(): Promise<void>;
}

async function openRedis(): Promise<RedisSetup> {
  const root = `bench:cache:${run}:`;
  const redis = await benchRedis(root);
  const oursClient = redis.client;
  const bentoClient = redis.client.duplicate();
  bentoClient.on('error', () => {});
  await bentoClient.ping();
  const stores = redisStores(oursClient, { prefix: `${root}ours:`, timeoutMs: 2_000 });
  const oursInstance = (name: string): Contender => {
    const cache = readThroughCache({
      layers: [memoryLayer({ maxEntries: MAX_ENTRIES }), stores.cacheLayer],
      ttlMs: TTL_MS,
    });
    return { name, get: (key, load) => cache.get(key, load), close: async () => cache.close() };
  };
  const bentoInstance = (name: string): Contender => {
    const bento = new BentoCache({
      prefix: `${root}bento`,
      default: 'cache',
      stores: {
        cache: bentostore()
          .useL1Layer(memoryDriver({ maxItems: MAX_ENTRIES }))
          .useL2Layer(redisDriver({ connection: bentoClient })),
      },
      ttl: TTL_MS,
      grace: false,
    });
    return {
      name,
      get: (key, load) => bento.getOrSet({ key, factory: load, ttl: TTL_MS }),
      close: () => bento.disconnectAll(),
    };
  };
  const ours: TwoLayerContender = {
    name: 'bulwark readThroughCache (memoryLayer + redisStores cacheLayer)',
    first: oursInstance('ours'),
    second: oursInstance('ours, second instance'),
    commands: countCommands(oursClient),
  };
  const bento: TwoLayerContender = {
    name: 'bentocache (memory driver + redis driver, no bus)',
    first: bentoInstance('bento'),
    second: bentoInstance('bento, second instance'),
    commands: countCommands(bentoClient),
  };
  return {
    ours,
    bento,
    close: async () => {
      // Each bentocache instance's disconnect ends the connection it was given (the same one).
      for (const contender of [ours.first, ours.second, bento.first, bento.second]) await contender.close();
      await stores.close();
      await redis.close();
    },
  };
}

/** Per-operation times (ms) and counts of one contender over every round. */
interface TwoLayerTimes {
  readonly cold: number[];
  readonly l1: number[];
  readonly l2: number[];
  coldCommands: number;
  l1Commands: number;
  l2Commands: number;
  coldLoads: number;
  l2Loads: number;
}

async function twoLayerRound(
  contender: TwoLayerContender,
  label: string,
  times: TwoLayerTimes | undefined,
): Promise<void> {
  let loads = 0;
  const keys = Array.from({ length: KEYS_PER_ROUND }, (_, n) => `${label}:${n}`);
  const load = (n: number) => async () => {
    loads += 1;
    return record(n);
  };
  let before = contender.commands();
  let l1Commands = 0;
  for (const [n, key] of keys.entries()) {
    const start = performance.now();
    await contender.first.get(key, load(n));
    const cold = performance.now();
    const sentCold = contender.commands();
    await contender.first.get(key, load(n));
    const end = performance.now();
    l1Commands += contender.commands() - sentCold;
    times?.cold.push(cold - start);
    times?.l1.push(end - cold);
  }
  const coldLoads = loads;
  const coldCommands = contender.commands() - before - l1Commands;
  before = contender.commands();
  for (const [n, key] of keys.entries()) {
    const start = performance.now();
    await contender.second.get(key, load(n));
    times?.l2.push(performance.now() - start);
  }
  if (times === undefined) return;
  times.coldCommands += coldCommands;
  times.l1Commands += l1Commands;
  times.l2Commands += contender.commands() - before;
  times.coldLoads += coldLoads;
  times.l2Loads += loads - coldLoads;
}

const mean = (values: readonly number[]) => values.reduce((sum, v) => sum + v, 0) / values.length;
const median = (values: readonly number[]) => {
  const sorted = [...values].sort((a, b) => a - b);
  const middle = sorted.length >> 1;
  return sorted.length % 2 === 1 ? sorted[middle]! : (sorted[middle - 1]! + sorted[middle]!) / 2;
};
const micros = (ms: number) => `${(ms * 1_000).toFixed(1)} µs`;

async function twoLayers(setup: RedisSetup): Promise<string> {
  const contenders = [setup.ours, setup.bento];
  const times = contenders.map(
    (): TwoLayerTimes => ({
      cold: [],
      l1: [],
      l2: [],
      coldCommands: 0,
      l1Commands: 0,
      l2Commands: 0,
      coldLoads: 0,
      l2Loads: 0,
    }),
  );
  for (const [i, contender] of contenders.entries()) await twoLayerRound(contender, `warm:${i}`, undefined);
  for (let round = 0; round < ROUNDS; round++) {
    const order = round % 2 === 0 ? [0, 1] : [1, 0];
    for (const i of order) await twoLayerRound(contenders[i]!, `r${round}`, times[i]);
  }
  const count = ROUNDS * KEYS_PER_ROUND;
  const [ours, bento] = times as [TwoLayerTimes, TwoLayerTimes];
  const row = (
    label: string,
    pick: (t: TwoLayerTimes) => readonly number[],
    commands: (t: TwoLayerTimes) => number,
  ) => [
    label,
    `${micros(mean(pick(ours)))} / ${micros(median(pick(ours)))}`,
    `${micros(mean(pick(bento)))} / ${micros(median(pick(bento)))}`,
    (mean(pick(bento)) / mean(pick(ours))).toFixed(2),
    `${(commands(ours) / count).toFixed(2)} / ${(commands(bento) / count).toFixed(2)}`,
  ];
  const rows = [
    row(
      'cold `get` (L1 and L2 miss, loader, write both)',
      (t) => t.cold,
      (t) => t.coldCommands,
    ),
    row(
      'then the same key again (L1 hit)',
      (t) => t.l1,
      (t) => t.l1Commands,
    ),
    row(
      'second instance, empty L1 (L2 hit)',
      (t) => t.l2,
      (t) => t.l2Commands,
    ),
  ];
  const loads = `Loader calls: ours ${ours.coldLoads} cold / ${ours.l2Loads} on L2 hits, bentocache ${bento.coldLoads} / ${bento.l2Loads} (of ${count} keys each).`;
  return `#### L1 + L2 on Redis, one call at a time (${ROUNDS} interleaved rounds of ${KEYS_PER_ROUND} keys)\n\n${table(
    [
      'operation',
      `ours, µs (mean / p50)`,
      'bentocache, µs (mean / p50)',
      'mean bentocache ÷ ours',
      'commands per op (ours / bentocache)',
    ],
    rows,
  )}\n\n${loads}`;
}

// ---------------------------------------------------------------------------------------------
// Stampede

interface StampedeResult {
  readonly walls: number[];
  readonly loads: number[];
}

async function stampedeOnce(contender: Contender, key: string): Promise<{ wall: number; loads: number }> {
  let loads = 0;
  const value = record(7);
  const load = async () => {
    loads += 1;
    await sleep(LOADER_MS);
    return value;
  };
  const start = performance.now();
  const results = await Promise.all(Array.from({ length: STAMPEDE_CALLERS }, () => contender.get(key, load)));
  const wall = performance.now() - start;
  if (results.some((result) => result !== value && JSON.stringify(result) !== JSON.stringify(value))) {
    throw new Error(`${contender.name}: a caller got another value`);
  }
  return { wall, loads };
}

async function stampede(contenders: readonly Contender[], label: string): Promise<StampedeResult[]> {
  const results = contenders.map((): StampedeResult => ({ walls: [], loads: [] }));
  for (const [i, contender] of contenders.entries()) await stampedeOnce(contender, `${label}:warm:${i}`);
  for (let repetition = 0; repetition < STAMPEDE_REPETITIONS; repetition++) {
    // Rotate who goes first, so no contender always runs right after another one's garbage.
    for (let j = 0; j < contenders.length; j++) {
      const i = (j + repetition) % contenders.length;
      await sleep(20);
      const { wall, loads } = await stampedeOnce(contenders[i]!, `${label}:${repetition}:${i}`);
      results[i]!.walls.push(wall);
      results[i]!.loads.push(loads);
    }
  }
  return results;
}

function stampedeTable(
  contenders: readonly Contender[],
  results: readonly StampedeResult[],
  targets: readonly (readonly [calls: string, wall: string, met: string])[],
): string {
  const ms = (value: number) => `${value.toFixed(1)} ms`;
  return table(
    ['case', 'loader calls (per repetition)', 'wall ms: median (min–max)', 'target', 'met'],
    contenders.map((contender, i) => {
      const { walls, loads } = results[i]!;
      const [calls, wall, met] = targets[i] ?? ['—', '—', '—'];
      const distinctLoads = [...new Set(loads)].sort((a, b) => a - b).join(', ');
      return [
        contender.name,
        distinctLoads,
        `${ms(median(walls))} (${ms(Math.min(...walls))}–${ms(Math.max(...walls))})`,
        calls === '—' ? '—' : `${calls}, ${wall}`,
        met,
      ];
    }),
  );
}

async function stampedeMemory(): Promise<string> {
  const contenders = [floorCache(), oursMemory(), bentoMemory()];
  const results = await stampede(contenders, `stampede:${run}`);
  const ours = results[1]!;
  const oneLoad = ours.loads.every((loads) => loads === 1);
  const fastEnough = median(ours.walls) <= 55;
  const report = stampedeTable(contenders, results, [
    ['—', '—', '—'],
    ['1 call', '≤ 55 ms', `${oneLoad ? 'met' : 'not met'} / ${fastEnough ? 'met' : 'not met'}`],
  ]);
  for (const contender of contenders) await contender.close();
  return `#### Stampede, memory only: ${STAMPEDE_CALLERS} concurrent \`get\`s of one cold key, a ${LOADER_MS} ms loader (${STAMPEDE_REPETITIONS} interleaved repetitions)\n\n${report}`;
}

async function stampedeRedis(setup: RedisSetup): Promise<string> {
  const contenders = [setup.ours.first, setup.bento.first];
  const results = await stampede(contenders, `stampede:${run}`);
  const named = contenders.map((contender, i) => ({
    ...contender,
    name: [setup.ours.name, setup.bento.name][i]!,
  }));
  return `#### Stampede, L1 + L2 on Redis (same shape)\n\n${stampedeTable(named, results, [])}`;
}

export default async function cacheBench(): Promise<string> {
  const hit = await l1Hit();
  const memoryStampede = await stampedeMemory();
  const redis = await backendSections([['Redis', openRedis]], async (setup) => {
    const layers = await twoLayers(setup);
    const stampeded = await stampedeRedis(setup);
    return `${layers}\n\n${stampeded}`;
  });
  const report = `### Read-through cache: bulwark vs bentocache 1.6.1\n\n${machine()}\n\n${hit}\n\n${memoryStampede}\n\n${redis.join('\n\n')}\n`;
  console.log(report);
  return report;
}
