/**
 * `bulwark/postgres`: PostgreSQL-backed stores for the distributed patterns, on a `pg` Pool or an
 * embedded PGlite instance (`@electric-sql/pglite`, no server). `await stores.migrate()` creates
 * their tables; every store call has its own deadline (`timeoutMs`, default 1000 ms) and fails with
 * `StoreUnavailableError`; time always comes from the database's `clock_timestamp()`.
 */
import type { PostgresDatabase } from './database.js';
import { PostgresFenceStore } from './fence.js';
import { PostgresIdempotencyStore } from './idempotency.js';
import { PostgresInbox } from './inbox.js';
import { PostgresLockStore } from './lock.js';
import { type MigrateResult, migrate } from './migrate.js';
import { openDatabase } from './open-database.js';
import { type PostgresStoresOptions, readPostgresStoresOptions } from './options.js';
import { PostgresOutbox } from './outbox.js';
import { PostgresSagaLog } from './saga-log.js';

export type {
  PGliteLike,
  PgPoolClientLike,
  PgPoolLike,
  PostgresDatabase,
  PostgresTransaction,
} from './database.js';
export type { PostgresFenceStore } from './fence.js';
export type { PostgresIdempotencyStore } from './idempotency.js';
export { INBOX_RETENTION_MS, type InboxMessage, type InboxResult, type PostgresInbox } from './inbox.js';
export type { PostgresLockStore } from './lock.js';
export type { MigrateResult } from './migrate.js';
export { type RowKey, type VersionedRows, type VersionedRowsOptions, versionedRows } from './optimistic.js';
export type { PostgresStoresOptions } from './options.js';
export type { PostgresOutbox, RedriveFilter } from './outbox.js';
export type { PostgresSagaLog } from './saga-log.js';

/**
 * The PostgreSQL stores of one database, from {@link postgresStores}. Each store is created on first
 * access.
 *
 * @example
 * const stores = postgresStores(pool);
 * await stores.migrate();
 * const payments = idempotency({ store: stores.idempotency });
 * const locks = distributedLock({ store: stores.lock });
 * // at shutdown
 * await stores.close();
 */
export interface PostgresStores {
  /** The schema the tables live in. */
  readonly schema: string;
  /** The idempotency store: pass it as `idempotency({ store })`. */
  readonly idempotency: PostgresIdempotencyStore;
  /** The lock store (`<schema>.locks`): pass it as `distributedLock({ store })`. */
  readonly lock: PostgresLockStore;
  /**
   * The fence store (`<schema>.fences`): `write(resource, fence, apply)` checks a lock's fence and
   * commits it with `apply(tx)`'s writes, in one transaction.
   */
  readonly fence: PostgresFenceStore;
  /**
   * The saga log (`<schema>.saga_runs` and `<schema>.saga_steps`): pass it as `saga({ name, log })`,
   * and a run left by a crashed process is finished by `recover()` in any other.
   */
  readonly sagaLog: PostgresSagaLog;
  /**
   * The transactional inbox (`<schema>.inbox`): `process(client, { consumer, messageId }, handler)`
   * on your own transaction runs the handler once per message however often it is delivered, its
   * writes committing with the message's row.
   */
  readonly inbox: PostgresInbox;
  /**
   * The transactional outbox (`<schema>.outbox`): `enqueue(tx, events)` in your transaction, then
   * `outboxRelay({ outbox: stores.outbox, publish })` delivers them; `deadLetters()`, `redrive()`.
   */
  readonly outbox: PostgresOutbox;
  /**
   * Creates or upgrades the stores' tables in `schema` (created if missing): applies, in one
   * transaction, the migrations not applied yet, and records them in `<schema>.migrations`.
   * Idempotent, never destructive, and safe when several processes migrate at once (a
   * transaction-scoped advisory lock, which PgBouncer's transaction pooling keeps). Each statement
   * has a 30 s deadline. Rejects with `StoreUnavailableError` when the database fails.
   */
  migrate(): Promise<MigrateResult>;
  /**
   * Stops the stores' timers (the idempotency, lock, saga log and inbox reapers) and closes the
   * connection opened for notifications, if any. Never ends your pool or PGlite instance. The stores
   * still answer afterwards, without `watch` wake-ups.
   */
  close(): Promise<void>;
}

/**
 * PostgreSQL-backed stores for every pattern that has one, sharing `db`: a `pg` Pool, or a PGlite
 * instance (embedded PostgreSQL, for tests, the edge or a single process). Throws a `TypeError` for
 * anything else (a `pg` Client included: pass a Pool) or a bad option. Run `await stores.migrate()`
 * once at start-up (every process may: it is safe concurrently).
 *
 * On `pg`, each call checks out a client for one statement; past `timeoutMs` that client is
 * destroyed and the statement cancelled. On PGlite every multi-statement operation uses its
 * `transaction()`, and a deadline only ends the wait (see docs/stores.md).
 *
 * @example
 * import pg from 'pg';
 * import { idempotency } from 'bulwark';
 * import { postgresStores } from 'bulwark/postgres';
 *
 * const stores = postgresStores(new pg.Pool({ connectionString: process.env.DATABASE_URL }));
 * await stores.migrate();
 * const payments = idempotency({ store: stores.idempotency, leaseMs: 10_000, ttlMs: 86_400_000 });
 */
export function postgresStores(db: PostgresDatabase, options?: PostgresStoresOptions): PostgresStores {
  const o = readPostgresStoresOptions(options);
  const { database, deadline } = openDatabase(db, o.clock, o.timeoutMs);
  const notifications = o.listen ? () => database.notifications() : undefined;
  let idempotency: PostgresIdempotencyStore | undefined;
  let lock: PostgresLockStore | undefined;
  let fence: PostgresFenceStore | undefined;
  let sagaLog: PostgresSagaLog | undefined;
  let inbox: PostgresInbox | undefined;
  let outbox: PostgresOutbox | undefined;
  return {
    schema: o.schema,
    get idempotency() {
      idempotency ??= new PostgresIdempotencyStore(database, o.schema, o.clock, notifications);
      return idempotency;
    },
    get lock() {
      lock ??= new PostgresLockStore(database, o.schema, o.clock, o.timeoutMs, notifications);
      return lock;
    },
    get fence() {
      fence ??= new PostgresFenceStore(database, o.schema);
      return fence;
    },
    get sagaLog() {
      sagaLog ??= new PostgresSagaLog(database, o.schema, o.clock, o.timeoutMs);
      return sagaLog;
    },
    get inbox() {
      inbox ??= new PostgresInbox(database, o.schema, o.clock);
      return inbox;
    },
    get outbox() {
      outbox ??= new PostgresOutbox(database, o.schema, o.clock, o.timeoutMs, notifications);
      return outbox;
    },
    migrate: () => migrate(database, o.schema),
    async close() {
      idempotency?.stop();
      lock?.stop();
      sagaLog?.stop();
      inbox?.stop();
      outbox?.stop();
      await database.close();
      deadline.stop();
    },
  };
}
