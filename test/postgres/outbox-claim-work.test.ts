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

/** Two events per key (an order's created and paid). */
const pairs: Keys = (i) => `order-${Math.floor(i / 2)}`;

/**
 * A broker outage, as a relay woken by new events sees it: the backlog's publishes failed and are
 * retried in an hour (`keyed`: through `failed`, the backlog's heads, their queues behind them; else
 * every event at once), then `fresh` new events of their own keys were enqueued (and with `keyed`,
 * one more event behind each of a tenth of the backlog's keys).
 */
interface Outage {
  readonly fresh: number;
  readonly keyed?: boolean;
}

/** The work of one claim of 100 on a table of `backlog` pending events keyed by `keys`, in `outage`. */
async function claimWork(b: PlanBackend, backlog: number, keys: Keys, analyze: boolean, outage?: Outage) {
  const stores = await b.stores();
  const table = `"${stores.schema}".outbox`;
  await enqueue(b, stores, backlog, keys);
  if (outage?.keyed) {
    const heads = await stores.outbox.claim('relay', backlog, 600_000);
    const retry = heads.map((m) => ({ id: m.id, error: 'Error: down', retryInMs: 3_600_000, dead: false }));
    expect(await stores.outbox.failed('relay', retry)).toBe(heads.length);
    await enqueue(b, stores, backlog / 10, (i) => keys(2 * (i - backlog)), backlog);
  } else if (outage !== undefined) {
    await b.committed((tx) =>
      tx
        .query(`UPDATE ${table} SET attempts = 1, available_at = clock_timestamp() + interval '1 hour'`)
        .then(() => undefined),
    );
  }
  if (outage !== undefined) await enqueue(b, stores, outage.fresh, unique, 2 * backlog);
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
        const small = await claimWork(b, 500, unique, analyze, { fresh: 100 });
        const large = await claimWork(b, 5_000, unique, analyze, { fresh: 100 });
        expect([small.claimed, large.claimed]).toEqual([100, 100]);
        expect(large.work).toBeLessThan(small.work * 1.5);
      }, 60_000);

      it(`a broker outage with keyed events (heads backing off, their queues blocked), ${stats}: ten times the backlog, about the same work`, async () => {
        const b = backend();
        const small = await claimWork(b, 500, pairs, analyze, { fresh: 100, keyed: true });
        const large = await claimWork(b, 5_000, pairs, analyze, { fresh: 100, keyed: true });
        expect([small.claimed, large.claimed]).toEqual([100, 100]);
        expect(large.work).toBeLessThan(small.work * 1.5);
      }, 60_000);

      it(`nothing due (the whole backlog backing off), ${stats}: a few rows of work, whatever the backlog`, async () => {
        const b = backend();
        for (const backlog of [500, 5_000]) {
          const { work, claimed } = await claimWork(b, backlog, hot, analyze, { fresh: 0 });
          expect(claimed).toBe(0);
          expect(work).toBeLessThan(10);
        }
      }, 60_000);
    }
  });
}

onBothDatabases(pg, 'the PostgreSQL outbox claim: its work follows what it takes', scenarios);
