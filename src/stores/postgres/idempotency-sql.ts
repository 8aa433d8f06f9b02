/**
 * The statements of the PostgreSQL idempotency store, one per decision, for the table in `schema`
 * (quoted). Time is always `clock_timestamp()`; `expires_at` is the lease end while PROCESSING and
 * the retention end once COMPLETED. Completion and release send `pg_notify` in the same statement,
 * but only for a record a duplicate saw in progress (`waiters`, set by that duplicate's claim): a
 * transaction that notifies holds PostgreSQL's notification lock through its commit, which
 * serialises every notifying commit in the database (about 1 000 per second with fsync), so
 * requests nobody waits for must not notify.
 */

import { msFromNow as ms, notifyPayload as payload, reapStatement, statementStart } from './sql.js';

/** The SQL of each decision on `<schema>.idempotency_keys`. */
export interface IdempotencySql {
  /** $1 key, $2 fingerprint, $3 new token, $4 leaseMs → rows of (outcome, result, remaining_ms). */
  readonly claim: string;
  /** $1 key, $2 token, $3 result (bytea), $4 ttlMs, $5 channel → one row (n). */
  readonly complete: string;
  /** $1 key, $2 token, $3 channel → one row (n). */
  readonly release: string;
  /** $1 key, $2 token, $3 leaseMs → one row per renewed record. */
  readonly renew: string;
  /** $1 batch size → one row (n). */
  readonly reap: string;
}

/** The statements for the table in `schema` (already quoted). */
export function idempotencySql(schema: string): IdempotencySql {
  const table = `${schema}.idempotency_keys`;
  const owned = `key = $1 AND token = $2 AND status = 'PROCESSING' AND expires_at > clock_timestamp()`;
  return {
    // A live record (as of the statement's snapshot) answers; otherwise insert, or take over an
    // expired record in place. A row committed by a concurrent claim after our snapshot makes both
    // parts empty (ON CONFLICT sees it live and leaves it): the caller runs the statement again.
    claim: `WITH live AS (
        SELECT fingerprint, status, result, expires_at FROM ${table}
        WHERE key = $1 AND expires_at > clock_timestamp()
      ), claimed AS (
        INSERT INTO ${table} AS r (key, fingerprint, status, token, result, expires_at, created_at)
        SELECT $1, $2, 'PROCESSING', $3, NULL, ${ms('$4')}, clock_timestamp()
        WHERE NOT EXISTS (SELECT 1 FROM live)
        ON CONFLICT (key) DO UPDATE SET fingerprint = excluded.fingerprint, status = 'PROCESSING',
          token = excluded.token, result = NULL, expires_at = excluded.expires_at,
          created_at = excluded.created_at
        WHERE r.expires_at <= clock_timestamp()
        RETURNING 1
      ), waiting AS (
        UPDATE ${table} SET waiters = true
        WHERE key = $1 AND fingerprint = $2 AND status = 'PROCESSING' AND NOT waiters
          AND expires_at > clock_timestamp() AND EXISTS (SELECT 1 FROM live)
      )
      SELECT 'claimed' AS outcome, NULL::bytea AS result, NULL::float8 AS remaining_ms FROM claimed
      UNION ALL
      SELECT CASE WHEN fingerprint <> $2 THEN 'mismatch'
                  WHEN status = 'COMPLETED' THEN 'completed' ELSE 'in_progress' END,
             CASE WHEN fingerprint = $2 AND status = 'COMPLETED' THEN result END,
             CASE WHEN status = 'PROCESSING'
                  THEN extract(epoch FROM expires_at - clock_timestamp())::float8 * 1000 END
      FROM live`,
    complete: `WITH done AS (
        UPDATE ${table} SET status = 'COMPLETED', result = $3::bytea, expires_at = ${ms('$4')}
        WHERE ${owned} RETURNING key, waiters
      ), woken AS (SELECT CASE WHEN waiters THEN pg_notify($5, ${payload}) END FROM done)
      SELECT count(*)::int AS n FROM woken`,
    release: `WITH gone AS (
        DELETE FROM ${table} WHERE ${owned} RETURNING key, waiters
      ), woken AS (SELECT CASE WHEN waiters THEN pg_notify($3, ${payload}) END FROM gone)
      SELECT count(*)::int AS n FROM woken`,
    renew: `UPDATE ${table} SET expires_at = ${ms('$3')} WHERE ${owned} RETURNING 1 AS renewed`,
    reap: reapStatement(table, `expires_at < ${statementStart}`, 'expires_at'),
  };
}
