/**
 * SQL fragments shared by the PostgreSQL stores' statements: durations from the database's clock,
 * the clock in microseconds, the payload of a wake-up notification, and the reapers' batch delete.
 * Values are never pasted in; each fragment takes the parameter (`$3`) or column it applies to.
 */

/** The longest key sent as a notification payload (PostgreSQL's limit is 8000 bytes); longer keys send '' (wake all). */
export const MAX_PAYLOAD_BYTES = 7_000;

/** The payload naming the row's `key` (or '' for a key too long to send: every watcher wakes). */
export const notifyPayload = `CASE WHEN octet_length(key) <= ${MAX_PAYLOAD_BYTES} THEN key ELSE '' END`;

/** `clock_timestamp()` plus `param` milliseconds. */
export const msFromNow = (param: string): string =>
  `clock_timestamp() + ${param}::float8 * interval '1 millisecond'`;

/** `clock_timestamp()` in whole microseconds since the epoch, as a bigint (the fence floor). */
export const nowMicros = 'floor(extract(epoch FROM clock_timestamp()) * 1000000)::bigint';

/** The timestamptz `column` in epoch milliseconds, as a float8 (a JavaScript number on every driver). */
export const epochMs = (column: string): string => `(extract(epoch FROM ${column}) * 1000)::float8`;

/**
 * A reaper's statement: deletes at most $1 rows of `table` that match `condition`, first by `order`,
 * skipping rows another transaction holds (`FOR UPDATE SKIP LOCKED`) → one row (n). `key` lists the
 * primary key's columns (`key`, `name, id`).
 */
export function reapStatement(table: string, key: string, condition: string, order: string): string {
  // The outer test is checked again on a row that changed while we waited for it (a takeover, a
  // new lease): only rows that still match are deleted.
  return `WITH gone AS (
        DELETE FROM ${table} WHERE ${condition} AND (${key}) IN (
          SELECT ${key} FROM ${table} WHERE ${condition}
          ORDER BY ${order} LIMIT $1 FOR UPDATE SKIP LOCKED
        ) RETURNING 1
      )
      SELECT count(*)::int AS n FROM gone`;
}
