/**
 * What a PostgreSQL outbox claim costs the server, counted (rows each plan node produced or
 * filtered out, from `EXPLAIN (ANALYZE, FORMAT JSON)`), never timed: a claim's work follows the
 * events it takes, not the backlog behind them, whatever the planner's statistics say (a table
 * never analyzed, as while a backlog builds up, and one just analyzed); with a few hot keys it
 * grows at most in step with the backlog (each queued event passed over once), never with its
 * square. Counts are deterministic for a given table and plan, so the bounds below have margin
 * only for the planner's choices, not for noise. The plan counted is the `outbox_claim` function's
 * statement under the function's planner settings. On `pg` and on PGlite (the same planner).
 */
import { randomUUID } from 'node:crypto';
import type { PGlite } from '@electric-sql/pglite';
import { describe, expect, it } from 'vitest';
import type { PostgresStores, PostgresTransaction } from '../../src/stores/postgres/index.js';
import { CLAIM_PLANNER_SETTINGS, claimStatement } from '../../src/stores/postgres/outbox-sql.js';
import { pgTransaction, serverStores, useEmbeddedPostgres } from '../support/postgres-stores.js';
import { usePostgres } from '../support/services.js';

const pg = await usePostgres();

interface PlanNode {
  readonly 'Actual Rows': number;
  readonly 'Actual Loops': number;
  readonly 'Rows Removed by Filter'?: number;
  readonly Plans?: readonly PlanNode[];
}

/** Rows every node of `plan` produced or filtered out, over all its loops. */
function work(plan: PlanNode): number {
  const own = (plan['Actual Rows'] + (plan['Rows Removed by Filter'] ?? 0)) * plan['Actual Loops'];
  return own + (plan.Plans ?? []).reduce((sum, child) => sum + work(child), 0);
}

interface Backend {
  stores(): Promise<PostgresStores>;
  /** Runs `work` in a transaction that is then rolled back. */
  rolledBack<T>(work: (tx: PostgresTransaction) => Promise<T>): Promise<T>;
  /** Runs `work` in a transaction that commits. */
  committed(work: (tx: PostgresTransaction) => Promise<void>): Promise<void>;
}

type Keys = (i: number) => string;
const unique: Keys = () => randomUUID();
/** Seven keys, each in runs of 100 events (one tenant's burst after another). */
const hot: Keys = (i) => `tenant-${Math.floor(i / 100) % 7}`;

/** The work of one claim of 100 on a table of `backlog` pending events keyed by `keys`. */
async function claimWork(b: Backend, backlog: number, keys: Keys, analyze: boolean) {
  const stores = await b.stores();
  const table = `"${stores.schema}".outbox`;
  for (let i = 0; i < backlog; i += 1_000) {
    const events = Array.from({ length: Math.min(1_000, backlog - i) }, (_, j) => ({
      topic: 't',
      key: keys(i + j),
      payload: { n: i + j },
    }));
    await b.committed(async (tx) => {
      await stores.outbox.enqueue(tx, events);
    });
  }
  if (analyze) await b.committed((tx) => tx.query(`ANALYZE ${table}`).then(() => undefined));
  // The function's body, under its settings (EXPLAIN does not show a function's own plan).
  const claim = claimStatement(table)
    .replaceAll('$1', "'owner'")
    .replaceAll('$2', '100')
    .replaceAll('$3', '30000');
  const result = await b.rolledBack(async (tx) => {
    for (const [name, value] of CLAIM_PLANNER_SETTINGS) await tx.query(`SET LOCAL ${name} = ${value}`);
    const { rows } = (await tx.query(`EXPLAIN (ANALYZE, FORMAT JSON) ${claim}`)) as unknown as {
      rows: { 'QUERY PLAN': [{ Plan: PlanNode }] }[];
    };
    return rows[0]!['QUERY PLAN'][0].Plan;
  });
  await stores.close();
  return { work: work(result), claimed: result['Actual Rows'] };
}

function scenarios(name: string, backend: () => Backend): void {
  describe(name, () => {
    for (const analyze of [false, true]) {
      const stats = analyze ? 'just analyzed' : 'never analyzed';
      it(`unique keys, ${stats}: ten times the backlog, about the same work`, async () => {
        const b = backend();
        const small = await claimWork(b, 500, unique, analyze);
        const large = await claimWork(b, 5_000, unique, analyze);
        expect([small.claimed, large.claimed]).toEqual([100, 100]);
        expect(large.work).toBeLessThan(small.work * 1.5);
      }, 60_000);

      it(`seven hot keys in runs of 100, ${stats}: ten times the backlog, the work grows in step (not with its square)`, async () => {
        const b = backend();
        const small = await claimWork(b, 500, hot, analyze);
        const large = await claimWork(b, 5_000, hot, analyze);
        expect([small.claimed, large.claimed]).toEqual([5, 7]);
        // In step is ~10×: each queued event passed over once. Quadratic would be ~100×.
        expect(large.work).toBeLessThan(small.work * 20);
      }, 60_000);
    }
  });
}

pg.describe('the PostgreSQL outbox claim: its work follows what it takes (pg)', () => {
  scenarios('pg', () => ({
    stores: () => serverStores(pg),
    rolledBack: (work) => pgTransaction(pg.pool(), work, 'ROLLBACK'),
    committed: (work) => pgTransaction(pg.pool(), work),
  }));
});

describe('the PostgreSQL outbox claim: its work follows what it takes (PGlite)', () => {
  const embedded = useEmbeddedPostgres();
  scenarios('PGlite', () => ({
    stores: () => embedded.stores(),
    rolledBack: (work) =>
      (embedded.db() as PGlite).transaction(async (tx) => {
        const result = await work(tx);
        await tx.rollback();
        return result;
      }),
    committed: (work) => (embedded.db() as PGlite).transaction((tx) => work(tx)),
  }));
});
