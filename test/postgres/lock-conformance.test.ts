/**
 * The lock and fence store conformance suites, unchanged, against the PostgreSQL stores on a real
 * server (`pg`, a schema per scenario) and on PGlite (one embedded instance for the file, a fresh
 * schema per scenario). Time is the database's: `elapse` is a real sleep. The fence fixture's
 * value lives in a table of its own, written by `apply(tx)` in the fence's transaction.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { describe, it } from 'vitest';
import type { PostgresStores } from '../../src/stores/postgres/index.js';
import { fenceStoreConformance, lockStoreConformance } from '../../src/testing/lock-conformance.js';
import { serverStores, useEmbeddedPostgres } from '../support/postgres-stores.js';
import { usePostgres } from '../support/services.js';

const pg = await usePostgres();

/** The lock conformance environment on a store set: the database's time passes for real. */
function lockEnvironment(stores: PostgresStores) {
  return {
    store: stores.lock,
    elapse: (ms: number) => sleep(ms),
    slackMs: 100,
    close: () => stores.close(),
  };
}

type Sql = <R>(text: string, params?: unknown[]) => Promise<R[]>;

/** The fence conformance environment: `apply` upserts the value into `<schema>.values`. */
async function fenceEnvironment(stores: PostgresStores, sql: Sql) {
  const table = `"${stores.schema}"."values"`;
  await sql(`CREATE TABLE ${table} (resource text PRIMARY KEY, value text NOT NULL)`);
  return {
    store: stores.fence,
    write: async (resource: string, fence: number, value: string) => {
      await stores.fence.write(resource, fence, (tx) =>
        tx.query(
          `INSERT INTO ${table} (resource, value) VALUES ($1, $2)
           ON CONFLICT (resource) DO UPDATE SET value = excluded.value`,
          [resource, value],
        ),
      );
    },
    read: async (resource: string) =>
      (await sql<{ value: string }>(`SELECT value FROM ${table} WHERE resource = $1`, [resource]))[0]?.value,
    close: () => stores.close(),
  };
}

pg.describe('lock and fence stores on PostgreSQL (pg)', () => {
  const sql: Sql = async (text, params) => (await pg.admin().query(text, params)).rows;
  lockStoreConformance(
    'PostgreSQL lock store (pg, server clock)',
    async () => lockEnvironment(await serverStores(pg)),
    { describe, it },
  );
  lockStoreConformance(
    'PostgreSQL lock store (pg, listen: false)',
    async () => lockEnvironment(await serverStores(pg, { listen: false })),
    { describe, it },
  );
  fenceStoreConformance(
    'PostgreSQL fence store (pg)',
    async () => fenceEnvironment(await serverStores(pg), sql),
    { describe, it },
  );
});

describe('lock and fence stores on PGlite', () => {
  const embedded = useEmbeddedPostgres();
  const sql: Sql = async (text, params) => (await embedded.db().query<never>(text, params)).rows;
  lockStoreConformance(
    'PostgreSQL lock store (PGlite, embedded)',
    async () => lockEnvironment(await embedded.stores()),
    { describe, it },
  );
  fenceStoreConformance(
    'PostgreSQL fence store (PGlite, embedded)',
    async () => fenceEnvironment(await embedded.stores(), sql),
    { describe, it },
  );
});
