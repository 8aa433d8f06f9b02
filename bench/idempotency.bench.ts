/**
 * Idempotency keys on Redis and PostgreSQL: fresh requests (claim + complete) and replays per
 * second at concurrency 1 and 32, and the store round trips each costs, counted at the source —
 * Redis `INFO commandstats` deltas (EVAL + EVALSHA calls), and on PostgreSQL a count of every
 * statement a `pg` client sends (`pg_stat_statements` is not loaded on the shared server). Target:
 * exactly 2 round trips per fresh request, 1 per replay. There is no peer library to run beside:
 * the ratio that matters is round trips per request, next to the raw store's own ceiling (one
 * `EVALSHA` of `return 1`, one `SELECT 1`) per second.
 */
import type { AddressInfo } from 'node:net';
import { idempotency } from 'bulwark';
import { idempotencyMiddleware } from 'bulwark/http';
import { postgresStores } from 'bulwark/postgres';
import { redisStores } from 'bulwark/redis';
import express from 'express';
import { backendSections, benchPostgres, benchRedis } from './servers.js';
import { machine, table, throughput } from './support.js';

const REPLAY_KEYS = 1_000;
const run = Date.now().toString(36);
const kPerSecond = (value: number) => `${(value / 1_000).toFixed(1)} k/s`;

interface Backend {
  readonly name: string;
  readonly idem: ReturnType<typeof idempotency>;
  /** Round trips so far (a counter read at the source). */
  roundTrips(): Promise<number>;
  /** One raw round trip to the store (its ceiling). */
  raw(): Promise<unknown>;
}

async function measure(backend: Backend): Promise<string[][]> {
  const { idem } = backend;
  let fresh = 0;
  const freshOp = () => {
    const key = `fresh-${run}-${fresh++}`;
    return idem.execute(key, { key }, () => ({ charged: true }));
  };
  for (let i = 0; i < REPLAY_KEYS; i++) await idem.execute(`replay-${run}-${i}`, i, () => ({ receipt: i }));
  const replayOp = (n: number) =>
    idem.execute(`replay-${run}-${n % REPLAY_KEYS}`, n % REPLAY_KEYS, () => ({ ran: 'again' }));

  // Round trips: 200 sequential requests of each kind, counted at the store.
  const count = async (op: (n: number) => Promise<unknown>) => {
    const before = await backend.roundTrips();
    for (let n = 0; n < 200; n++) await op(n);
    return ((await backend.roundTrips()) - before) / 200;
  };
  const freshTrips = await count(freshOp);
  const replayTrips = await count(replayOp);

  const rows: string[][] = [];
  for (const [label, op, trips, target] of [
    ['fresh request (claim + complete)', freshOp, freshTrips, '2'],
    ['replay', replayOp, replayTrips, '1'],
    [
      `raw round trip (${backend.name === 'Redis' ? 'EVALSHA return 1' : 'SELECT 1'})`,
      () => backend.raw(),
      1,
      '—',
    ],
  ] as const) {
    const perSecond: string[] = [];
    for (const concurrency of [1, 32]) {
      await throughput(op, concurrency, 300);
      perSecond.push(kPerSecond(await throughput(op, concurrency, 2_000)));
    }
    rows.push([label, ...perSecond, trips.toFixed(2), target]);
  }
  return rows;
}

async function redisBackend(): Promise<{ backend: Backend; close: () => Promise<void> }> {
  const prefix = `bench:idem:${run}:`;
  const redis = await benchRedis(prefix);
  const { client, admin } = redis;
  const stores = redisStores(client, { prefix, timeoutMs: 2_000 });
  const sha = (await client.script('LOAD', 'return 1')) as string;
  const scriptCalls = async () => {
    const info = await admin.info('commandstats');
    let calls = 0;
    for (const match of info.matchAll(/^cmdstat_(?:eval|evalsha):calls=(\d+)/gm)) calls += Number(match[1]);
    return calls;
  };
  return {
    backend: {
      name: 'Redis',
      idem: idempotency({ store: stores.idempotency }),
      roundTrips: scriptCalls,
      raw: () => client.evalsha(sha, 0),
    },
    close: async () => {
      await stores.close();
      await redis.close();
    },
  };
}

async function postgresBackend(): Promise<{ backend: Backend; close: () => Promise<void> }> {
  const postgres = benchPostgres();
  const { pool } = postgres;
  const schema = `bench_idem_${run}`;
  const stores = postgresStores(pool, { schema, timeoutMs: 2_000 });
  await stores.migrate();
  return {
    backend: {
      name: 'PostgreSQL',
      idem: idempotency({ store: stores.idempotency }),
      roundTrips: async () => postgres.statements(),
      raw: () => pool.query('SELECT 1'),
    },
    close: async () => {
      await stores.close();
      await pool.query(`DROP SCHEMA ${schema} CASCADE`);
      await postgres.close();
    },
  };
}

/** Requests per second of POST /payments on an Express app, with and without the middleware (memory store). */
async function middlewareRows(): Promise<string[][]> {
  const payments = idempotency();
  const route = (_request: express.Request, response: express.Response) => {
    response.status(201).json({ id: 'pay_1', cents: 100 });
  };
  const rows: string[][] = [];
  const rates: number[] = [];
  for (const [label, withMiddleware, sameKey] of [
    ['bare Express handler (express.json)', false, false],
    ['with idempotencyMiddleware, fresh key each request', true, false],
    ['with idempotencyMiddleware, replays of one key', true, true],
  ] as const) {
    const app = express();
    app.use(express.json());
    if (withMiddleware) app.use(idempotencyMiddleware({ idempotency: payments }));
    app.post('/payments', route);
    const server = app.listen(0, '127.0.0.1');
    await new Promise((resolve) => server.once('listening', resolve));
    const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/payments`;
    const body = JSON.stringify({ cents: 100 });
    const op = async (n: number) => {
      const response = await fetch(url, {
        method: 'POST',
        body,
        headers: {
          'content-type': 'application/json',
          'idempotency-key': sameKey ? 'one' : `k-${run}-${label.length}-${n}`,
        },
      });
      await response.arrayBuffer();
    };
    await throughput(op, 32, 500);
    const rate = await throughput(op, 32, 3_000);
    rates.push(rate);
    server.closeAllConnections();
    await new Promise((resolve) => server.close(resolve));
    const overheadUs = rates.length === 1 ? '—' : `${((1 / rate - 1 / rates[0]!) * 1e6).toFixed(0)} µs`;
    rows.push([label, kPerSecond(rate), overheadUs]);
  }
  return rows;
}

export default async function idempotencyBench(): Promise<string> {
  const headers = [
    'case',
    'per second, concurrency 1',
    'per second, concurrency 32',
    'round trips per request',
    'target',
  ];
  const sections = await backendSections(
    [
      ['Redis', redisBackend],
      ['PostgreSQL', postgresBackend],
    ],
    async ({ backend }) => table(headers, await measure(backend)),
  );
  const middleware = table(
    ['HTTP, concurrency 32 (fetch on loopback)', 'requests/s', 'overhead per request'],
    await middlewareRows(),
  );
  const report = `### Idempotency keys\n\n${machine()}\n\n${sections.join('\n\n')}\n\n${middleware}\n`;
  console.log(report);
  return report;
}
