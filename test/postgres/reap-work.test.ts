import { describe, expect, it } from 'vitest';
import { idempotencySql } from '../../src/stores/postgres/idempotency-sql.js';
import { inboxSql } from '../../src/stores/postgres/inbox-sql.js';
import { lockSql } from '../../src/stores/postgres/lock-sql.js';
import { outboxSql } from '../../src/stores/postgres/outbox-sql.js';
import { sagaLogSql } from '../../src/stores/postgres/saga-log-sql.js';
import { analyzedPlan, onBothDatabases, type PlanBackend, planWork } from '../support/plan-work.js';
import { usePostgres } from '../support/services.js';

const pg = await usePostgres();

/** A scan that should find nothing: the table, `n` rows it must leave alone, and the statement. */
interface Scan {
  readonly table: string;
  fill(s: string, n: number): string;
  statement(s: string): string;
}

const batch = (statement: string) => statement.replaceAll('$1', '1000');
const rows = (n: number) => `generate_series(1, ${n}) AS i`;

const scans: Record<string, Scan> = {
  'the idempotency reaper, every key live': {
    table: 'idempotency_keys',
    fill: (s, n) => `INSERT INTO ${s}.idempotency_keys (key, fingerprint, status, token, result, expires_at)
      SELECT 'k' || i, 'fp', 'COMPLETED', 't', '\\x00'::bytea, clock_timestamp() + interval '1 day' FROM ${rows(n)}`,
    statement: (s) => batch(idempotencySql(s).reap),
  },
  'the lock reaper, every lock held': {
    table: 'locks',
    fill: (s, n) => `INSERT INTO ${s}.locks (key, owner, fence, expires_at, waiters)
      SELECT 'k' || i, 'o', i, clock_timestamp() + interval '1 hour', false FROM ${rows(n)}`,
    statement: (s) => batch(lockSql(s).reap),
  },
  'the saga reaper, every run finished within its retention': {
    table: 'saga_runs',
    fill: (s, n) => `INSERT INTO ${s}.saga_runs (name, id, input, status, expires_at, finished_at)
      SELECT 'order', 'r' || i, '{}', 'completed', clock_timestamp(), clock_timestamp() FROM ${rows(n)}`,
    statement: (s) => batch(sagaLogSql(s).reap),
  },
  'the saga claim, every run leased': {
    table: 'saga_runs',
    fill: (s, n) => `INSERT INTO ${s}.saga_runs (name, id, input, status, owner, expires_at)
      SELECT 'order', 'r' || i, '{}', 'running', 'o', clock_timestamp() + interval '1 hour' FROM ${rows(n)}`,
    statement: (s) =>
      sagaLogSql(s).claim.replaceAll('$1', "'order'").replaceAll('$2', "'me'").replaceAll('$3', '30000'),
  },
  'the outbox reaper, every event delivered within its retention': {
    table: 'outbox',
    fill: (s, n) => `INSERT INTO ${s}.outbox (id, topic, payload, status, delivered_at)
      SELECT gen_random_uuid(), 't', '{}', 'delivered', clock_timestamp() FROM ${rows(n)}`,
    statement: (s) => batch(outboxSql(s).reap),
  },
  'the inbox reaper, every message within its retention': {
    table: 'inbox',
    fill: (s, n) => `INSERT INTO ${s}.inbox (consumer, message_id, processed_at)
      SELECT 'c', 'm' || i, clock_timestamp() FROM ${rows(n)}`,
    statement: (s) => batch(inboxSql(s).reap),
  },
};

/** The work of `scan` over `n` rows it must leave alone, and the rows its plan's root returned. */
async function scanWork(b: PlanBackend, scan: Scan, n: number, analyze: boolean) {
  const stores = await b.stores();
  const s = `"${stores.schema}"`;
  await b.committed(async (tx) => {
    await tx.query(scan.fill(s, n));
    if (analyze) await tx.query(`ANALYZE ${s}.${scan.table}`);
  });
  const plan = await b.rolledBack((tx) => analyzedPlan(tx, scan.statement(s)));
  // On pg both sizes share the test's schema.
  await b.committed((tx) => tx.query(`TRUNCATE ${s}.${scan.table} CASCADE`).then(() => undefined));
  await stores.close();
  return planWork(plan);
}

function scenarios(name: string, backend: () => PlanBackend): void {
  describe(name, () => {
    for (const [title, scan] of Object.entries(scans)) {
      for (const analyze of [false, true]) {
        it(`${title}, statistics ${analyze ? 'fresh' : 'never taken'}: ten times the rows, about the same work`, async () => {
          const b = backend();
          const small = await scanWork(b, scan, 5_000, analyze);
          const large = await scanWork(b, scan, 50_000, analyze);
          expect(large, `work at 5,000 rows: ${small}`).toBeLessThan(small * 1.5 + 10);
        }, 60_000);
      }
    }
  });
}

onBothDatabases(pg, 'the PostgreSQL stores scan what they find, not what they keep', scenarios);
