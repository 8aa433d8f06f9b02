/**
 * The PostgreSQL inbox: `postgresStores(db).inbox`. A consumer processes each message once, in its
 * own transaction: the message's row in `<schema>.inbox` is inserted on that transaction before the
 * handler runs, so the row and the handler's writes commit together or not at all. See
 * `inbox-sql.ts` for the statements.
 */
import type { Clock } from '../../core/clock.js';
import { StoreUnavailableError } from '../../core/errors.js';
import { fromJson, toJson } from '../../core/json.js';
import { isFunction, optionKeys, optionsObject, show, textValue } from '../../core/validate.js';
import { IdempotencyConflictError } from '../../idempotency/errors.js';
import type { Database, PostgresTransaction } from './database.js';
import { quoteIdent } from './identifiers.js';
import { type InboxSql, inboxSql } from './inbox-sql.js';
import { REAP_INTERVAL_MS, Reaper, reapInBatches } from './reaper.js';

export { INBOX_RETENTION_MS } from './inbox-sql.js';

/**
 * How often the insert is tried when the row it collided with is gone by the time it is read (the
 * reaper deleted it in between, under READ COMMITTED): the second try inserts, or collides with a
 * row just committed, which the read then finds.
 */
const INSERT_ATTEMPTS = 2;

/**
 * A message as {@link PostgresInbox.process} takes it.
 *
 * @example
 * const message: InboxMessage = { consumer: 'billing', messageId: event.id, fingerprint: sha256(body) };
 */
export interface InboxMessage {
  /** Who processes it (a service, a handler): each consumer processes a message once. */
  readonly consumer: string;
  /**
   * The message's id, the same on every redelivery: an outbox event's `id`, a JetStream
   * `Nats-Msg-Id`, your broker's message id.
   */
  readonly messageId: string;
  /**
   * What the message says (a hash of its body, say): a message id seen before with another
   * fingerprint is refused with `IdempotencyConflictError`. Compared only when both the recorded
   * message and this one have one.
   * @default none: not compared
   */
  readonly fingerprint?: string | undefined;
}

/**
 * What {@link PostgresInbox.process} resolves with.
 *
 * @example
 * const { duplicate, result } = await stores.inbox.process(client, message, handler);
 * if (duplicate) log.info('redelivered', { messageId: message.messageId, result });
 */
export interface InboxResult<T> {
  /** `true` when the message had been processed before: the handler did not run this time. */
  readonly duplicate: boolean;
  /** The handler's result: from this run, or for a duplicate the recorded one (parsed from JSON). */
  readonly result: T;
}

interface RecordedRow {
  readonly fingerprint: string | null;
  readonly result: string | null;
}

const messageKeys = optionKeys<InboxMessage>({ consumer: true, messageId: true, fingerprint: true });

/** The caller's transaction: anything with a `query` method (a `pg` PoolClient, a PGlite `tx`). */
function transaction(client: unknown): void {
  if (typeof (client as { query?: unknown } | null | undefined)?.query !== 'function') {
    throw new TypeError(
      `expected "client" to be your transaction (a pg PoolClient after BEGIN, or PGlite's tx), got ${show(client)}`,
    );
  }
}

/**
 * The transactional inbox in PostgreSQL (or PGlite), from `postgresStores(db).inbox`: a consumer
 * processes each message once, however often the broker delivers it.
 *
 * `process(client, message, handler)` runs on `client`, the consumer's own transaction, and never
 * commits or rolls back: first `INSERT … ON CONFLICT DO NOTHING` the message's row, then, if
 * inserted, `handler(client)` and its result recorded in the row. Commit, and the handler's writes
 * and the row are there together; roll back (or crash before COMMIT), and neither is, so the
 * redelivered message is processed again. A message whose row is committed is a duplicate: its
 * recorded result is returned and the handler does not run.
 *
 * Two transactions processing the same message at once never both run the handler: PostgreSQL
 * makes the second insert wait for the first transaction, then finds its row (it committed: a
 * duplicate) or inserts (it rolled back). Under REPEATABLE READ or SERIALIZABLE the second instead
 * fails with a serialization failure (SQLSTATE 40001, kind `transient`): roll back and retry.
 *
 * Statements run on `client` with no deadline of the store's (it is your transaction: bound it
 * with `statement_timeout` if you need one), and their errors reject as the driver raised them.
 * Rows are kept 7 days (`INBOX_RETENTION_MS`), then deleted in batches every minute, from the first
 * `process` until `stores.close()`; and by {@link reap}.
 *
 * @example
 * const stores = postgresStores(pool);
 * await stores.migrate();
 * const client = await pool.connect();
 * try {
 *   await client.query('BEGIN');
 *   await stores.inbox.process(client, { consumer: 'billing', messageId: message.id }, (tx) =>
 *     tx.query('UPDATE accounts SET balance = balance - $2 WHERE id = $1', [message.account, message.amount]),
 *   );
 *   await client.query('COMMIT');
 * } catch (error) {
 *   await client.query('ROLLBACK');
 *   throw error;
 * } finally {
 *   client.release();
 * }
 * // acknowledge the message to the broker only now
 */
export class PostgresInbox {
  private readonly sql: InboxSql;
  private readonly reaper: Reaper;

  /** @internal Built by `postgresStores`. */
  constructor(
    private readonly db: Database,
    schema: string,
    clock: Clock,
  ) {
    this.sql = inboxSql(quoteIdent(schema));
    this.reaper = new Reaper(clock, REAP_INTERVAL_MS, () => this.reap());
  }

  /**
   * Processes `message` once for its consumer, on `client` (your transaction, already begun):
   * resolves with `{ duplicate: false, result }` after running `handler(client)`, or with
   * `{ duplicate: true, result }` (the result recorded the first time) without running it. Commit
   * `client` afterwards, then acknowledge the message to the broker.
   *
   * The handler's result is recorded as JSON text (`undefined` as NULL, returned as `undefined`).
   *
   * Rejects with `handler`'s error as it is (roll back: the message's row goes with your writes,
   * and the next delivery runs the handler again); with a `TypeError` when the handler's result is
   * not JSON-serialisable (the handler ran: roll back); with `IdempotencyConflictError` (kind
   * `conflict`, `key` the message id) when the message was processed before with another
   * fingerprint (the handler does not run); with the driver's error when a statement fails (roll
   * back); with `StoreUnavailableError` when the row the insert collided with was deleted before it
   * could be read, twice (only a deletion of your own could do that: the reaper deletes a row once,
   * and a second insert would have re-created it). A bad `client`, message (unknown keys refused), consumer, message id, fingerprint (each
   * non-empty, well-formed text without U+0000) or handler is a `TypeError` before anything is sent.
   *
   * @example
   * // On PGlite: the transaction commits when the callback resolves.
   * await db.transaction((tx) =>
   *   stores.inbox.process(tx, { consumer: 'mailer', messageId: event.id }, async (own) => {
   *     await own.query('INSERT INTO mails (user_id, kind) VALUES ($1, $2)', [event.userId, 'welcome']);
   *     return { sent: true };
   *   }),
   * );
   */
  async process<C extends PostgresTransaction, T>(
    client: C,
    message: InboxMessage,
    handler: (client: C) => T | PromiseLike<T>,
  ): Promise<InboxResult<T>> {
    transaction(client);
    const given = optionsObject('inbox message', message, messageKeys);
    const consumer = textValue('consumer', given.consumer);
    const messageId = textValue('messageId', given.messageId);
    const fingerprint =
      given.fingerprint === undefined ? undefined : textValue('fingerprint', given.fingerprint);
    isFunction('handler', handler);
    this.reaper.start();
    const key = [consumer, messageId];
    for (let attempt = 0; attempt < INSERT_ATTEMPTS; attempt++) {
      const inserted = await client.query(this.sql.insert, [...key, fingerprint ?? null]);
      if (inserted.rows.length === 1) {
        const result = await handler(client);
        await client.query(this.sql.record, [
          ...key,
          toJson('the result of the inbox handler', result) ?? null,
        ]);
        return { duplicate: false, result };
      }
      const [row] = (await client.query<RecordedRow>(this.sql.recorded, key)).rows;
      if (row === undefined) continue; // reaped since the insert collided with it: insert again
      if (fingerprint !== undefined && row.fingerprint !== null && row.fingerprint !== fingerprint) {
        throw new IdempotencyConflictError(messageId);
      }
      return { duplicate: true, result: fromJson(row.result ?? undefined) as T };
    }
    throw new StoreUnavailableError(
      `${this.db.what}: the inbox row of a message kept vanishing (${INSERT_ATTEMPTS} attempts)`,
    );
  }

  /**
   * Deletes the rows of messages processed longer ago than 7 days (`INBOX_RETENTION_MS`), at most
   * 1,000 per statement and 100 statements per call; resolves with how many it deleted (rejects
   * with `StoreUnavailableError` when the database fails). A message redelivered after its row is
   * gone is processed again. Runs every minute by itself; call it yourself to clean up at a time of
   * your choosing.
   */
  reap(): Promise<number> {
    return reapInBatches(this.db, this.sql.reap);
  }

  /** @internal Stops the reaper (from `stores.close()`). */
  stop(): void {
    this.reaper.stop();
  }
}
