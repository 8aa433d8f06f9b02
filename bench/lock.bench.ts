/**
 * Distributed locks: uncontended acquire + release cycles per second on distinct keys, at
 * concurrency 1 and 32. Ours on Redis (which also issues a fence) beside node-redlock v5 on the
 * same single Redis and beside the round-trip limit, a raw `SET NX PX` plus a Lua compare-and-delete
 * release; ours on PostgreSQL too. The contenders run in interleaved turns, so a machine whose
 * speed drifts (CPU steal on a shared host) slows them alike. Round trips per cycle are counted
 * where they leave (every command the Redis client sends; every statement a `pg` client sends).
 * Targets: ≥ redlock, ≥ 90 % of the raw limit, exactly 2 round trips per cycle.
 */
import { randomUUID } from 'node:crypto';
import { distributedLock } from 'bulwark';
import { postgresStores } from 'bulwark/postgres';
import { redisStores } from 'bulwark/redis';
import Redlock from 'redlock';
import { backendSections, benchPostgres, benchRedis, countCommands } from './servers.js';
import { interleavedThroughput, machine, table, throughput } from './support.js';

const run = Date.now().toString(36);
const TTL_MS = 10_000;
const perSecond = (value: number) => `${(value / 1_000).toFixed(1)} k/s`;
const releaseLua =
  "if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end return 0";

interface Contender {
  readonly name: string;
  /** One acquire + release cycle of the key numbered `n`. */
  cycle(n: number): Promise<unknown>;
}

/**
 * Round trips per cycle of each contender (200 sequential cycles), then cycles per second at
 * concurrency 1 and 32, the contenders interleaved (8 rounds of 250 ms each, after a warm-up).
 */
async function measure(
  contenders: readonly Contender[],
  roundTrips: () => Promise<number>,
): Promise<{ rates: number[]; trips: number }[]> {
  const trips: number[] = [];
  for (const contender of contenders) {
    const before = await roundTrips();
    for (let n = 0; n < 200; n++) await contender.cycle(n);
    trips.push(((await roundTrips()) - before) / 200);
  }
  const cycles = contenders.map((contender) => (n: number) => contender.cycle(n));
  const byConcurrency: number[][] = [];
  for (const concurrency of [1, 32]) {
    for (const cycle of cycles) await throughput(cycle, concurrency, 300);
    byConcurrency.push(await interleavedThroughput(cycles, concurrency, 8, 250));
  }
  return contenders.map((_, i) => ({ rates: byConcurrency.map((rates) => rates[i]!), trips: trips[i]! }));
}

async function redisRows(): Promise<{ rows: string[][]; close: () => Promise<void> }> {
  const prefix = `bench:lock:${run}:`;
  const redis = await benchRedis(prefix);
  const { client } = redis;
  const stores = redisStores(client, { prefix, timeoutMs: 2_000 });
  const locks = distributedLock({ store: stores.lock });
  const redlock = new Redlock([client], { retryCount: 0, automaticExtensionThreshold: 500 });
  const sha = (await client.script('LOAD', releaseLua)) as string;
  // Round trips counted where they leave: every command the client sends (a script's own calls
  // inside Redis are not round trips, so INFO commandstats would overcount them).
  const sent = countCommands(client);
  const commands = async () => sent();
  const contenders: Contender[] = [
    {
      name: 'raw SET NX PX + Lua release (the round-trip limit, no fence)',
      cycle: async (n) => {
        const key = `${prefix}raw:${n}`;
        const token = randomUUID();
        await client.set(key, token, 'PX', TTL_MS, 'NX');
        await client.evalsha(sha, 1, key, token);
      },
    },
    {
      name: 'redlock v5, one Redis (no fence)',
      cycle: async (n) => {
        const lock = await redlock.acquire([`${prefix}redlock:${n}`], TTL_MS);
        await lock.release();
      },
    },
    {
      name: 'bulwark distributedLock on Redis (with a fence)',
      cycle: (n) => locks.withLock(`ours:${n}`, () => undefined, { ttlMs: TTL_MS, waitMs: 0 }),
    },
  ];
  const results = (await measure(contenders, commands)).map((result, i) => ({
    contender: contenders[i]!,
    ...result,
  }));
  const raw = results[0]!;
  const peer = results[1]!;
  const rows = results.map(({ contender, rates, trips }) => [
    contender.name,
    ...rates.map(perSecond),
    trips.toFixed(2),
    contender === raw.contender
      ? '—'
      : `${(rates[1]! / peer.rates[1]!).toFixed(2)} × redlock, ${((rates[1]! / raw.rates[1]!) * 100).toFixed(0)} % of raw`,
  ]);
  return {
    rows,
    close: async () => {
      await stores.close();
      await redis.close();
    },
  };
}

async function postgresRows(): Promise<{ rows: string[][]; close: () => Promise<void> }> {
  const postgres = benchPostgres();
  const { pool } = postgres;
  const schema = `bench_lock_${run}`;
  const stores = postgresStores(pool, { schema, timeoutMs: 2_000 });
  await stores.migrate();
  const locks = distributedLock({ store: stores.lock });
  const ours: Contender = {
    name: 'bulwark distributedLock on PostgreSQL (with a fence)',
    cycle: (n) => locks.withLock(`ours:${n}`, () => undefined, { ttlMs: TTL_MS, waitMs: 0 }),
  };
  const raw: Contender = {
    name: 'raw SELECT 1, twice (the round-trip limit)',
    cycle: () => pool.query('SELECT 1').then(() => pool.query('SELECT 1')),
  };
  const contenders = [raw, ours];
  const rows = (await measure(contenders, async () => postgres.statements())).map(({ rates, trips }, i) => [
    contenders[i]!.name,
    ...rates.map(perSecond),
    trips.toFixed(2),
    '—',
  ]);
  return {
    rows,
    close: async () => {
      await stores.close();
      await pool.query(`DROP SCHEMA ${schema} CASCADE`);
      await postgres.close();
    },
  };
}

export default async function lockBench(): Promise<string> {
  const headers = [
    'case',
    'cycles/s, concurrency 1',
    'cycles/s, concurrency 32',
    'round trips per cycle',
    'ratio (concurrency 32)',
  ];
  const sections = await backendSections(
    [
      ['Redis', redisRows],
      ['PostgreSQL', postgresRows],
    ],
    async ({ rows }) => table(headers, rows),
  );
  const report = `### Distributed locks (acquire + release, distinct keys)\n\n${machine()}\n\n${sections.join('\n\n')}\n`;
  console.log(report);
  return report;
}
