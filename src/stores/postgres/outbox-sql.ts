/**
 * The statements of the PostgreSQL outbox, for the table in `schema` (quoted). Time is
 * `clock_timestamp()`, but for the bounds of index scans (the statement's start, which is stable:
 * `clock_timestamp()` can only filter). A key's events are ordered by `seq`: `enqueue` first takes a
 * transaction-scoped advisory lock on each of its keys (in one order, so two transactions never
 * deadlock on them), so a later transaction on a key gets its `seq` only after the earlier one
 * committed. A claim takes only the oldest pending event of each key, and never skips one: there
 * is no cursor, so an event whose transaction committed late is claimed like any other.
 *
 * The claim is a function in the schema (`outbox_claim`, migrations 5 and 6, see
 * {@link claimFunction}): it walks the due events in due order and stops once it holds `limit`, so
 * its work follows the events it takes, not the backlog (due or backing off), whatever the
 * planner's statistics say.
 */
import { epochMs, msFromNow, reapStatement, statementStart } from './sql.js';

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
  /** $1 owner, $2 limit, $3 leaseMs → the claimed events (through `outbox_claim`). */
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

/** Keys of blocked events a claim's walk remembers and passes over; past them it asks per event. */
const SKIPPED_KEYS = 64;

/** `o` is pending, due, and not leased to a relay (an ended lease counts as none). */
const claimable = (o: string) => `${o}.status = 'pending' AND ${o}.available_at <= clock_timestamp()
        AND (${o}.lease_until IS NULL OR ${o}.lease_until <= clock_timestamp())`;

/**
 * The claim's statement: $1 owner, $2 limit, $3 leaseMs. A recursive walk visits the due pending
 * events in due order (`available_at`, then `seq`), one step each on the `outbox_due` index, bounded
 * by the statement's start; the outer `LIMIT` stops it once `limit` events are locked. Events still
 * backing off are past the bound, so during a broker outage a claim costs the events that are due
 * (new ones, retries whose time came, those leased to relays), not the backlog waiting for a retry.
 *
 * A key's queue is kept due no sooner than its head (`insert` and `failed` see to it), so while a
 * broker is down the events blocked behind heads that are backing off are past the bound too.
 *
 * Each event it visits asks for its key's head (the key's oldest pending event, one step on the
 * `(key, seq)` index: the order leaves no other plan). The event is picked if it is that head. If
 * not, it is blocked, and its key joins `skipped` (up to {@link SKIPPED_KEYS} keys), whose events
 * the walk's index scan then passes over in one filter each: a few hot keys with long queues cost
 * one pass, not a step per event. In due order a key's head may come after its queue (its retry
 * time came later than their enqueue): a blocked event whose head is still ahead picks the head at
 * once, since the walk will pass it over. Past {@link SKIPPED_KEYS} keys nothing is skipped or
 * picked ahead, and every head is picked where the walk meets it. (A head after its queue is rare
 * now: a redriven dead letter, rows written by a version before migration 6, or an enqueue under
 * `REPEATABLE READ` whose snapshot predates its key's lock.) The picks are locked
 * `FOR UPDATE SKIP LOCKED` and checked again under the lock (due now, not leased: an event another
 * relay just claimed is left to it).
 *
 * Earlier statements walked in `seq` order, with "due" a filter: while a broker was down, every
 * claim (one per wake-up) passed over every event backing off. Before that, one sorted every
 * pending event (each with its own older-event probe) before its `LIMIT`: a claim cost the whole
 * backlog whenever the planner lacked fresh statistics, and with a few hot keys it could be quadratic.
 */
export function claimStatement(table: string): string {
  const next = (after: string, skipped: string) => `SELECT n.available_at, n.seq, n.key FROM ${table} AS n
        WHERE n.status = 'pending' AND n.available_at <= ${statementStart} AND (n.available_at, n.seq) > ${after}
          AND (n.lease_until IS NULL OR n.lease_until <= clock_timestamp())
          AND (n.key IS NULL OR n.key <> ALL (${skipped}))
        ORDER BY n.available_at, n.seq LIMIT 1`;
  // The event to pick on visiting `o`, and the keys skipped from then on.
  const visit = (o: string, skipped: string) => `SELECT
          CASE WHEN ${o}.key IS NULL OR h.seq = ${o}.seq THEN ${o}.seq
            WHEN cardinality(${skipped}) < ${SKIPPED_KEYS} AND (h.available_at, h.seq) > (${o}.available_at, ${o}.seq)
            THEN h.seq END AS pick,
          CASE WHEN ${o}.key IS NULL OR h.seq = ${o}.seq OR cardinality(${skipped}) >= ${SKIPPED_KEYS}
            THEN ${skipped} ELSE ${skipped} || ${o}.key END AS skipped
        FROM (SELECT) AS visited LEFT JOIN LATERAL (
          SELECT e.available_at, e.seq FROM ${table} AS e WHERE e.status = 'pending' AND e.key = ${o}.key
          ORDER BY e.key, e.seq LIMIT 1
        ) AS h ON true`;
  return `WITH RECURSIVE walk(due, seq, pick, skipped) AS (
        SELECT f.available_at, f.seq, v.pick, v.skipped
        FROM (${next("('-infinity'::timestamptz, 0::bigint)", 'ARRAY[]::text[]')}) AS f
        CROSS JOIN LATERAL (${visit('f', 'ARRAY[]::text[]')}) AS v
        UNION ALL
        SELECT n.available_at, n.seq, v.pick, v.skipped
        FROM walk
        CROSS JOIN LATERAL (${next('(walk.due, walk.seq)', 'walk.skipped')}) AS n
        CROSS JOIN LATERAL (${visit('n', 'walk.skipped')}) AS v
      ), picked AS (
        SELECT c.seq FROM walk CROSS JOIN LATERAL (
          SELECT o.seq FROM ${table} AS o WHERE o.seq = walk.pick AND ${claimable('o')}
          FOR UPDATE SKIP LOCKED
        ) AS c
        LIMIT $2
      )
      UPDATE ${table} AS o SET owner = $1, lease_until = ${msFromNow('$3')}
      FROM picked WHERE o.seq = picked.seq
      RETURNING ${message('o')}`;
}

/**
 * The planner settings the claim runs under: every step of its walk and every lookup is then an
 * index scan. Without them the planner may answer a walk step ("the next pending event after this
 * one") with a bitmap scan of every pending event and a sort, which it prices below the ordered index
 * scan whenever its statistics say few events are pending: stale statistics (a backlog that grew
 * since the last `ANALYZE`) made each step, and so each claim, cost the whole backlog. `jit` is off
 * because the settings work by pricing the other plans out, which would make the planner think the
 * statement costly enough to compile.
 */
export const CLAIM_PLANNER_SETTINGS: readonly (readonly [string, string])[] = [
  ['enable_seqscan', 'off'],
  ['enable_bitmapscan', 'off'],
  ['enable_sort', 'off'],
  ['enable_hashjoin', 'off'],
  ['enable_mergejoin', 'off'],
  ['jit', 'off'],
];

/**
 * `<schema>.outbox_claim(owner, limit, leaseMs)`: {@link claimStatement} under
 * {@link CLAIM_PLANNER_SETTINGS}: a function's `SET` clauses hold for its own statements only, and
 * for the caller it is one statement (so it works through PgBouncer's transaction pooling). In
 * PL/pgSQL, so each connection keeps the statement's plan instead of planning it per call. A new
 * migration that replaces the body (as 6 did) changes the claim of every process at once, older
 * versions' included: keep its arguments and result, or give the function a new name.
 */
export function claimFunction(schema: string): string {
  const settings = CLAIM_PLANNER_SETTINGS.map(([name, value]) => `SET ${name} = ${value}`).join(' ');
  const statement = claimStatement(`${schema}.outbox`)
    .replaceAll('$1', 'claim_owner')
    .replaceAll('$2', 'claim_limit')
    .replaceAll('$3', 'claim_lease_ms');
  return `CREATE OR REPLACE FUNCTION ${schema}.outbox_claim(claim_owner text, claim_limit int, claim_lease_ms float8)
      RETURNS TABLE (id text, topic text, key text, payload text, headers text, attempts int, created_at float8, seq text)
      LANGUAGE plpgsql ${settings}
      AS $claim$
      #variable_conflict use_column
      BEGIN
        RETURN QUERY WITH claimed AS (${statement}) SELECT * FROM claimed;
      END
      $claim$`;
}

/** The statements for the table in `schema` (already quoted). */
export function outboxSql(schema: string): OutboxSql {
  const table = `${schema}.outbox`;
  return {
    // The subquery sorts the hashes; the aggregate then takes the locks in that order.
    lockKeys: `SELECT count(pg_advisory_xact_lock(h))::int AS n FROM (
        SELECT DISTINCT hashtextextended($1 || k, 0) AS h FROM jsonb_array_elements_text($2::jsonb) AS k ORDER BY h
      ) AS keys`,
    // A key's new event is due no sooner than the key's head (see claimStatement).
    insert: `WITH added AS (
        INSERT INTO ${table} (id, topic, key, payload, headers, available_at)
        SELECT e.id, e.topic, e.key, e.payload, e.headers, greatest(clock_timestamp(), (
          SELECT h.available_at FROM ${table} AS h WHERE h.status = 'pending' AND h.key = e.key
          ORDER BY h.key, h.seq LIMIT 1
        ))
        FROM jsonb_to_recordset($1::jsonb) AS e(id uuid, topic text, key text, payload jsonb, headers jsonb, n int)
        ORDER BY e.n
        RETURNING 1
      ) SELECT count(*)::int AS n, pg_notify($2, '') FROM added`,
    claim: `SELECT * FROM ${schema}.outbox_claim($1::text, $2::int, $3::float8)`,
    delivered: `WITH done AS (
        UPDATE ${table} SET status = 'delivered', delivered_at = clock_timestamp(), owner = NULL, lease_until = NULL
        WHERE owner = $1 AND status = 'pending'
          AND id IN (SELECT value::uuid FROM jsonb_array_elements_text($2::jsonb))
        RETURNING 1
      ) SELECT count(*)::int AS n FROM done`,
    // A retried event's queue (the later pending events of its key) is due no sooner than it. Rows
    // of the queue locked elsewhere are left as they are (it only saves claims work): no waiting,
    // and no lock-order deadlock with another relay's statement.
    failed: `WITH done AS (
        UPDATE ${table} AS o SET attempts = o.attempts + 1, last_error = f.error,
          available_at = ${msFromNow('f.retry_ms')}, owner = NULL, lease_until = NULL,
          status = CASE WHEN f.dead THEN 'dead' ELSE 'pending' END
        FROM jsonb_to_recordset($2::jsonb) AS f(id uuid, error text, retry_ms float8, dead boolean)
        WHERE o.id = f.id AND o.owner = $1 AND o.status = 'pending'
        RETURNING o.key, o.seq, o.available_at, o.status
      ), queued AS (
        UPDATE ${table} AS q SET available_at = l.due
        FROM (
          SELECT b.seq, d.available_at AS due FROM done AS d JOIN ${table} AS b ON b.key = d.key AND b.seq > d.seq
          WHERE d.status = 'pending' AND b.status = 'pending' AND b.available_at < d.available_at
          FOR UPDATE OF b SKIP LOCKED
        ) AS l
        WHERE q.seq = l.seq
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
      `status = 'delivered' AND delivered_at <= ${statementStart} - ${OUTBOX_RETENTION_MS} * interval '1 millisecond'`,
      'delivered_at',
    ),
  };
}
