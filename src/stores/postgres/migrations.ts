/**
 * The migrations of every PostgreSQL store, in order: one plain list, appended to as patterns land.
 * A migration only adds (`CREATE … IF NOT EXISTS`, new columns with defaults, a function of a new
 * name) or replaces a function's body keeping its arguments and result: never drop, rename or
 * rewrite a table, so an older process keeps working beside a newer one, and re-running one is
 * harmless. Its `version` is its position (1, 2, …) and never changes.
 */
import { claimFunction } from './outbox-sql.js';

/** One migration: its statements, run in order in the migration transaction. */
export interface Migration {
  /** 1 for the first, then +1 each; recorded in `<schema>.migrations` once applied. */
  readonly version: number;
  /** What it does, for the `migrations` table and for people. */
  readonly name: string;
  /** The statements, given the quoted schema (e.g. `"bulwark"`). One statement each (PGlite). */
  readonly statements: (schema: string) => readonly string[];
}

/** Every migration, oldest first. Append only. */
export const migrations: readonly Migration[] = [
  {
    version: 1,
    name: 'idempotency keys',
    statements: (s) => [
      `CREATE TABLE IF NOT EXISTS ${s}.idempotency_keys (
        key text PRIMARY KEY,
        fingerprint text NOT NULL,
        status text NOT NULL CHECK (status IN ('PROCESSING', 'COMPLETED')),
        token text NOT NULL,
        result bytea,
        expires_at timestamptz NOT NULL,
        created_at timestamptz NOT NULL DEFAULT clock_timestamp(),
        waiters boolean NOT NULL DEFAULT false,
        CHECK ((status = 'COMPLETED') = (result IS NOT NULL))
      )`,
      `CREATE INDEX IF NOT EXISTS idempotency_keys_expires_at ON ${s}.idempotency_keys (expires_at)`,
    ],
  },
  {
    version: 2,
    name: 'locks and fences',
    // A lease table, not advisory locks: a session lock would not survive PgBouncer's transaction
    // pooling, and a row keeps the key's last fence after its release.
    statements: (s) => [
      `CREATE TABLE IF NOT EXISTS ${s}.locks (
        key text PRIMARY KEY,
        owner text,
        fence bigint NOT NULL,
        expires_at timestamptz NOT NULL,
        waiters boolean NOT NULL DEFAULT false
      )`,
      `CREATE INDEX IF NOT EXISTS locks_expires_at ON ${s}.locks (expires_at)`,
      `CREATE TABLE IF NOT EXISTS ${s}.fences (
        resource text PRIMARY KEY,
        fence bigint NOT NULL
      )`,
    ],
  },
  {
    version: 3,
    name: 'saga log',
    // Inputs and outputs are text, JSON stored byte for byte: jsonb would reorder keys and refuse
    // "\u0000" escapes. A finished run has no owner and has its finished_at; the partial indexes
    // cover what claims and the reaper look for.
    statements: (s) => [
      `CREATE TABLE IF NOT EXISTS ${s}.saga_runs (
        name text,
        id text,
        input text NOT NULL,
        status text NOT NULL
          CHECK (status IN ('running', 'compensating', 'completed', 'compensated', 'attention')),
        owner text,
        expires_at timestamptz NOT NULL,
        started_at timestamptz NOT NULL DEFAULT clock_timestamp(),
        finished_at timestamptz,
        PRIMARY KEY (name, id)
      )`,
      `CREATE INDEX IF NOT EXISTS saga_runs_claimable ON ${s}.saga_runs (name, expires_at)
        WHERE status IN ('running', 'compensating')`,
      `CREATE INDEX IF NOT EXISTS saga_runs_finished_at ON ${s}.saga_runs (finished_at)
        WHERE status IN ('completed', 'compensated')`,
      `CREATE TABLE IF NOT EXISTS ${s}.saga_steps (
        name text,
        saga_id text,
        step text,
        position int NOT NULL,
        state text NOT NULL
          CHECK (state IN ('running', 'done', 'failed', 'skipped', 'compensating', 'compensated')),
        output text,
        updated_at timestamptz NOT NULL DEFAULT clock_timestamp(),
        PRIMARY KEY (name, saga_id, step),
        FOREIGN KEY (name, saga_id) REFERENCES ${s}.saga_runs ON DELETE CASCADE
      )`,
    ],
  },
  {
    version: 4,
    name: 'outbox and inbox',
    // seq orders a key's events: enqueue holds a transaction-scoped advisory lock on the key, so
    // per key, seq order is commit order. Claims only ever take a key's oldest pending event (no
    // cursor: an event from a transaction that commits late is claimed like any other).
    statements: (s) => [
      `CREATE TABLE IF NOT EXISTS ${s}.outbox (
        seq bigserial PRIMARY KEY,
        id uuid NOT NULL UNIQUE,
        topic text NOT NULL,
        key text,
        payload jsonb NOT NULL,
        headers jsonb NOT NULL DEFAULT '{}',
        created_at timestamptz NOT NULL DEFAULT clock_timestamp(),
        status text NOT NULL DEFAULT 'pending' CHECK (status IN ('pending', 'delivered', 'dead')),
        attempts int NOT NULL DEFAULT 0,
        available_at timestamptz NOT NULL DEFAULT clock_timestamp(),
        owner text,
        lease_until timestamptz,
        last_error text,
        delivered_at timestamptz
      )`,
      `CREATE INDEX IF NOT EXISTS outbox_pending ON ${s}.outbox (seq) WHERE status = 'pending'`,
      `CREATE INDEX IF NOT EXISTS outbox_pending_keys ON ${s}.outbox (key, seq) WHERE status = 'pending'`,
      `CREATE INDEX IF NOT EXISTS outbox_delivered ON ${s}.outbox (delivered_at) WHERE status = 'delivered'`,
      `CREATE TABLE IF NOT EXISTS ${s}.inbox (
        consumer text,
        message_id text,
        fingerprint text,
        result text,
        processed_at timestamptz NOT NULL DEFAULT clock_timestamp(),
        PRIMARY KEY (consumer, message_id)
      )`,
      `CREATE INDEX IF NOT EXISTS inbox_processed_at ON ${s}.inbox (processed_at)`,
    ],
  },
  {
    version: 5,
    name: 'outbox claim function',
    // The claim as a function that runs under planner settings of its own (see outbox-sql.ts): its
    // work then follows the events it takes, whatever the statistics say.
    // Stryker disable next-line ArrayDeclaration: (→ []) migration 6 creates the same function right after it, in the same transaction; schemas migrated to 5 only by an older version ran the older code
    statements: (s) => [claimFunction(s)],
  },
  {
    version: 6,
    name: 'outbox claim in due order',
    // The claim walks the due events on this index, so events backing off (a broker outage) are
    // past its bound instead of passed over one by one; the function's body is replaced, with the
    // same arguments and result, so processes of the previous version claim this way too.
    statements: (s) => [
      `CREATE INDEX IF NOT EXISTS outbox_due ON ${s}.outbox (available_at, seq) WHERE status = 'pending'`,
      claimFunction(s),
    ],
  },
];
