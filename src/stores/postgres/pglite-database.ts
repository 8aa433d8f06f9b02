/**
 * The {@link Database} of a PGlite instance: one embedded session that runs statements one at a
 * time. Every multi-statement operation goes through PGlite's own `transaction()` (which holds the
 * session for its whole run), so BEGINs never interleave. A statement cannot be cancelled there:
 * the deadline bounds only the wait for the session and its answer; a late answer is dropped. A
 * transaction whose session arrives after the deadline runs nothing and rolls back.
 */
import { ChannelSubscribers } from './channel-subscribers.js';
import type { Database, Notifications, PGliteLike, PostgresTransaction } from './database.js';
import type { QueryDeadline } from './deadline.js';

type PGliteTx = Parameters<Parameters<PGliteLike['transaction']>[0]>[0];

/** Settles with `pending` unless the deadline passes first; `wrap` turns driver errors into store failures. */
function bounded<R>(
  deadline: QueryDeadline,
  start: () => Promise<{ rows: R[] }>,
  wrap: boolean,
  timeoutMs?: number,
): Promise<R[]> {
  return new Promise<R[]>((resolve, reject) => {
    const ticket = deadline.begin(reject, timeoutMs);
    let pending: Promise<{ rows: R[] }>;
    try {
      pending = start();
    } catch (error) {
      if (ticket.release()) reject(wrap ? deadline.failure(error) : error);
      return;
    }
    pending.then(
      (result) => {
        if (ticket.release()) resolve(result.rows);
      },
      (error: unknown) => {
        if (ticket.release()) reject(wrap ? deadline.failure(error) : error);
      },
    );
  });
}

/** A transaction handle over PGlite's; statements are bounded by the deadline. */
class PGliteTransaction implements PostgresTransaction {
  constructor(
    readonly tx: PGliteTx,
    private readonly deadline: QueryDeadline,
    private readonly timeoutMs: number | undefined,
  ) {}

  query<R = Record<string, unknown>>(text: string, params?: unknown[]): Promise<{ readonly rows: R[] }> {
    return this.run<R>(text, params, false).then((rows) => ({ rows }));
  }

  run<R>(text: string, params: unknown[] | undefined, wrap: boolean): Promise<R[]> {
    return bounded<R>(this.deadline, () => this.tx.query<R>(text, params), wrap, this.timeoutMs);
  }
}

/** The {@link Database} of a PGlite instance (see the module doc). */
export class PGliteDatabase implements Database {
  readonly what = 'PGlite';
  private readonly transactions = new WeakSet<PostgresTransaction>();
  private readonly unlisten: Promise<() => Promise<void>>[] = [];
  private listener: Notifications | undefined;
  /** The transaction holding the session now, if it is one of ours. */
  private open: PGliteTransaction | undefined;

  constructor(
    private readonly db: PGliteLike,
    private readonly deadline: QueryDeadline,
  ) {}

  query<R>(text: string, params?: unknown[], timeoutMs?: number, join = false): Promise<R[]> {
    const open = join ? this.open : undefined;
    if (open !== undefined) return open.run<R>(text, params, true);
    return bounded<R>(this.deadline, () => this.db.query<R>(text, params), true, timeoutMs);
  }

  transaction<T>(work: (tx: PostgresTransaction) => Promise<T>, timeoutMs?: number): Promise<T> {
    const deadline = this.deadline;
    return new Promise<T>((resolve, reject) => {
      // Bounds the wait for the session only: once `work` runs, its statements have their own.
      const ticket = deadline.begin(reject, timeoutMs);
      const run = this.db.transaction(async (raw) => {
        if (!ticket.release()) throw deadline.timeoutError(timeoutMs);
        const tx = new PGliteTransaction(raw, deadline, timeoutMs);
        this.transactions.add(tx);
        this.open = tx;
        try {
          return await work(tx);
        } finally {
          this.open = undefined;
        }
      });
      run.then(resolve, (error: unknown) => {
        // Once `work` started, its own error is the answer (a failed COMMIT is a store failure).
        if (ticket.release()) reject(deadline.failure(error));
        else reject(error);
      });
    });
  }

  queryIn<R>(tx: PostgresTransaction, text: string, params?: unknown[]): Promise<R[]> {
    if (this.transactions.has(tx)) return (tx as PGliteTransaction).run<R>(text, params, true);
    return bounded<R>(this.deadline, () => tx.query<R>(text, params), true);
  }

  notifications(): Notifications {
    this.listener ??= this.makeNotifications();
    return this.listener;
  }

  async close(): Promise<void> {
    const unlistens = this.unlisten.splice(0);
    await Promise.all(unlistens.map((u) => u.then((stop) => stop()).catch(() => {})));
  }

  private makeNotifications(): Notifications {
    const channels = new Map<string, ChannelSubscribers>();
    let closed = false;
    return {
      subscribe: (channel, onNotify, onListening) => {
        if (closed) return () => {};
        let subscribers = channels.get(channel);
        if (subscribers === undefined) {
          const own = new ChannelSubscribers();
          subscribers = own;
          channels.set(channel, own);
          const stop = this.db.listen(channel, (payload) => own.notify(payload));
          stop.then(
            () => own.listening(),
            () => channels.delete(channel),
          );
          this.unlisten.push(stop);
        }
        return subscribers.add(onNotify, onListening);
      },
      close: async () => {
        closed = true;
        await this.close();
      },
    };
  }
}
