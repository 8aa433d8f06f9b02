/**
 * What one PostgreSQL outbox claim of 100 costs as the backlog grows: `stores.outbox.claim` (the
 * `outbox_claim` function, migration 5) beside the claim statement it replaced (one `UPDATE` whose
 * picked events were every pending event sorted by `seq`, each with a `NOT EXISTS` probe for an
 * older pending event of its key), on the same tables, in interleaved turns. Backlogs of 1,000,
 * 10,000 and 100,000 pending events, keyed one key per event (orders) or seven hot keys in runs of
 * 100 (tenants), with the statistics the table had before its backlog grew (never analyzed) and
 * with fresh ones (`ANALYZE` after the backlog). Each measurement is a claim round trip followed by
 * a `release` (not timed), so every claim sees the same table; median of 15.
 *
 * `npm run bench -- outbox-claim` (~1 min); a schema of its own in the `test` database, dropped after.
 */
import { randomUUID } from 'node:crypto';
import { performance } from 'node:perf_hooks';
import { type PostgresStores, postgresStores } from 'bulwark/postgres';
import type pg from 'pg';
import { benchPostgres } from './servers.js';
import { machine, table } from './support.js';

const BACKLOGS = [1_000, 10_000, 100_000] as const;
const CLAIM = 100;
const ROUNDS = 15;

const KEYINGS = {
  'one key per event': (): string => randomUUID(),
  'seven hot keys': (i: number): string => `tenant-${Math.floor(i / 100) % 7}`,
} as const;

/** The claim statement before 2026-12-05 (the reference): every pending event sorted, then the limit. */
const before = (t: string) => `WITH picked AS (
    SELECT o.seq FROM ${t} AS o
    WHERE o.status = 'pending' AND o.available_at <= clock_timestamp()
      AND (o.lease_until IS NULL OR o.lease_until <= clock_timestamp())
      AND (o.key IS NULL OR NOT EXISTS (
        SELECT 1 FROM ${t} AS e WHERE e.status = 'pending' AND e.key = o.key AND e.seq < o.seq
      ))
    ORDER BY o.seq LIMIT $2 FOR UPDATE SKIP LOCKED
  )
  UPDATE ${t} AS o SET owner = $1, lease_until = clock_timestamp() + $3::float8 * interval '1 millisecond'
  FROM picked WHERE o.seq = picked.seq
  RETURNING o.id::text AS id`;

const median = (values: number[]) => values.sort((a, b) => a - b)[values.length >> 1]!;
const ms = (value: number) => (value < 10 ? `${value.toFixed(2)} ms` : `${value.toFixed(0)} ms`);

async function fill(pool: pg.Pool, stores: PostgresStores, backlog: number, key: (i: number) => string) {
  for (let i = 0; i < backlog; i += 1_000) {
    const client = await pool.connect();
    try {
      await client.query('BEGIN');
      await stores.outbox.enqueue(
        client,
        Array.from({ length: 1_000 }, (_, j) => ({ topic: 'bench', key: key(i + j), payload: { n: i + j } })),
      );
      await client.query('COMMIT');
    } finally {
      client.release();
    }
  }
}

/** Median claim round trip, ours and the statement before, in alternating turns. */
async function measure(pool: pg.Pool, stores: PostgresStores, t: string): Promise<[number, number, number]> {
  const ours: number[] = [];
  const reference: number[] = [];
  let claimed = 0;
  for (let round = 0; round < ROUNDS; round++) {
    let start = performance.now();
    claimed = (await stores.outbox.claim('bench', CLAIM, 60_000)).length;
    ours.push(performance.now() - start);
    await stores.outbox.release('bench');
    start = performance.now();
    await pool.query(before(t), ['bench', CLAIM, 60_000]);
    reference.push(performance.now() - start);
    await stores.outbox.release('bench');
  }
  return [median(ours), median(reference), claimed];
}

async function main(): Promise<void> {
  const { pool, close } = benchPostgres();
  const rows: string[][] = [];
  for (const [keying, key] of Object.entries(KEYINGS)) {
    for (const backlog of BACKLOGS) {
      const schema = `bench_claim_${process.pid}`;
      const stores = postgresStores(pool, { schema, listen: false });
      const t = `"${schema}".outbox`;
      try {
        await stores.migrate();
        await pool.query(`ALTER TABLE ${t} SET (autovacuum_enabled = false)`);
        await fill(pool, stores, backlog, key);
        const [stale, staleBefore, claimed] = await measure(pool, stores, t);
        await pool.query(`ANALYZE ${t}`);
        const [fresh, freshBefore] = await measure(pool, stores, t);
        rows.push([
          keying,
          backlog.toLocaleString('en'),
          String(claimed),
          `${ms(stale)} / ${ms(fresh)}`,
          `${ms(staleBefore)} / ${ms(freshBefore)}`,
          `${(staleBefore / stale).toFixed(1)} / ${(freshBefore / fresh).toFixed(1)}`,
        ]);
        console.log(rows.at(-1)!.join(' | '));
      } finally {
        await stores.close();
        await pool.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`);
      }
    }
  }
  await close();
  console.log(
    `\n### PostgreSQL outbox claim of ${CLAIM} vs backlog\n\n${machine()}\n\n${table(
      [
        'events keyed by',
        'pending',
        'claimed',
        'claim (stale / fresh statistics)',
        'statement before',
        'before ÷ claim',
      ],
      rows,
    )}\n`,
  );
}

export default main;
