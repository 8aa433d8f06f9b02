/**
 * `stores.migrate()` on a real server: concurrent migrations from several pools apply each migration
 * once, a second run is a no-op, schemas are independent, and nothing is dropped. Also on PGlite.
 */
import { PGlite } from '@electric-sql/pglite';
import { describe, expect, it } from 'vitest';
import { isStoreUnavailableError } from '../../src/core/errors.js';
import { postgresStores } from '../../src/stores/postgres/index.js';
import { migrations } from '../../src/stores/postgres/migrations.js';
import { CLAIM_PLANNER_SETTINGS } from '../../src/stores/postgres/outbox-sql.js';
import { pgTransaction } from '../support/postgres-stores.js';
import { usePostgres } from '../support/services.js';

const pg = await usePostgres();
const latest = migrations.map((m) => m.version);

pg.describe('migrations on PostgreSQL (pg)', () => {
  /** Runs `body` with extra schemas of its own, dropped afterwards. */
  async function withSchemas(names: string[], body: () => Promise<void>): Promise<void> {
    try {
      await body();
    } finally {
      for (const name of names) await pg.admin().query(`DROP SCHEMA IF EXISTS "${name}" CASCADE`);
    }
  }

  it('concurrent migrate() from several pools: no error, each migration applied once; then a no-op', async () => {
    const schema = `${pg.schema}_c`;
    await withSchemas([schema], async () => {
      const stores = Array.from({ length: 6 }, () => postgresStores(pg.pool({ max: 2 }), { schema }));
      const results = await Promise.all(stores.map((s) => s.migrate()));
      expect(results.filter((r) => r.applied.length > 0)).toEqual([{ applied: latest }]);
      const { rows } = await pg
        .admin()
        .query<{ version: number }>(`SELECT version FROM "${schema}".migrations ORDER BY version`);
      expect(rows.map((r) => r.version)).toEqual(latest);
      expect(await stores[0]!.migrate()).toEqual({ applied: [] });
      await Promise.all(stores.map((s) => s.close()));
    });
  });

  it('a second schema is independent; migrating again keeps the data', async () => {
    const other = `${pg.schema}_b`;
    await withSchemas([other], async () => {
      const pool = pg.pool();
      const a = postgresStores(pool, { schema: pg.schema });
      const b = postgresStores(pool, { schema: other });
      expect(await a.migrate()).toEqual({ applied: latest });
      const claim = await a.idempotency.claim('k', 'fp', 60_000);
      expect(claim.status).toBe('claimed');
      expect(await b.migrate()).toEqual({ applied: latest });
      expect((await b.idempotency.claim('k', 'fp', 60_000)).status).toBe('claimed');
      expect(await a.migrate()).toEqual({ applied: [] });
      expect((await a.idempotency.claim('k', 'fp', 60_000)).status).toBe('in_progress');
      await Promise.all([a.close(), b.close()]);
    });
  });

  it('creates the documented table: CHECK on status, an index on expires_at', async () => {
    const stores = postgresStores(pg.pool(), { schema: pg.schema });
    await stores.migrate();
    const admin = pg.admin();
    const { rows: columns } = await admin.query<{ column_name: string; data_type: string }>(
      'SELECT column_name, data_type FROM information_schema.columns WHERE table_schema = $1 AND table_name = $2 ORDER BY ordinal_position',
      [pg.schema, 'idempotency_keys'],
    );
    expect(columns.map((c) => `${c.column_name} ${c.data_type}`)).toEqual([
      'key text',
      'fingerprint text',
      'status text',
      'token text',
      'result bytea',
      'expires_at timestamp with time zone',
      'created_at timestamp with time zone',
      'waiters boolean',
    ]);
    const { rows: indexes } = await admin.query<{ indexdef: string }>(
      'SELECT indexdef FROM pg_indexes WHERE schemaname = $1 AND tablename = $2',
      [pg.schema, 'idempotency_keys'],
    );
    expect(indexes.some((i) => i.indexdef.includes('(expires_at)'))).toBe(true);
    await expect(
      admin.query(
        `INSERT INTO "${pg.schema}".idempotency_keys (key, fingerprint, status, token, expires_at) VALUES ('x', 'f', 'DONE', 't', now())`,
      ),
    ).rejects.toThrow(/check constraint/);
    await stores.close();
  });
});

/** The indexes the stores' statements rely on, by table. */
const INDEXES = {
  saga_runs: ['saga_runs_claimable', 'saga_runs_finished_at'],
  outbox: ['outbox_pending', 'outbox_pending_keys', 'outbox_delivered', 'outbox_due'],
  inbox: ['inbox_processed_at'],
};

pg.describe('migrations on PostgreSQL (pg): what they create', () => {
  it("creates every index the stores' statements rely on", async () => {
    const stores = postgresStores(pg.pool(), { schema: pg.schema });
    await stores.migrate();
    for (const [table, names] of Object.entries(INDEXES)) {
      const { rows } = await pg
        .admin()
        .query<{ indexname: string }>(
          'SELECT indexname FROM pg_indexes WHERE schemaname = $1 AND tablename = $2',
          [pg.schema, table],
        );
      expect(rows.map((r) => r.indexname)).toEqual(expect.arrayContaining(names));
    }
    await stores.close();
  });

  it('creates the outbox claim function with its planner settings', async () => {
    const stores = postgresStores(pg.pool(), { schema: pg.schema });
    await stores.migrate();
    const { rows } = await pg
      .admin()
      .query<{ proconfig: string[] }>(
        'SELECT p.proconfig FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace WHERE n.nspname = $1 AND p.proname = $2',
        [pg.schema, 'outbox_claim'],
      );
    expect(rows.map((r) => r.proconfig)).toEqual([
      CLAIM_PLANNER_SETTINGS.map(([name, value]) => `${name}=${value}`),
    ]);
    await stores.close();
  });
});

pg.describe('migrations on PostgreSQL (pg): from an older version', () => {
  it("a schema at migration 5 gets 6: the due index, and the claim function's body replaced", async () => {
    const stores = postgresStores(pg.pool(), { schema: pg.schema });
    await stores.migrate();
    const admin = pg.admin();
    const s = `"${pg.schema}"`;
    // Back to version 5, with a body of the claim that takes nothing (any older body).
    await admin.query(`DELETE FROM ${s}.migrations WHERE version = 6`);
    await admin.query(`DROP INDEX ${s}.outbox_due`);
    await admin.query(`CREATE OR REPLACE FUNCTION ${s}.outbox_claim(claim_owner text, claim_limit int, claim_lease_ms float8)
      RETURNS TABLE (id text, topic text, key text, payload text, headers text, attempts int, created_at float8, seq text)
      LANGUAGE sql AS 'SELECT NULL::text, NULL, NULL, NULL, NULL, NULL::int, NULL::float8, NULL WHERE false'`);
    await pgTransaction(pg.pool(), (tx) => stores.outbox.enqueue(tx, [{ topic: 't', payload: 1 }]));
    expect(await stores.outbox.claim('r', 10, 10_000)).toEqual([]);
    expect(await stores.migrate()).toEqual({ applied: [6] });
    expect((await stores.outbox.claim('r', 10, 10_000)).map((m) => m.payload)).toEqual([1]);
    const { rows } = await admin.query('SELECT 1 FROM pg_indexes WHERE schemaname = $1 AND indexname = $2', [
      pg.schema,
      'outbox_due',
    ]);
    expect(rows).toHaveLength(1);
    const { rows: recorded } = await admin.query(`SELECT name FROM ${s}.migrations WHERE version = 6`);
    expect(recorded).toEqual([{ name: 'outbox claim in due order' }]);
    await stores.close();
  });
});

const NOT_MIGRATED = /does not exist \(has `await stores\.migrate\(\)` run on this schema\?\)/;

pg.describe('a schema not migrated (pg)', () => {
  it('a missing table or claim function fails as StoreUnavailableError saying to migrate', async () => {
    const stores = postgresStores(pg.pool(), { schema: pg.schema });
    const missingTable = await stores.idempotency.claim('k', 'fp', 60_000).catch((e: unknown) => e);
    expect(isStoreUnavailableError(missingTable)).toBe(true);
    expect((missingTable as Error).message).toMatch(NOT_MIGRATED);
    await stores.migrate();
    // A schema migrated by an older version: everything but the claim function.
    await pg.admin().query(`DROP FUNCTION "${pg.schema}".outbox_claim(text, int, float8)`);
    const missingFunction = await stores.outbox.claim('relay', 10, 10_000).catch((e: unknown) => e);
    expect(isStoreUnavailableError(missingFunction)).toBe(true);
    expect((missingFunction as Error).message).toMatch(NOT_MIGRATED);
    await stores.close();
  });
});

describe('migrations on PGlite', () => {
  it('a missing table fails as StoreUnavailableError saying to migrate', async () => {
    const db = new PGlite();
    // A call's deadline (1 s) counts PGlite's start-up, which a loaded machine can take longer for.
    await db.waitReady;
    try {
      const stores = postgresStores(db, { schema: 'fresh' });
      const failure = await stores.outbox.claim('relay', 10, 10_000).catch((e: unknown) => e);
      expect(isStoreUnavailableError(failure)).toBe(true);
      expect((failure as Error).message).toMatch(NOT_MIGRATED);
    } finally {
      await db.close();
    }
  }, 30_000);

  it('migrates once, then is a no-op; schemas are independent', async () => {
    const db = new PGlite();
    try {
      const a = postgresStores(db, { schema: 'a' });
      const b = postgresStores(db, { schema: 'b b' });
      const [first, second] = await Promise.all([a.migrate(), a.migrate()]);
      expect([first, second]).toContainEqual({ applied: latest });
      expect([first, second]).toContainEqual({ applied: [] });
      expect(await b.migrate()).toEqual({ applied: latest });
      const { rows } = await db.query<{ version: number }>('SELECT version FROM a.migrations');
      expect(rows.map((r) => r.version)).toEqual(latest);
    } finally {
      await db.close();
    }
  }, 30_000);
});
