/**
 * SQL fragments shared by the PostgreSQL stores' statements: durations from the database's clock,
 * the clock in microseconds, the payload of a wake-up notification, and the reapers' batch delete.
 * Values are never pasted in; each fragment takes the parameter (`$3`) or column it applies to.
 */

/** The longest key sent as a notification payload (PostgreSQL's limit is 8000 bytes); longer keys send '' (wake all). */
export const MAX_PAYLOAD_BYTES = 7_000;

/** The payload naming the row's `key` (or '' for a key too long to send: every watcher wakes). */
export const notifyPayload = `CASE WHEN octet_length(key) <= ${MAX_PAYLOAD_BYTES} THEN key ELSE '' END`;

/**
 * The time a scan for rows that came due compares with: `statement_timestamp()`, when the statement
 * began. It is stable within the statement, so an index on the timestamp bounds the scan to the rows
 * on the due side; `clock_timestamp()` is volatile, so the same test only filters, and a scan in time
 * order passes over every row not yet due (every live row, for a reaper with nothing to delete). A
 * few µs behind `clock_timestamp()`: a row that comes due while the statement runs waits for the next.
 */
export const statementStart = 'statement_timestamp()';

/** `clock_timestamp()` plus `param` milliseconds. */
export const msFromNow = (param: string): string =>
  `clock_timestamp() + ${param}::float8 * interval '1 millisecond'`;

/** `clock_timestamp()` in whole microseconds since the epoch, as a bigint (the fence floor). */
export const nowMicros = 'floor(extract(epoch FROM clock_timestamp()) * 1000000)::bigint';

/** The timestamptz `column` in epoch milliseconds, as a float8 (a JavaScript number on every driver). */
export const epochMs = (column: string): string => `(extract(epoch FROM ${column}) * 1000)::float8`;

/**
 * A reaper's statement: deletes at most $1 rows of `table` that match `condition`, first by `order`,
 * skipping rows another transaction holds (`FOR UPDATE SKIP LOCKED`) → one row (n). The rows are
 * picked first (by the index on `order`, bounded by `condition`: compare with {@link statementStart})
 * and then deleted by their row ids, so the delete visits the rows picked and nothing else whatever
 * the planner's statistics say (joined back on the key, it could scan the whole table).
 */
export function reapStatement(table: string, condition: string, order: string): string {
  // The picked rows are locked until the delete; the outer test is checked again all the same, and
  // a row updated since the pick has a new row id (the delete then leaves it).
  return `WITH gone AS (
        DELETE FROM ${table} WHERE ${condition} AND ctid = ANY (ARRAY(
          SELECT ctid FROM ${table} WHERE ${condition}
          ORDER BY ${order} LIMIT $1 FOR UPDATE SKIP LOCKED
        )) RETURNING 1
      )
      SELECT count(*)::int AS n FROM gone`;
}
