/**
 * The query interface over what a user passes as the database: a `pg` Pool or a PGlite instance,
 * every query under a deadline of its own. One place for `postgresStores` and `versionedRows`.
 */
import type { Clock } from '../../core/clock.js';
import { show } from '../../core/validate.js';
import { type Database, isPGlite, isPgPool } from './database.js';
import { QueryDeadline } from './deadline.js';
import { PgDatabase } from './pg-database.js';
import { PGliteDatabase } from './pglite-database.js';

/**
 * `db` as a {@link Database}, each query failing with `StoreUnavailableError` past `timeoutMs` on
 * `clock`, and that deadline (`stop()` it when done: its timer is unref'd while idle). Throws a
 * `TypeError` for anything but a pg Pool or a PGlite instance (a pg Client too: a session of its
 * own is not what the stores take).
 */
export function openDatabase(
  db: unknown,
  clock: Clock,
  timeoutMs: number,
): { readonly database: Database; readonly deadline: QueryDeadline } {
  if (isPGlite(db)) {
    const deadline = new QueryDeadline(clock, timeoutMs, 'PGlite');
    return { database: new PGliteDatabase(db, deadline), deadline };
  }
  if (isPgPool(db)) {
    const deadline = new QueryDeadline(clock, timeoutMs, 'PostgreSQL');
    return { database: new PgDatabase(db, deadline), deadline };
  }
  throw new TypeError(`expected "db" to be a pg Pool or a PGlite instance, got ${show(db)}`);
}
