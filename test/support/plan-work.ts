/**
 * What a statement costs the server, counted rather than timed: the rows every node of its plan
 * produced or filtered out, over all its loops, from `EXPLAIN (ANALYZE, FORMAT JSON)`. For a given
 * table and plan the count is deterministic, so a test can compare it at two data sizes.
 */

import { describe } from 'vitest';
import type { PostgresStores, PostgresTransaction } from '../../src/stores/postgres/index.js';
import {
  type EmbeddedPostgres,
  pgTransaction,
  serverStores,
  useEmbeddedPostgres,
} from './postgres-stores.js';
import type { PostgresService } from './services.js';

/** One node of an analyzed plan, as `FORMAT JSON` gives it (the fields counted). */
export interface PlanNode {
  readonly 'Actual Rows': number;
  readonly 'Actual Loops': number;
  readonly 'Rows Removed by Filter'?: number;
  readonly Plans?: readonly PlanNode[];
}

/** Rows every node of `plan` produced or filtered out, over all its loops. */
export function planWork(plan: PlanNode): number {
  const own = (plan['Actual Rows'] + (plan['Rows Removed by Filter'] ?? 0)) * plan['Actual Loops'];
  return own + (plan.Plans ?? []).reduce((sum, child) => sum + planWork(child), 0);
}

/**
 * Runs `statement` (no parameters: paste literals in) under `EXPLAIN (ANALYZE, FORMAT JSON)` on
 * `tx`, and resolves with its plan's root. It runs for real: use a transaction that rolls back.
 */
export async function analyzedPlan(tx: PostgresTransaction, statement: string): Promise<PlanNode> {
  const { rows } = (await tx.query(`EXPLAIN (ANALYZE, FORMAT JSON) ${statement}`)) as unknown as {
    rows: { 'QUERY PLAN': [{ Plan: PlanNode }] }[];
  };
  return rows[0]!['QUERY PLAN'][0].Plan;
}

/**
 * Seeding thousands of rows and failing thousands of claims in one call is test set-up, not a
 * store call under test: its deadline must not be the stores' 1 s (a loaded CI machine misses it).
 */
const SETUP_TIMEOUT = { timeoutMs: 60_000 };

/** A database to count plans on: migrated stores, and transactions that roll back or commit. */
export interface PlanBackend {
  stores(): Promise<PostgresStores>;
  /** Runs `work` in a transaction that is then rolled back. */
  rolledBack<T>(work: (tx: PostgresTransaction) => Promise<T>): Promise<T>;
  /** Runs `work` in a transaction that commits. */
  committed(work: (tx: PostgresTransaction) => Promise<void>): Promise<void>;
}

/** The backend on `pg` (stores on the current test's schema). */
function pgPlanBackend(pg: PostgresService): PlanBackend {
  return {
    stores: () => serverStores(pg, SETUP_TIMEOUT),
    rolledBack: (work) => pgTransaction(pg.pool(), work, 'ROLLBACK'),
    committed: (work) => pgTransaction(pg.pool(), work),
  };
}

/** The backend on an embedded PGlite (stores on a schema of their own each). */
function pglitePlanBackend(embedded: EmbeddedPostgres): PlanBackend {
  return {
    stores: () => embedded.stores(SETUP_TIMEOUT),
    rolledBack: (work) =>
      embedded.db().transaction(async (tx) => {
        const result = await work(tx);
        await tx.rollback();
        return result;
      }),
    committed: (work) => embedded.db().transaction((tx) => work(tx)),
  };
}

/** Defines `scenarios` twice, under `title`: on `pg` (skipped without a server) and on PGlite. */
export function onBothDatabases(
  pg: PostgresService,
  title: string,
  scenarios: (name: string, backend: () => PlanBackend) => void,
): void {
  pg.describe(`${title} (pg)`, () => {
    scenarios('pg', () => pgPlanBackend(pg));
  });
  describe(`${title} (PGlite)`, () => {
    const embedded = useEmbeddedPostgres();
    scenarios('PGlite', () => pglitePlanBackend(embedded));
  });
}
