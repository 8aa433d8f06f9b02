/**
 * Runs the {@link migrations} that a schema has not had yet, in one transaction that first takes a
 * transaction-scoped advisory lock on the schema (`pg_advisory_xact_lock`): processes that migrate
 * at once wait for each other, and each migration is applied exactly once. No session lock is held,
 * so it also works through PgBouncer's transaction pooling. Never destructive (see migrations.ts).
 */
import type { Database } from './database.js';
import { quoteIdent } from './identifiers.js';
import { migrations as all, type Migration } from './migrations.js';

/** The deadline of each migration statement (waiting for another process's migration included). */
export const MIGRATION_TIMEOUT_MS = 30_000;

/** First key of the advisory lock ('bulw'); the second is `hashtext(schema)`. */
const LOCK_CLASS = 0x62756c77;

/**
 * What `stores.migrate()` did.
 *
 * @example
 * const { applied } = await stores.migrate(); // [1] the first time, [] once up to date
 */
export interface MigrateResult {
  /** The versions this call applied, in order; empty when the schema was up to date. */
  readonly applied: readonly number[];
}

/** Migrates `schema` on `db` to the latest version (see the module doc). */
export function migrate(
  db: Database,
  schema: string,
  migrations: readonly Migration[] = all,
): Promise<MigrateResult> {
  const s = quoteIdent(schema);
  return db.transaction(async (tx) => {
    const run = <R>(text: string, params?: unknown[]): Promise<R[]> => db.queryIn<R>(tx, text, params);
    await run('SELECT pg_advisory_xact_lock($1::int4, hashtext($2::text))', [LOCK_CLASS, schema]);
    // Checked first: CREATE SCHEMA IF NOT EXISTS needs the CREATE privilege even when it exists.
    const exists = await run('SELECT 1 FROM pg_namespace WHERE nspname = $1', [schema]);
    if (exists.length === 0) await run(`CREATE SCHEMA IF NOT EXISTS ${s}`);
    await run(
      `CREATE TABLE IF NOT EXISTS ${s}.migrations (
        version int PRIMARY KEY,
        name text NOT NULL,
        applied_at timestamptz NOT NULL DEFAULT clock_timestamp()
      )`,
    );
    const done = new Set(
      (await run<{ version: number }>(`SELECT version FROM ${s}.migrations`)).map((row) => row.version),
    );
    const applied: number[] = [];
    for (const migration of migrations) {
      if (done.has(migration.version)) continue;
      await apply(run, s, migration);
      applied.push(migration.version);
    }
    return { applied };
  }, MIGRATION_TIMEOUT_MS);
}

async function apply(
  run: <R>(text: string, params?: unknown[]) => Promise<R[]>,
  s: string,
  migration: Migration,
): Promise<void> {
  for (const statement of migration.statements(s)) await run(statement);
  await run(`INSERT INTO ${s}.migrations (version, name) VALUES ($1, $2)`, [
    migration.version,
    migration.name,
  ]);
}
