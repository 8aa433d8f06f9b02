/**
 * The PostgreSQL outbox: `postgresStores(db).outbox`. `enqueue` writes events in the caller's
 * transaction; the relay-facing calls (`claim`, `delivered`, `failed`, `release`) are one statement
 * each under the store set's deadline. See `outbox/store.ts` for the contract and `outbox-sql.ts`
 * for the statements.
 */
import type { Clock } from '../../core/clock.js';
import { show, textValue } from '../../core/validate.js';
import { leaseMs } from '../../lock/memory-store.js';
import { readEvents } from '../../outbox/event.js';
import type {
  FailedDelivery,
  OutboxDeadLetter,
  OutboxEvent,
  OutboxMessage,
  OutboxStore,
} from '../../outbox/store.js';
import type { Database, Notifications, PostgresTransaction } from './database.js';
import { channelName, quoteIdent } from './identifiers.js';
import { type OutboxSql, outboxSql } from './outbox-sql.js';
import { REAP_INTERVAL_MS, Reaper, reapInBatches } from './reaper.js';

interface MessageRow {
  readonly id: string;
  readonly topic: string;
  readonly key: string | null;
  readonly payload: string;
  readonly headers: string;
  readonly attempts: number;
  readonly created_at: number;
  readonly seq: string;
}

/** Which dead letters `redrive` puts back: all, those of a topic, or those ids. */
export interface RedriveFilter {
  readonly ids?: readonly string[] | undefined;
  readonly topic?: string | undefined;
}

function toMessage(row: MessageRow): OutboxMessage {
  return {
    id: row.id,
    topic: row.topic,
    key: row.key ?? undefined,
    payload: JSON.parse(row.payload),
    headers: JSON.parse(row.headers),
    attempts: row.attempts,
    createdAt: row.created_at,
  };
}

/** Rows by their `seq`, oldest first (the claim picks in due order, and RETURNING keeps none). */
// Stryker disable next-line EqualityOperator: (<=) two rows never share a seq (the primary key)
const bySeq = (a: MessageRow, b: MessageRow): number => (BigInt(a.seq) < BigInt(b.seq) ? -1 : 1);

const uuid = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/** Event ids: an array of UUID strings. */
function eventIds(value: unknown): readonly string[] {
  if (!Array.isArray(value) || value.some((id) => typeof id !== 'string' || !uuid.test(id)))
    throw new TypeError(`expected "ids" to be an array of event ids (UUIDs), got ${show(value)}`);
  return value;
}

function limitValue(value: unknown): number {
  if (!Number.isSafeInteger(value) || (value as number) < 1)
    throw new TypeError(`expected "limit" to be a positive integer, got ${show(value)}`);
  return value as number;
}

/**
 * The transactional outbox in PostgreSQL (or PGlite), from `postgresStores(db).outbox`; pass it as
 * `outboxRelay({ outbox, publish })`.
 *
 * - `enqueue(tx, events)` runs in your transaction (a `pg` PoolClient inside your `BEGIN`, or a
 *   PGlite transaction): the events exist exactly when your state change commits. It locks each
 *   event's key for the rest of the transaction (a transaction-scoped advisory lock), so per key,
 *   events are delivered in commit order — at a cost: transactions enqueuing for the same key
 *   queue behind each other until each commits. It notifies waiting relays in the same
 *   transaction (delivered on commit).
 * - The relay's calls are one statement each; claims use `FOR UPDATE SKIP LOCKED` and a lease on
 *   the database's clock, so several relay processes share the outbox. Each fails with
 *   `StoreUnavailableError` when the database fails or misses the deadline (`timeoutMs`).
 * - `watch` wakes relays on each commit that enqueued (LISTEN on the store set's connection), and
 *   once after the connection (re)opened, as notifications sent meanwhile are lost; relays poll too.
 * - Delivered events are deleted an hour after delivery, in batches, every minute (from the first
 *   claim until `stores.close()`), and by {@link reap}. Dead letters are kept until redriven.
 *
 * @example
 * const client = await pool.connect();
 * try {
 *   await client.query('BEGIN');
 *   await client.query('UPDATE orders SET status = $2 WHERE id = $1', [id, 'paid']);
 *   await stores.outbox.enqueue(client, [{ topic: 'orders.paid', key: id, payload: { id } }]);
 *   await client.query('COMMIT');
 * } catch (error) {
 *   await client.query('ROLLBACK');
 *   throw error;
 * } finally {
 *   client.release();
 * }
 */
export class PostgresOutbox implements OutboxStore {
  readonly timeoutMs: number;
  readonly watch?: (wake: () => void) => () => void;
  private readonly sql: OutboxSql;
  private readonly channel: string;
  private readonly lockNamespace: string;
  private readonly reaper: Reaper;

  /** @internal Built by `postgresStores`. */
  constructor(
    private readonly db: Database,
    schema: string,
    clock: Clock,
    timeoutMs: number,
    notifications: (() => Notifications) | undefined,
  ) {
    this.timeoutMs = timeoutMs;
    this.sql = outboxSql(quoteIdent(schema));
    // Stryker disable next-line StringLiteral: any topic no other store uses names a working channel; the name only keeps the stores' channels apart
    this.channel = channelName(schema, 'outbox');
    // Stryker disable next-line StringLiteral: only keeps this schema's key locks apart from other advisory locks; a shared space would at worst serialise unrelated transactions
    this.lockNamespace = `bulwark.outbox:${schema}:`;
    this.reaper = new Reaper(clock, REAP_INTERVAL_MS, () => this.reap());
    // Stryker disable next-line ConditionalExpression: (true) without notifications the call below throws and the catch answers as if there were no watch; the relay polls either way
    if (notifications !== undefined) {
      this.watch = (wake) => {
        // Stryker disable BlockStatement: the relay treats no unwatch function like an empty one
        try {
          return notifications().subscribe(this.channel, wake, wake);
        } catch {
          return () => {};
        }
        // Stryker restore BlockStatement
      };
    }
  }

  /**
   * Writes `events` in the transaction `tx` and resolves their ids (UUIDs, in order). Rejects with a
   * `TypeError` before sending anything for a bad event (see `OutboxEvent`: a JSON-serialisable
   * payload, non-empty topic and key without U+0000, string headers), and with the driver's error
   * when a statement fails (your transaction is then to be rolled back).
   */
  async enqueue(tx: PostgresTransaction, events: readonly OutboxEvent[]): Promise<string[]> {
    if (tx === null || typeof tx !== 'object' || typeof tx.query !== 'function')
      throw new TypeError(`expected "tx" to be a transaction client (with query), got ${show(tx)}`);
    const read = readEvents(events);
    if (read.length === 0) return [];
    // Stryker disable next-line ArrayDeclaration,ConditionalExpression: an unkeyed event's lock (on a made-up key, or on NULL, which takes none) only serialises transactions nobody orders
    const keys = [...new Set(read.flatMap((e) => (e.key === undefined ? [] : [e.key])))];
    // Stryker disable next-line ConditionalExpression,EqualityOperator: locking an empty set of keys takes no lock (one statement more)
    if (keys.length > 0) await tx.query(this.sql.lockKeys, [this.lockNamespace, JSON.stringify(keys)]);
    const rows = read.map((e, n) => ({
      id: e.id,
      topic: e.topic,
      key: e.key ?? null,
      payload: JSON.parse(e.payload),
      headers: JSON.parse(e.headers),
      n,
    }));
    await tx.query(this.sql.insert, [JSON.stringify(rows), this.channel]);
    return read.map((e) => e.id);
  }

  async claim(owner: string, limit: number, ms: number): Promise<readonly OutboxMessage[]> {
    textValue('owner', owner);
    limitValue(limit);
    leaseMs('leaseMs', ms);
    this.reaper.start();
    const rows = await this.db.query<MessageRow>(this.sql.claim, [owner, limit, ms]);
    return rows.sort(bySeq).map(toMessage);
  }

  async delivered(owner: string, ids: readonly string[]): Promise<number> {
    textValue('owner', owner);
    const rows = await this.db.query<{ n: number }>(this.sql.delivered, [
      owner,
      JSON.stringify(eventIds(ids)),
    ]);
    // Stryker disable next-line OptionalChaining: the statement ends in `SELECT count(*)`, so it always returns one row
    return rows[0]?.n ?? 0;
  }

  async failed(owner: string, failures: readonly FailedDelivery[]): Promise<number> {
    textValue('owner', owner);
    eventIds(failures.map((f) => f.id));
    const list = failures.map((f) => ({
      id: f.id,
      error: f.error.replaceAll('\u0000', '\uFFFD'),
      retry_ms: f.retryInMs,
      dead: f.dead,
    }));
    const rows = await this.db.query<{ n: number }>(this.sql.failed, [owner, JSON.stringify(list)]);
    // Stryker disable next-line OptionalChaining: the statement ends in `SELECT count(*)`, so it always returns one row
    return rows[0]?.n ?? 0;
  }

  async release(owner: string): Promise<void> {
    textValue('owner', owner);
    await this.db.query(this.sql.release, [owner]);
  }

  /** The dead letters (of `topic`, if given), oldest first, at most `limit` (default 100). */
  async deadLetters(options: { limit?: number; topic?: string } = {}): Promise<OutboxDeadLetter[]> {
    const limit = limitValue(options.limit ?? 100);
    const topic = options.topic === undefined ? null : textValue('topic', options.topic);
    const rows = await this.db.query<MessageRow & { last_error: string }>(this.sql.deadLetters, [
      limit,
      topic,
    ]);
    return rows.map((row) => ({ ...toMessage(row), lastError: row.last_error }));
  }

  /**
   * Puts dead letters back (all, those of `filter.topic`, or `filter.ids`) as pending with no
   * attempts, and wakes the relays; resolves how many. A redriven event is again its key's head:
   * later events of its key wait for it.
   */
  async redrive(filter: RedriveFilter = {}): Promise<number> {
    const ids = filter.ids === undefined ? null : JSON.stringify(eventIds(filter.ids));
    const topic = filter.topic === undefined ? null : textValue('topic', filter.topic);
    const rows = await this.db.query<{ n: number }>(this.sql.redrive, [ids, topic, this.channel]);
    // Stryker disable next-line OptionalChaining: the statement ends in `SELECT count(*)`, so it always returns one row
    return rows[0]?.n ?? 0;
  }

  /**
   * Deletes events delivered more than an hour ago, at most 1,000 per statement and 100 statements
   * per call; resolves how many. Runs every minute by itself.
   */
  reap(): Promise<number> {
    return reapInBatches(this.db, this.sql.reap);
  }

  /** @internal Stops the reaper (from `stores.close()`). */
  stop(): void {
    this.reaper.stop();
  }
}
