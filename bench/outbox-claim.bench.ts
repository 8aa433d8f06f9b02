/**
 * What one PostgreSQL outbox claim of 100 costs as the backlog grows: `stores.outbox.claim` (the
 * `outbox_claim` function, migration 6) beside the claim it replaced, on the same tables, in
 * interleaved turns. Backlogs of 1,000, 10,000 and 100,000 pending events, keyed one key per event
 * (orders) or seven hot keys in runs of 100 (tenants), beside the statement of 2026-12-04 (one
 * `UPDATE` whose picked events were every pending event sorted by `seq`, each with a `NOT EXISTS`
 * probe for an older pending event of its key); and a broker outage (the backlog backing off, or
 * two events a key with the heads backing off; 100 new events due) beside the walk of 2026-12-05
 * (migration 5: in `seq` order, "due" a filter). With
 * the statistics the table had before its backlog grew (never analyzed) and with fresh ones
 * (`ANALYZE` after the backlog). Each measurement is a claim round trip followed by a `release`
 * (not timed), so every claim sees the same table; median of 15.
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

const orders = (): string => randomUUID();

/** The claim statement of 2026-12-04: every pending event sorted, then the limit. */
const sorted = (t: string) => `WITH picked AS (
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

const claimable = (o: string) => `${o}.status = 'pending' AND ${o}.available_at <= clock_timestamp()
  AND (${o}.lease_until IS NULL OR ${o}.lease_until <= clock_timestamp())`;

/**
 * The claim function of 2026-12-05 (migration 5) as `<schema>.outbox_claim_seq`: the walk in `seq`
 * order, "due" a filter of each step, under the same planner settings as today's.
 */
const seqWalkFunction = (schema: string) => {
  const t = `"${schema}".outbox`;
  const next = (after: string, skipped: string) => `SELECT n.seq, n.key FROM ${t} AS n
    WHERE ${claimable('n')} AND n.seq > ${after} AND (n.key IS NULL OR n.key <> ALL (${skipped}))
    ORDER BY n.seq LIMIT 1`;
  const head = (o: string) => `${o}.key IS NULL OR (SELECT e.seq FROM ${t} AS e
    WHERE e.status = 'pending' AND e.key = ${o}.key AND e.seq < ${o}.seq ORDER BY e.seq DESC LIMIT 1) IS NULL`;
  return `CREATE FUNCTION "${schema}".outbox_claim_seq(claim_owner text, claim_limit int, claim_lease_ms float8)
    RETURNS TABLE (id text) LANGUAGE plpgsql SET enable_seqscan = off SET enable_bitmapscan = off
    SET enable_sort = off SET enable_hashjoin = off SET enable_mergejoin = off SET jit = off
    AS $claim$ #variable_conflict use_column
    BEGIN RETURN QUERY WITH RECURSIVE walk(seq, key, head, skipped) AS (
      SELECT f.seq, f.key, ${head('f')}, ARRAY[]::text[] FROM (${next('0', 'ARRAY[]::text[]')}) AS f
      UNION ALL
      SELECT n.seq, n.key, ${head('n')}, s.skipped FROM walk
      CROSS JOIN LATERAL (SELECT CASE WHEN walk.head OR cardinality(walk.skipped) >= 64
        THEN walk.skipped ELSE walk.skipped || walk.key END AS skipped) AS s
      CROSS JOIN LATERAL (${next('walk.seq', 's.skipped')}) AS n
    ), picked AS (
      SELECT c.seq FROM walk CROSS JOIN LATERAL (
        SELECT o.seq FROM ${t} AS o WHERE o.seq = walk.seq AND walk.head AND ${claimable('o')}
        FOR UPDATE SKIP LOCKED
      ) AS c LIMIT claim_limit
    ), claimed AS (
      UPDATE ${t} AS o SET owner = claim_owner,
        lease_until = clock_timestamp() + claim_lease_ms * interval '1 millisecond'
      FROM picked WHERE o.seq = picked.seq RETURNING o.id::text
    ) SELECT * FROM claimed; END $claim$`;
};

/** A table to claim from, and the claim it is measured beside. */
interface Scenario {
  readonly key: (i: number) => string;
  /**
   * The backlog's publishes failed and are retried in an hour (`keyed`: its heads', through
   * `failed`, their queues waiting behind them); 100 new events are due.
   */
  readonly outage: false | 'all' | 'keyed';
  /** The reference claim: statement text for `pool.query(text, [owner, limit, leaseMs])`. */
  readonly reference: (schema: string) => string;
}

const SCENARIOS: Record<string, Scenario> = {
  'one key per event': { key: orders, outage: false, reference: (s) => sorted(`"${s}".outbox`) },
  'seven hot keys': {
    key: (i) => `tenant-${Math.floor(i / 100) % 7}`,
    outage: false,
    reference: (s) => sorted(`"${s}".outbox`),
  },
  'broker outage: backing off, 100 new due': {
    key: orders,
    outage: 'all',
    reference: (s) => `SELECT * FROM "${s}".outbox_claim_seq($1, $2, $3)`,
  },
  'broker outage, two events a key: heads backing off, 100 new due': {
    key: (i) => `order-${Math.floor(i / 2)}`,
    outage: 'keyed',
    reference: (s) => `SELECT * FROM "${s}".outbox_claim_seq($1, $2, $3)`,
  },
};

const median = (values: number[]) => values.sort((a, b) => a - b)[values.length >> 1]!;
const ms = (value: number) => (value < 10 ? `${value.toFixed(2)} ms` : `${value.toFixed(0)} ms`);

async function fill(
  pool: pg.Pool,
  stores: PostgresStores,
  backlog: number,
  key: (i: number) => string,
  from = 0,
) {
  for (let i = from; i < from + backlog; i += 1_000) {
    const client = await pool.connect();
    try {
      await client.query('BEGIN');
      await stores.outbox.enqueue(
        client,
        Array.from({ length: Math.min(1_000, from + backlog - i) }, (_, j) => ({
          topic: 'bench',
          key: key(i + j),
          payload: { n: i + j },
        })),
      );
      await client.query('COMMIT');
    } finally {
      client.release();
    }
  }
}

/** Median claim round trip, ours and the reference, in alternating turns. */
async function measure(
  pool: pg.Pool,
  stores: PostgresStores,
  reference: string,
): Promise<[number, number, number]> {
  const ours: number[] = [];
  const theirs: number[] = [];
  let claimed = 0;
  for (let round = 0; round < ROUNDS; round++) {
    let start = performance.now();
    claimed = (await stores.outbox.claim('bench', CLAIM, 60_000)).length;
    ours.push(performance.now() - start);
    await stores.outbox.release('bench');
    start = performance.now();
    await pool.query(reference, ['bench', CLAIM, 60_000]);
    theirs.push(performance.now() - start);
    await stores.outbox.release('bench');
  }
  return [median(ours), median(theirs), claimed];
}

async function main(): Promise<void> {
  const { pool, close } = benchPostgres();
  const rows: string[][] = [];
  for (const [name, scenario] of Object.entries(SCENARIOS)) {
    for (const backlog of BACKLOGS) {
      const schema = `bench_claim_${process.pid}`;
      // A long deadline: the keyed outage fails every head of the backlog in one claim and one call.
      const stores = postgresStores(pool, { schema, listen: false, timeoutMs: 120_000 });
      const t = `"${schema}".outbox`;
      const reference = scenario.reference(schema);
      try {
        await stores.migrate();
        await pool.query(seqWalkFunction(schema));
        await pool.query(`ALTER TABLE ${t} SET (autovacuum_enabled = false)`);
        await fill(pool, stores, backlog, scenario.key);
        if (scenario.outage === 'all') {
          await pool.query(
            `UPDATE ${t} SET attempts = 1, available_at = clock_timestamp() + interval '1 hour'`,
          );
        } else if (scenario.outage === 'keyed') {
          const heads = await stores.outbox.claim('relay', backlog, 600_000);
          await stores.outbox.failed(
            'relay',
            heads.map((m) => ({ id: m.id, error: 'Error: down', retryInMs: 3_600_000, dead: false })),
          );
        }
        if (scenario.outage) await fill(pool, stores, CLAIM, orders, backlog);
        const [stale, staleBefore, claimed] = await measure(pool, stores, reference);
        await pool.query(`ANALYZE ${t}`);
        const [fresh, freshBefore] = await measure(pool, stores, reference);
        rows.push([
          name,
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
        'events',
        'backlog',
        'claimed',
        'claim (stale / fresh statistics)',
        'the claim before',
        'before ÷ claim',
      ],
      rows,
    )}\n`,
  );
}

export default main;
