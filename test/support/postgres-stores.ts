/**
 * Migrated `postgresStores` for tests, on the two kinds of database every PostgreSQL store runs on:
 * the test's schema on the real server, and an embedded PGlite shared by a describe block with a
 * fresh schema per call.
 */
import { PGlite } from '@electric-sql/pglite';
import type { Pool } from 'pg';
import { afterAll, beforeAll } from 'vitest';
import {
  type PostgresDatabase,
  type PostgresStores,
  type PostgresStoresOptions,
  type PostgresTransaction,
  postgresStores,
} from '../../src/stores/postgres/index.js';
import type { PostgresService } from './services.js';

/** Options of the helpers below, without the schema (each picks its own). */
export type StoreOverrides = Omit<PostgresStoresOptions, 'schema'>;

async function migrated(db: PostgresDatabase, options: PostgresStoresOptions): Promise<PostgresStores> {
  const stores = postgresStores(db, options);
  await stores.migrate();
  return stores;
}

/** Stores on the current test's schema of `pg`, migrated. */
export function serverStores(pg: PostgresService, overrides: StoreOverrides = {}): Promise<PostgresStores> {
  return migrated(pg.pool(), { schema: pg.schema, ...overrides });
}

/** An embedded database for the enclosing describe block, from {@link useEmbeddedPostgres}. */
export interface EmbeddedPostgres {
  /** The PGlite instance (throws before the block's `beforeAll` has run). */
  db(): PGlite;
  /** Migrated stores on a schema of their own (`e1`, `e2`, …), so tests do not see each other. */
  stores(overrides?: StoreOverrides): Promise<PostgresStores>;
}

/**
 * Opens a PGlite before the enclosing describe block's tests and closes it after them. Call it in
 * the block's body.
 */
export function useEmbeddedPostgres(): EmbeddedPostgres {
  let db: PGlite | undefined;
  let schemas = 0;
  beforeAll(async () => {
    db = new PGlite();
    await db.waitReady;
  }, 30_000);
  afterAll(() => db?.close());
  const current = (): PGlite => {
    if (db === undefined) throw new Error('the embedded database opens in beforeAll; use it inside a test');
    return db;
  };
  return {
    db: current,
    stores(overrides = {}) {
      schemas += 1;
      return migrated(current(), { schema: `e${schemas}`, ...overrides });
    },
  };
}

/**
 * Runs `work` in a transaction on a client of `pool` and ends it with `end` (`COMMIT` unless told);
 * rolls back and rethrows when `work` throws.
 */
export async function pgTransaction<T>(
  pool: Pool,
  work: (tx: PostgresTransaction) => Promise<T>,
  end: 'COMMIT' | 'ROLLBACK' = 'COMMIT',
): Promise<T> {
  const client = await pool.connect();
  try {
    await client.query('BEGIN');
    const value = await work(client);
    await client.query(end);
    return value;
  } catch (error) {
    await client.query('ROLLBACK');
    throw error;
  } finally {
    client.release();
  }
}
