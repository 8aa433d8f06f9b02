/**
 * The statements of the PostgreSQL outbox, for the table in `schema` (quoted). Time is always
 * `clock_timestamp()`. A key's events are ordered by `seq`: `enqueue` first takes a
 * transaction-scoped advisory lock on each of its keys (in one order, so two transactions never
 * deadlock on them), so a later transaction on a key gets its `seq` only after the earlier one
 * committed. A claim takes only the oldest pending event of each key, and never skips one: there
 * is no cursor, so an event whose transaction committed late is claimed like any other.
 */
import { epochMs, msFromNow, reapStatement } from './sql.js';

/**
 * How long delivered events are kept before the reaper deletes them, in ms (an hour: enough to
 * look at what went out recently).
 */
export const OUTBOX_RETENTION_MS = 3_600_000;

/** The SQL of each operation on `<schema>.outbox`. */
export interface OutboxSql {
  /** $1 the lock namespace, $2 the keys as a JSON array → one row. */
  readonly lockKeys: string;
  /** $1 the events as a JSON array (id, topic, key, payload, headers, n), $2 the channel → one row. */
  readonly insert: string;
  /** $1 owner, $2 limit, $3 leaseMs → the claimed events. */
  readonly claim: string;
  /** $1 owner, $2 ids as a JSON array → one row (n). */
  readonly delivered: string;
  /** $1 owner, $2 failures as a JSON array (id, error, retry_ms, dead) → one row (n). */
  readonly failed: string;
  /** $1 owner → no rows. */
  readonly release: string;
  /** $1 limit, $2 topic or NULL → the dead letters, oldest first. */
  readonly deadLetters: string;
  /** $1 ids as a JSON array or NULL, $2 topic or NULL, $3 the channel → one row (n). */
  readonly redrive: string;
  /** $1 batch size → one row (n). */
  readonly reap: string;
}

const message = (o: string) =>
  `${o}.id::text AS id, ${o}.topic, ${o}.key, ${o}.payload::text AS payload, ${o}.headers::text AS headers,
   ${o}.attempts, ${epochMs(`${o}.created_at`)} AS created_at, ${o}.seq::text AS seq`;

/** The statements for the table in `schema` (already quoted). */
export function outboxSql(schema: string): OutboxSql {
  const table = `${schema}.outbox`;
  return {
    // The subquery sorts the hashes; the aggregate then takes the locks in that order.
    lockKeys: `SELECT count(pg_advisory_xact_lock(h))::int AS n FROM (
        SELECT DISTINCT hashtextextended($1 || k, 0) AS h FROM jsonb_array_elements_text($2::jsonb) AS k ORDER BY h
      ) AS keys`,
    insert: `WITH added AS (
        INSERT INTO ${table} (id, topic, key, payload, headers)
        SELECT e.id, e.topic, e.key, e.payload, e.headers
        FROM jsonb_to_recordset($1::jsonb) AS e(id uuid, topic text, key text, payload jsonb, headers jsonb, n int)
        ORDER BY e.n
        RETURNING 1
      ) SELECT count(*)::int AS n, pg_notify($2, '') FROM added`,
    claim: `WITH picked AS (
        SELECT o.seq FROM ${table} AS o
        WHERE o.status = 'pending' AND o.available_at <= clock_timestamp()
          AND (o.lease_until IS NULL OR o.lease_until <= clock_timestamp())
          AND (o.key IS NULL OR NOT EXISTS (
            SELECT 1 FROM ${table} AS e WHERE e.status = 'pending' AND e.key = o.key AND e.seq < o.seq
          ))
        ORDER BY o.seq LIMIT $2 FOR UPDATE SKIP LOCKED
      )
      UPDATE ${table} AS o SET owner = $1, lease_until = ${msFromNow('$3')}
      FROM picked WHERE o.seq = picked.seq
      RETURNING ${message('o')}`,
    delivered: `WITH done AS (
        UPDATE ${table} SET status = 'delivered', delivered_at = clock_timestamp(), owner = NULL, lease_until = NULL
        WHERE owner = $1 AND status = 'pending'
          AND id IN (SELECT value::uuid FROM jsonb_array_elements_text($2::jsonb))
        RETURNING 1
      ) SELECT count(*)::int AS n FROM done`,
    failed: `WITH done AS (
        UPDATE ${table} AS o SET attempts = o.attempts + 1, last_error = f.error,
          available_at = ${msFromNow('f.retry_ms')}, owner = NULL, lease_until = NULL,
          status = CASE WHEN f.dead THEN 'dead' ELSE 'pending' END
        FROM jsonb_to_recordset($2::jsonb) AS f(id uuid, error text, retry_ms float8, dead boolean)
        WHERE o.id = f.id AND o.owner = $1 AND o.status = 'pending'
        RETURNING 1
      ) SELECT count(*)::int AS n FROM done`,
    release: `UPDATE ${table} SET owner = NULL, lease_until = NULL WHERE owner = $1 AND status = 'pending'`,
    deadLetters: `SELECT ${message('o')}, o.last_error FROM ${table} AS o
      WHERE o.status = 'dead' AND ($2::text IS NULL OR o.topic = $2) ORDER BY o.seq LIMIT $1`,
    redrive: `WITH back AS (
        UPDATE ${table} SET status = 'pending', attempts = 0, available_at = clock_timestamp()
        WHERE status = 'dead' AND ($2::text IS NULL OR topic = $2)
          AND ($1::jsonb IS NULL OR id IN (SELECT value::uuid FROM jsonb_array_elements_text($1::jsonb)))
        RETURNING 1
      ) SELECT count(*)::int AS n, CASE WHEN count(*) > 0 THEN pg_notify($3, '') END FROM back`,
    reap: reapStatement(
      table,
      'seq',
      `status = 'delivered' AND delivered_at <= clock_timestamp() - ${OUTBOX_RETENTION_MS} * interval '1 millisecond'`,
      'delivered_at',
    ),
  };
}
