/**
 * The PostgreSQL idempotency store: `postgresStores(db).idempotency`. One table
 * (`<schema>.idempotency_keys`), one statement per decision, time from `clock_timestamp()`. See
 * `idempotency/store.ts` for the contract it keeps and `idempotency-sql.ts` for the statements.
 */
import type { Clock } from '../../core/clock.js';
import { StoreUnavailableError } from '../../core/errors.js';
import { show, textValue } from '../../core/validate.js';
import type { ClaimResult, IdempotencyStore } from '../../idempotency/store.js';
import type { Database, Notifications, PostgresTransaction } from './database.js';
import { type IdempotencySql, idempotencySql } from './idempotency-sql.js';
import { channelName, quoteIdent } from './identifiers.js';
import { KeyWatchers } from './key-watchers.js';
import { REAP_INTERVAL_MS, Reaper, reapInBatches } from './reaper.js';

/** How often a claim that lost a race to a concurrent commit is run again before giving up. */
const CLAIM_ATTEMPTS = 5;

interface ClaimRow {
  readonly outcome: 'claimed' | 'completed' | 'in_progress' | 'mismatch';
  readonly result: Uint8Array | null;
  readonly remaining_ms: number | null;
}

const encoder = new TextEncoder();
const decoder = new TextDecoder('utf-8', { fatal: true });

/** A positive duration in whole milliseconds, for a lease or a retention. */
function duration(name: string, value: unknown): number {
  if (!Number.isInteger(value) || (value as number) < 1) {
    throw new TypeError(`expected "${name}" to be a positive integer, got ${show(value)}`);
  }
  return value as number;
}

/**
 * Idempotency records in PostgreSQL (or PGlite), from `postgresStores(db).idempotency`; pass it as
 * `idempotency({ store })`. Keeps the contract of `IdempotencyStore` (see `bulwark`'s
 * `idempotency/store.ts`): `claim` is one statement (insert, or take over an expired record, or
 * answer from the live one), `complete`/`release`/`renew` are one compare-and-set statement each on
 * the owner's token, status and unexpired lease. Results are stored as UTF-8 bytes (`bytea`), byte
 * for byte; keys and fingerprints as `text` (U+0000 is refused with a `TypeError`).
 *
 * Every call fails with `StoreUnavailableError` when the database fails or misses the store set's
 * deadline (`timeoutMs`). Expired records are deleted in batches every minute (from the first
 * claim until `stores.close()`), and by {@link reap}.
 *
 * @example
 * const stores = postgresStores(pool);
 * await stores.migrate();
 * const payments = idempotency({ store: stores.idempotency, leaseMs: 10_000, ttlMs: 86_400_000 });
 */
export class PostgresIdempotencyStore implements IdempotencyStore<PostgresTransaction> {
  /**
   * Calls `wake` soon after `key` is completed or released by any process (LISTEN/NOTIFY; the
   * notification is sent by the same statement as the change). Absent with `listen: false`. A hint
   * only: waiters poll as well.
   */
  readonly watch?: (key: string, wake: () => void) => () => void;
  private readonly sql: IdempotencySql;
  private readonly channel: string;
  private readonly reaper: Reaper;

  /** @internal Built by `postgresStores`. */
  constructor(
    private readonly db: Database,
    schema: string,
    clock: Clock,
    notifications: (() => Notifications) | undefined,
  ) {
    this.sql = idempotencySql(quoteIdent(schema));
    this.channel = channelName(schema, 'idempotency');
    this.reaper = new Reaper(clock, REAP_INTERVAL_MS, () => this.reap());
    if (notifications !== undefined) {
      const watchers = new KeyWatchers(notifications, this.channel);
      this.watch = (key, wake) => watchers.watch(key, wake);
    }
  }

  async claim(key: string, fingerprint: string, leaseMs: number): Promise<ClaimResult> {
    textValue('key', key);
    textValue('fingerprint', fingerprint);
    duration('leaseMs', leaseMs);
    this.reaper.start();
    for (let attempt = 0; attempt < CLAIM_ATTEMPTS; attempt++) {
      const token = crypto.randomUUID();
      const rows = await this.db.query<ClaimRow>(this.sql.claim, [key, fingerprint, token, leaseMs]);
      const row = rows[0];
      if (row === undefined) continue; // lost a race to a concurrent commit: decide again
      switch (row.outcome) {
        case 'claimed':
          return { status: 'claimed', token };
        case 'completed':
          return { status: 'completed', result: decoder.decode(row.result ?? new Uint8Array()) };
        case 'in_progress':
          return { status: 'in_progress', retryAfterMs: Math.max(1, Math.ceil(row.remaining_ms ?? 1)) };
        default:
          return { status: 'mismatch' };
      }
    }
    throw new StoreUnavailableError(
      `${this.db.what}: the claim of an idempotency key kept losing races (${CLAIM_ATTEMPTS} attempts)`,
    );
  }

  async complete(
    key: string,
    token: string,
    result: string,
    ttlMs: number,
    tx?: PostgresTransaction,
  ): Promise<boolean> {
    duration('ttlMs', ttlMs);
    if (typeof result !== 'string')
      throw new TypeError(`expected "result" to be a string, got ${show(result)}`);
    const params = [key, token, encoder.encode(result), ttlMs, this.channel];
    const rows =
      tx === undefined
        ? await this.db.query<{ n: number }>(this.sql.complete, params)
        : await this.db.queryIn<{ n: number }>(tx, this.sql.complete, params);
    // Stryker disable next-line OptionalChaining: the statement ends in `SELECT count(*)`, so it always returns one row
    return rows[0]?.n === 1;
  }

  async release(key: string, token: string): Promise<boolean> {
    const rows = await this.db.query<{ n: number }>(this.sql.release, [key, token, this.channel]);
    // Stryker disable next-line OptionalChaining: the statement ends in `SELECT count(*)`, so it always returns one row
    return rows[0]?.n === 1;
  }

  async renew(key: string, token: string, leaseMs: number): Promise<boolean> {
    duration('leaseMs', leaseMs);
    // On PGlite a renewal during a transactional handler joins the transaction holding the session.
    const rows = await this.db.query(this.sql.renew, [key, token, leaseMs], undefined, true);
    return rows.length === 1;
  }

  /**
   * Runs `work(tx)` in one transaction and commits when it resolves (rolls back and rejects with its
   * error when it rejects). Write your own effects with `tx.query(text, params)` and call
   * `complete(key, token, result, ttlMs, tx)` inside: both commit or neither. On PGlite the
   * transaction holds the session: inside `work` use only `tx`, never the store's other methods
   * (they would wait for the session until their deadline).
   *
   * @example
   * await stores.idempotency.transaction(async (tx) => {
   *   await tx.query('INSERT INTO orders (id) VALUES ($1)', [orderId]);
   *   if (!(await stores.idempotency.complete(key, token, result, ttlMs, tx))) throw new Error('lease lost');
   * });
   */
  transaction<T>(work: (tx: PostgresTransaction) => Promise<T>): Promise<T> {
    return this.db.transaction(work);
  }

  /**
   * Deletes expired records (a lease or retention that has ended), at most 1,000 per statement and
   * 100 statements per call; resolves with how many it deleted. Live records are never touched.
   * Runs every minute by itself; call it yourself to clean up at a time of your choosing.
   */
  reap(): Promise<number> {
    return reapInBatches(this.db, this.sql.reap);
  }

  /** @internal Stops the reaper (from `stores.close()`). */
  stop(): void {
    this.reaper.stop();
  }
}
