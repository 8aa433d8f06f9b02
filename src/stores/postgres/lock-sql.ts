/**
 * The statements of the PostgreSQL lock store, one per operation, for the table in `schema`
 * (quoted). Time is always `clock_timestamp()`. A key's row outlives its release (owner NULL,
 * `expires_at` the release time): it keeps the last fence, so the next one is above it even within
 * one microsecond; the reaper deletes it once the clock in µs has passed that fence by a minute (the
 * floor then keeps fences increasing on its own).
 *
 * Release sends `pg_notify` in the same statement, but only when somebody watches the key and marked
 * its row (`waiters`: by `watch`, and by each refused acquisition of a key this process watches;
 * the next acquisition clears it): a notifying transaction holds
 * PostgreSQL's notification lock through its commit, which serialises every notifying commit in
 * the database (see idempotency-sql.ts), so a lock nobody waits for must not notify.
 */
import { epochMs, msFromNow, notifyPayload, nowMicros, reapStatement, statementStart } from './sql.js';

/**
 * How far, in µs, the clock must have passed a free row's fence before the reaper deletes it. An
 * acquisition computes its candidate fence (the clock) when its statement starts; were the row
 * deleted while that statement still ran, the candidate must still be above the deleted fence. A
 * minute covers any statement within a store deadline, and a backward step of the database's clock
 * after the deletion (NTP) of up to as much.
 */
export const REAP_FLOOR_MARGIN_US = 60_000_000;

/** The SQL of each operation on `<schema>.locks`. */
export interface LockSql {
  /** $1 key, $2 owner, $3 ttlMs → one row (fence as text, expires_at in epoch ms) when acquired. */
  readonly acquire: string;
  /** As `acquire`, and marks a held key's row as awaited (`waiters`) so its release notifies. */
  readonly acquireOrWait: string;
  /** $1 key → marks a held key's row as awaited; no rows. */
  readonly markWaiters: string;
  /** $1 key, $2 owner, $3 ttlMs → one row per renewed lease. */
  readonly renew: string;
  /** $1 key, $2 owner, $3 channel → one row (n). */
  readonly release: string;
  /** $1 batch size → one row (n). */
  readonly reap: string;
}

/** The statements for the table in `schema` (already quoted). */
export function lockSql(schema: string): LockSql {
  const table = `${schema}.locks`;
  const held = `key = $1 AND owner = $2 AND expires_at > clock_timestamp()`;
  const awaited = `key = $1 AND NOT waiters AND owner IS NOT NULL AND expires_at > clock_timestamp()`;
  const floor = `${nowMicros} - ${REAP_FLOOR_MARGIN_US}`;
  // ON CONFLICT locks the key's row and tests the newest committed version of it: concurrent
  // acquirers of one key take turns on that row lock, and only the first finds it free.
  const take = `INSERT INTO ${table} AS l (key, owner, fence, expires_at, waiters)
        VALUES ($1, $2, ${nowMicros}, ${msFromNow('$3')}, false)
        ON CONFLICT (key) DO UPDATE SET owner = excluded.owner,
          fence = greatest(l.fence + 1, excluded.fence), expires_at = excluded.expires_at, waiters = false
        WHERE l.owner IS NULL OR l.expires_at <= clock_timestamp()
        RETURNING fence::text AS fence, ${epochMs('expires_at')} AS expires_at`;
  return {
    acquire: take,
    // Runs only when nothing was acquired, on the row as of the statement's snapshot: a holder that
    // committed after it is not marked (a missed hint; the waiter polls).
    acquireOrWait: `WITH acquired AS (${take}), waiting AS (
        UPDATE ${table} SET waiters = true WHERE ${awaited} AND NOT EXISTS (SELECT 1 FROM acquired)
      ) SELECT fence, expires_at FROM acquired`,
    markWaiters: `UPDATE ${table} SET waiters = true WHERE ${awaited}`,
    renew: `UPDATE ${table} SET expires_at = ${msFromNow('$3')} WHERE ${held} RETURNING 1 AS renewed`,
    // `waiters` is left as it is (RETURNING shows the new row): the next acquisition resets it.
    release: `WITH freed AS (
        UPDATE ${table} SET owner = NULL, expires_at = clock_timestamp() WHERE ${held}
        RETURNING key, waiters
      ), woken AS (SELECT CASE WHEN waiters THEN pg_notify($3, ${notifyPayload}) END FROM freed)
      SELECT count(*)::int AS n FROM woken`,
    // Released rows have expires_at = their release time, so one test covers released and expired.
    reap: reapStatement(table, `expires_at <= ${statementStart} AND fence < ${floor}`, 'expires_at'),
  };
}
