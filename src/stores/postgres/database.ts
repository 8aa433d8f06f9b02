/**
 * One small query interface over the two databases the PostgreSQL stores run on: a `pg` Pool (a
 * server) and a PGlite instance (embedded, in process). Every store is written against
 * {@link Database} only, so each also runs on PGlite with no server. The adapters live in
 * `pg-database.ts` and `pglite-database.ts`; neither `pg` nor PGlite is imported at run time.
 */

/**
 * A transaction handle, from `stores.idempotency.transaction(work)`: run your own writes with
 * `tx.query(text, params)` and they commit together with a `complete(…, tx)` in the same `work`,
 * or not at all. A `pg` `PoolClient` inside your own `BEGIN` fits this type too.
 *
 * Each query has the store's deadline (`timeoutMs`); past it the query rejects with
 * `StoreUnavailableError` and the transaction is lost (on `pg` its connection is destroyed, so the
 * server rolls it back). Other errors of your statements reject as the driver raised them.
 *
 * @example
 * await stores.idempotency.transaction(async (tx) => {
 *   await tx.query('INSERT INTO payments (id, amount) VALUES ($1, $2)', [id, amount]);
 *   if (!(await stores.idempotency.complete(key, token, result, ttlMs, tx))) throw new Error('lease lost');
 * });
 */
export interface PostgresTransaction {
  /** Runs one statement in the transaction; `params` are bound as `$1`, `$2`, … */
  query<R = Record<string, unknown>>(text: string, params?: unknown[]): Promise<{ readonly rows: R[] }>;
}

/** The parts of a `pg` `PoolClient` the stores use (what {@link PgPoolLike.connect} resolves with). */
export interface PgPoolClientLike {
  query(text: string, values?: unknown[]): Promise<{ rows: unknown[] }>;
  release(error?: Error | boolean): void;
}

/**
 * The parts of a `pg` `Pool` the stores use (any `pg.Pool` fits). A `pg` Client does not: pass a Pool.
 *
 * @example
 * const stores = postgresStores(new pg.Pool({ connectionString: process.env.DATABASE_URL }));
 */
export interface PgPoolLike {
  connect(): Promise<PgPoolClientLike>;
  query(text: string, values?: unknown[]): Promise<{ rows: unknown[] }>;
  readonly totalCount: number;
}

/**
 * The parts of a PGlite instance (`@electric-sql/pglite`) the stores use (any `PGlite` fits).
 *
 * @example
 * const stores = postgresStores(new PGlite());
 */
export interface PGliteLike {
  query<T>(query: string, params?: unknown[]): Promise<{ rows: T[] }>;
  transaction<T>(
    callback: (tx: { query<R>(query: string, params?: unknown[]): Promise<{ rows: R[] }> }) => Promise<T>,
  ): Promise<T>;
  listen(channel: string, callback: (payload: string) => void): Promise<() => Promise<void>>;
}

/**
 * What `postgresStores(db)` takes: a `pg` Pool or a PGlite instance, told apart by their methods;
 * anything else is refused with a `TypeError`.
 *
 * @example
 * const db: PostgresDatabase = process.env.DATABASE_URL ? new pg.Pool() : new PGlite();
 */
export type PostgresDatabase = PgPoolLike | PGliteLike;

/** Notifications on one connection: `subscribe` never throws and never calls back synchronously. */
export interface Notifications {
  /**
   * Calls `onNotify(payload)` for each notification on `channel`, until the returned function is
   * called; and `onListening()` each time the connection (re)started listening, as notifications
   * sent while it did not were lost (look now).
   */
  subscribe(channel: string, onNotify: (payload: string) => void, onListening?: () => void): () => void;
  /** Stops listening and closes what was opened for it. */
  close(): Promise<void>;
}

/**
 * The database of one store set. Every call has the store set's deadline; a failure or a missed
 * deadline rejects with `StoreUnavailableError` (except inside {@link Database.transaction}, where
 * the statements of `work` reject as the driver raised them, and only a missed deadline is a
 * `StoreUnavailableError`).
 */
export interface Database {
  /** `PostgreSQL` or `PGlite`, for messages. */
  readonly what: string;
  /**
   * Runs one statement and resolves with its rows. `timeoutMs` overrides the deadline. With `join`,
   * on PGlite, a statement issued while one of our transactions holds the session runs inside it
   * instead of waiting for it (for a lease renewal during a transactional handler; ignored on pg).
   */
  query<R>(text: string, params?: unknown[], timeoutMs?: number, join?: boolean): Promise<R[]>;
  /**
   * Runs `work` in one transaction: commits when it resolves, rolls back when it rejects (and
   * rejects with its error). `timeoutMs` overrides the deadline of each statement.
   */
  transaction<T>(work: (tx: PostgresTransaction) => Promise<T>, timeoutMs?: number): Promise<T>;
  /**
   * Runs one statement on `tx` (from {@link transaction}, or a client of the caller's own), with
   * the deadline; any failure rejects with `StoreUnavailableError`.
   */
  queryIn<R>(tx: PostgresTransaction, text: string, params?: unknown[]): Promise<R[]>;
  /** Notifications on a dedicated connection (pg) or the instance's own `listen` (PGlite). */
  notifications(): Notifications;
  /** Closes what the store set opened itself (never the caller's pool or instance). */
  close(): Promise<void>;
}

const isFunction = (value: unknown): boolean => typeof value === 'function';

/** Whether `db` looks like a PGlite instance (it has `transaction` and `listen`, no `connect`). */
export function isPGlite(db: unknown): db is PGliteLike {
  const d = db as Partial<Record<string, unknown>> | null;
  return (
    d !== null &&
    typeof d === 'object' &&
    isFunction(d.query) &&
    isFunction(d.transaction) &&
    isFunction(d.listen) &&
    !isFunction(d.connect)
  );
}

/** Whether `db` looks like a `pg` Pool (it has `connect`, `query` and a `totalCount`; a Client has none). */
export function isPgPool(db: unknown): db is PgPoolLike {
  const d = db as Partial<Record<string, unknown>> | null;
  return (
    d !== null &&
    typeof d === 'object' &&
    isFunction(d.connect) &&
    isFunction(d.query) &&
    typeof d.totalCount === 'number'
  );
}
