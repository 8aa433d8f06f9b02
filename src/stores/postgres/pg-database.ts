/**
 * The {@link Database} of a `pg` Pool. Every statement runs on a client checked out for it, under
 * one deadline that covers the wait for `pool.connect()` too. At the deadline the caller gets
 * `StoreUnavailableError` at once, the client is destroyed (released with an error, so the pool
 * never hands it out again: its connection may still carry the late answer), and the server is
 * asked, on another connection, to cancel what that backend was running (`pg_cancel_backend`,
 * bounded by the same timeout, errors swallowed). A client that arrives after the deadline is
 * returned to the pool unused.
 */
import type {
  Database,
  Notifications,
  PgPoolClientLike,
  PgPoolLike,
  PostgresTransaction,
} from './database.js';
import type { QueryDeadline, QueryTicket } from './deadline.js';
import { PgNotifications } from './pg-notifications.js';

/** What pg-pool has besides the typed surface: the options it builds clients with, and their class. */
interface PoolInternals {
  readonly options?: Record<string, unknown>;
  readonly Client?: new (options: Record<string, unknown>) => PgStandaloneClient;
}

/** A standalone `pg` Client (for the cancel and LISTEN connections). */
export interface PgStandaloneClient {
  connect(): Promise<unknown>;
  query(text: string, values?: unknown[]): Promise<{ rows: unknown[] }>;
  end(): Promise<unknown>;
  on(event: string, listener: (...args: never[]) => void): unknown;
}

/** How much of a statement's text identifies it in `pg_stat_activity` (kept whole up to 1 kB by default). */
const CANCEL_MATCH_CHARS = 120;

/** The backend process id `pg` keeps on a connected client (not in its types). */
function processIdOf(client: PgPoolClientLike): number | undefined {
  const pid = (client as { processID?: unknown }).processID;
  return typeof pid === 'number' ? pid : undefined;
}

/** Runs `run` on `client` under `ticket`; settles `resolve`/`reject` unless the deadline passed. */
function onClient<R>(
  client: PgPoolClientLike,
  text: string,
  params: unknown[] | undefined,
  ticket: QueryTicket,
  settle: (error: unknown, rows: R[] | undefined) => void,
): void {
  let pending: Promise<{ rows: unknown[] }>;
  try {
    pending = client.query(text, params);
  } catch (error) {
    if (ticket.release()) settle(error, undefined);
    return;
  }
  pending.then(
    (result) => {
      if (ticket.release()) settle(undefined, result.rows as R[]);
    },
    (error: unknown) => {
      if (ticket.release()) settle(error, undefined);
    },
  );
}

/** A transaction on one checked-out client; lost (`abandoned`) once a statement misses its deadline. */
class PgTransaction implements PostgresTransaction {
  abandoned = false;

  constructor(
    readonly client: PgPoolClientLike,
    private readonly db: PgDatabase,
    private readonly timeoutMs: number | undefined,
  ) {}

  query<R = Record<string, unknown>>(text: string, params?: unknown[]): Promise<{ readonly rows: R[] }> {
    return this.run<R>(text, params, false).then((rows) => ({ rows }));
  }

  /** One statement; with `wrap`, a driver error becomes `StoreUnavailableError` too. */
  run<R>(text: string, params: unknown[] | undefined, wrap: boolean): Promise<R[]> {
    const deadline = this.db.deadline;
    if (this.abandoned) {
      return Promise.reject(deadline.failure(new Error('the transaction was lost at a deadline')));
    }
    return new Promise<R[]>((resolve, reject) => {
      const ticket = deadline.begin((error) => {
        this.abandoned = true;
        reject(error);
        this.db.abandon(this.client, text);
      }, this.timeoutMs);
      onClient<R>(this.client, text, params, ticket, (error, rows) => {
        if (error === undefined) resolve(rows!);
        else reject(wrap ? deadline.failure(error) : error);
      });
    });
  }
}

/** The {@link Database} of a `pg` Pool (see the module doc). */
export class PgDatabase implements Database {
  readonly what = 'PostgreSQL';
  private readonly transactions = new WeakSet<PostgresTransaction>();
  private listener: PgNotifications | undefined;

  constructor(
    private readonly pool: PgPoolLike,
    readonly deadline: QueryDeadline,
  ) {}

  query<R>(text: string, params?: unknown[], timeoutMs?: number, _join?: boolean): Promise<R[]> {
    return new Promise<R[]>((resolve, reject) => {
      let client: PgPoolClientLike | undefined;
      const ticket = this.deadline.begin((error) => {
        reject(error);
        if (client !== undefined) this.abandon(client, text);
      }, timeoutMs);
      this.pool.connect().then(
        (checkedOut) => {
          if (ticket.expired) {
            checkedOut.release();
            return;
          }
          client = checkedOut;
          onClient<R>(checkedOut, text, params, ticket, (error, rows) => {
            // As pg's own pool.query does: a client that failed a statement is not reused.
            checkedOut.release(error as Error | undefined);
            if (error === undefined) resolve(rows!);
            else reject(this.deadline.failure(error));
          });
        },
        (error: unknown) => {
          if (ticket.release()) reject(this.deadline.failure(error));
        },
      );
    });
  }

  async transaction<T>(work: (tx: PostgresTransaction) => Promise<T>, timeoutMs?: number): Promise<T> {
    const client = await this.checkout(timeoutMs);
    const tx = new PgTransaction(client, this, timeoutMs);
    this.transactions.add(tx);
    let broken: unknown;
    try {
      await tx.run('BEGIN', undefined, true);
      const value = await work(tx);
      await tx.run('COMMIT', undefined, true);
      return value;
    } catch (error) {
      // Stryker disable next-line ConditionalExpression: (true) run() on an abandoned transaction rejects at once without touching the client, and `broken` is then never used
      if (!tx.abandoned) await tx.run('ROLLBACK', undefined, true).catch((e: unknown) => (broken = e));
      throw error;
    } finally {
      if (!tx.abandoned) client.release(broken as Error | undefined);
    }
  }

  queryIn<R>(tx: PostgresTransaction, text: string, params?: unknown[]): Promise<R[]> {
    if (this.transactions.has(tx)) return (tx as PgTransaction).run<R>(text, params, true);
    // A client of the caller's own: we cannot destroy it, so the deadline bounds only the wait.
    return new Promise<R[]>((resolve, reject) => {
      const ticket = this.deadline.begin(reject);
      let pending: Promise<{ readonly rows: R[] }>;
      try {
        pending = tx.query<R>(text, params);
      } catch (error) {
        if (ticket.release()) reject(this.deadline.failure(error));
        return;
      }
      pending.then(
        (result) => {
          if (ticket.release()) resolve(result.rows);
        },
        (error: unknown) => {
          if (ticket.release()) reject(this.deadline.failure(error));
        },
      );
    });
  }

  notifications(): Notifications {
    this.listener ??= new PgNotifications(this.pool, this.deadline.clock);
    return this.listener;
  }

  /** A client from the pool, within the deadline (one arriving later goes back unused). */
  private checkout(timeoutMs: number | undefined): Promise<PgPoolClientLike> {
    return new Promise((resolve, reject) => {
      const ticket = this.deadline.begin(reject, timeoutMs);
      this.pool.connect().then(
        (client) => {
          if (ticket.release()) resolve(client);
          else client.release();
        },
        (error: unknown) => {
          if (ticket.release()) reject(this.deadline.failure(error));
        },
      );
    });
  }

  /**
   * Destroys `client` (released with an error: pg-pool ends it, and `pg` destroys the socket of a
   * client with a query in flight) and asks the server to cancel its backend's statement.
   */
  abandon(client: PgPoolClientLike, text: string): void {
    const pid = processIdOf(client);
    try {
      client.release(new Error('bulwark: the statement missed its deadline'));
    } catch {
      // Already released: nothing to return to the pool.
    }
    if (pid !== undefined) this.cancel(pid, text);
  }

  /**
   * Best effort: `pg_cancel_backend(pid)` on a new connection, bounded by the timeout, errors
   * swallowed. Only while that backend still runs a statement starting like ours: behind a pooler
   * (PgBouncer) the process id a client sees is not the server's, and must cancel nothing else.
   */
  private cancel(pid: number, text: string): void {
    const { Client, options } = this.pool as unknown as PoolInternals;
    // Stryker disable next-line ConditionalExpression: (false) without a Client class `new Client` below throws a TypeError, which its catch turns into the same return
    if (typeof Client !== 'function') return;
    const boundMs = Math.max(1, Math.ceil(this.deadline.timeoutMs));
    let client: PgStandaloneClient;
    try {
      client = new Client({
        ...options,
        connectionTimeoutMillis: boundMs,
        query_timeout: boundMs,
        statement_timeout: boundMs,
      });
    } catch {
      return;
    }
    client.on('error', () => {});
    client
      .connect()
      .then(() =>
        client.query(
          "SELECT pg_cancel_backend(pid) FROM pg_stat_activity WHERE pid = $1 AND state = 'active' AND starts_with(query, $2)",
          [pid, text.slice(0, CANCEL_MATCH_CHARS)],
        ),
      )
      .catch(() => {})
      .finally(() => client.end().catch(() => {}));
  }

  /** Closes the LISTEN connection, if one was opened. The pool is the caller's: it stays open. */
  async close(): Promise<void> {
    await this.listener?.close();
  }
}
