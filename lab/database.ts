/**
 * The database a build runs on, whichever it is: an embedded PGlite (the default run) or one
 * schema of a PostgreSQL server (the multi-worker run, every worker on its own pool). The lab's
 * own SQL and the bulwark PostgreSQL stores both run on it.
 */
import { PGlite } from '@electric-sql/pglite';
import pg from 'pg';
import type { PostgresDatabase, PostgresTransaction } from '../src/stores/postgres/index.js';

/** A database of the lab. */
export interface LabDatabase extends PostgresTransaction {
  /** What `postgresStores(...)` is given: the PGlite instance or the pg Pool. */
  readonly handle: PostgresDatabase;
  /** Runs `work` in one transaction: committed when it resolves, rolled back when it rejects. */
  transaction<T>(work: (tx: PostgresTransaction) => Promise<T>): Promise<T>;
  close(): Promise<void>;
}

/**
 * An in-memory PGlite.
 *
 * @example
 * const db = await pgliteDatabase();
 */
export async function pgliteDatabase(): Promise<LabDatabase> {
  const db = new PGlite();
  await db.waitReady;
  return {
    handle: db,
    query: (text, params) => db.query(text, params),
    transaction: (work) => db.transaction(work),
    close: () => db.close(),
  };
}

/**
 * A pool of `connections` on the PostgreSQL at `url` whose unqualified names resolve in `schema`
 * (its `search_path`).
 *
 * @example
 * const db = postgresDatabase('postgres://127.0.0.1:5432/test', 'lab_1234_bulwark', 8);
 */
export function postgresDatabase(url: string, schema: string, connections: number): LabDatabase {
  const pool = new pg.Pool({
    connectionString: url,
    max: connections,
    options: `-c search_path=${schema}`,
    connectionTimeoutMillis: 5_000,
  });
  pool.on('error', () => undefined); // an idle client's error: its next query reports it
  const on =
    (client: pg.Pool | pg.PoolClient) =>
    <R>(text: string, params?: unknown[]) =>
      client.query(text, params) as unknown as Promise<{ rows: R[] }>;
  return {
    handle: pool,
    query: on(pool),
    async transaction(work) {
      const client = await pool.connect();
      try {
        await client.query('BEGIN');
        const result = await work({ query: on(client) });
        await client.query('COMMIT');
        return result;
      } catch (error) {
        await client.query('ROLLBACK').catch(() => undefined);
        throw error;
      } finally {
        client.release();
      }
    },
    close: () => pool.end(),
  };
}
