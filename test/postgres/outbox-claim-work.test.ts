/**
 * What a PostgreSQL outbox claim costs the server, counted (rows each plan node produced or
 * filtered out, from `EXPLAIN (ANALYZE, FORMAT JSON)`), never timed: a claim's work follows the
 * events it takes, not the backlog behind them nor the events backing off while a broker is down,
 * whatever the planner's statistics say (a table never analyzed, as while a backlog builds up, and
 * one just analyzed); with a few hot keys it
 * grows at most in step with the backlog (each queued event passed over once), never with its
 * square. Counts are deterministic for a given table and plan, so the bounds below have margin
 * only for the planner's choices, not for noise. The plan counted is the `outbox_claim` function's
 * statement under the function's planner settings. On `pg` and on PGlite (the same planner).
 */
import { randomUUID } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import type { PostgresStores } from '../../src/stores/postgres/index.js';
import { CLAIM_PLANNER_SETTINGS, claimStatement } from '../../src/stores/postgres/outbox-sql.js';
import { analyzedPlan, onBothDatabases, type PlanBackend, planWork } from '../support/plan-work.js';
import { usePostgres } from '../support/services.js';

const pg = await usePostgres();

type Keys = (i: number) => string;
const unique: Keys = () => randomUUID();
/** Seven keys, each in runs of 100 events (one tenant's burst after another). */
const hot: Keys = (i) => `tenant-${Math.floor(i / 100) % 7}`;

/** Enqueues `count` events keyed by `keys` (numbered from `from`), a thousand a transaction. */
async function enqueue(b: PlanBackend, stores: PostgresStores, count: number, keys: Keys, from = 0) {
  for (let i = 0; i < count; i += 1_000) {
    const events = Array.from({ length: Math.min(1_000, count - i) }, (_, j) => ({
      topic: 't',
      key: keys(from + i + j),
      payload: { n: from + i + j },
    }));
    await b.committed(async (tx) => {
      await stores.outbox.enqueue(tx, events);
    });
  }
}

/**
 * The work of one claim of 100 on a table of `backlog` pending events keyed by `keys`. With
 * `outage`, the backlog is backing off (its publishes failed; retried in an hour) and that many new
 * events of their own keys were enqueued after it: a broker outage, as a relay woken by them sees it.
 */
async function claimWork(b: PlanBackend, backlog: number, keys: Keys, analyze: boolean, outage?: number) {
  const stores = await b.stores();
  const table = `"${stores.schema}".outbox`;
  await enqueue(b, stores, backlog, keys);
  if (outage !== undefined) {
    await b.committed((tx) =>
      tx
        .query(`UPDATE ${table} SET attempts = 1, available_at = clock_timestamp() + interval '1 hour'`)
        .then(() => undefined),
    );
    await enqueue(b, stores, outage, unique, backlog);
  }
  if (analyze) await b.committed((tx) => tx.query(`ANALYZE ${table}`).then(() => undefined));
  // The function's body, under its settings (EXPLAIN does not show a function's own plan).
  const claim = claimStatement(table)
    .replaceAll('$1', "'owner'")
    .replaceAll('$2', '100')
    .replaceAll('$3', '30000');
  const result = await b.rolledBack(async (tx) => {
    for (const [name, value] of CLAIM_PLANNER_SETTINGS) await tx.query(`SET LOCAL ${name} = ${value}`);
    return analyzedPlan(tx, claim);
  });
  await stores.close();
  return { work: planWork(result), claimed: result['Actual Rows'] };
}

function scenarios(name: string, backend: () => PlanBackend): void {
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

      it(`a broker outage (the backlog backing off, new events due), ${stats}: ten times the backlog, about the same work`, async () => {
        const b = backend();
        const small = await claimWork(b, 500, unique, analyze, 100);
        const large = await claimWork(b, 5_000, unique, analyze, 100);
        expect([small.claimed, large.claimed]).toEqual([100, 100]);
        expect(large.work).toBeLessThan(small.work * 1.5);
      }, 60_000);

      it(`nothing due (the whole backlog backing off), ${stats}: a few rows of work, whatever the backlog`, async () => {
        const b = backend();
        for (const backlog of [500, 5_000]) {
          const { work, claimed } = await claimWork(b, backlog, hot, analyze, 0);
          expect(claimed).toBe(0);
          expect(work).toBeLessThan(10);
        }
      }, 60_000);
    }
  });
}

onBothDatabases(pg, 'the PostgreSQL outbox claim: its work follows what it takes', scenarios);
