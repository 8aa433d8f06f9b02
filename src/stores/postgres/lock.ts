/**
 * The PostgreSQL lock store: `postgresStores(db).lock`. One lease table (`<schema>.locks`), one
 * statement per operation, time from `clock_timestamp()`. See `lock/store.ts` for the contract it
 * keeps and `lock-sql.ts` for the statements.
 */
import type { Clock } from '../../core/clock.js';
import { textValue } from '../../core/validate.js';
import { leaseMs } from '../../lock/memory-store.js';
import type { AcquiredLease, LockStore } from '../../lock/store.js';
import type { Database, Notifications } from './database.js';
import { channelName, quoteIdent } from './identifiers.js';
import { KeyWatchers } from './key-watchers.js';
import { type LockSql, lockSql } from './lock-sql.js';
import { REAP_INTERVAL_MS, Reaper, reapInBatches } from './reaper.js';
import { safeInteger } from './values.js';

interface AcquireRow {
  readonly fence: string;
  readonly expires_at: number;
}

/**
 * Locks in PostgreSQL (or PGlite), from `postgresStores(db).lock`; pass it as
 * `distributedLock({ store })`. Keeps the contract of `LockStore` (see `bulwark`'s `lock/store.ts`):
 *
 * - `acquire` is one `INSERT … ON CONFLICT DO UPDATE … WHERE free`: concurrent acquirers of a key,
 *   from any process, take turns on its row lock and exactly one finds it free. The fence is
 *   `max(last fence + 1, clock_timestamp() in µs)`, a `bigint` returned as an exact `number`.
 * - `renew` and `release` are one compare-and-set `UPDATE` each on the owner and the unexpired
 *   lease. Release keeps the row (it holds the last fence) and sends a notification in the same
 *   statement only when somebody watches the key (`waiters`).
 * - A lease table, not advisory locks: it works through PgBouncer's transaction pooling (with
 *   `listen: false`), and survives a client that dies (its lease ends).
 *
 * Keys and owners are `text`: non-empty, well-formed, and without U+0000 (a `TypeError`); `ttlMs`
 * is a positive safe integer. Every call fails with `StoreUnavailableError` when the database fails
 * or misses the store set's deadline (`timeoutMs`). Free rows (released or expired) are deleted in
 * batches every minute, from the first acquisition until `stores.close()`, once the clock has
 * passed their fence by a minute; and by {@link reap}.
 *
 * On PGlite a `stores.fence.write` transaction holds the session while its `apply` runs: a renewal
 * due meanwhile waits for it, and fails (the lock is lost) if `apply` takes longer than
 * `timeoutMs`.
 *
 * @example
 * const stores = postgresStores(pool);
 * await stores.migrate();
 * const locks = distributedLock({ store: stores.lock });
 * await locks.withLock('report:daily', async ({ signal, fence }) => build(signal, fence), { ttlMs: 30_000 });
 */
export class PostgresLockStore implements LockStore {
  /** The store set's deadline of one call, in ms (a lock's `ttlMs` must be at least 3 × this). */
  readonly timeoutMs: number;
  /**
   * Calls `wake` soon after `key` is released by any process (LISTEN/NOTIFY; the notification is
   * sent by the release statement itself). Watching marks the key's row as awaited (one statement),
   * and so does each refused acquisition of a watched key: a release notifies only when somebody
   * waits. Absent with `listen: false`. A hint only: waiters poll as well.
   */
  readonly watch?: (key: string, wake: () => void) => () => void;
  private readonly sql: LockSql;
  private readonly channel: string;
  private readonly reaper: Reaper;
  private readonly watchers: KeyWatchers | undefined;

  /** @internal Built by `postgresStores`. */
  constructor(
    private readonly db: Database,
    schema: string,
    clock: Clock,
    timeoutMs: number,
    notifications: (() => Notifications) | undefined,
  ) {
    this.timeoutMs = timeoutMs;
    this.sql = lockSql(quoteIdent(schema));
    this.channel = channelName(schema, 'lock');
    this.reaper = new Reaper(clock, REAP_INTERVAL_MS, () => this.reap());
    if (notifications !== undefined) {
      const watchers = new KeyWatchers(notifications, this.channel);
      this.watchers = watchers;
      this.watch = (key, wake) => this.subscribe(watchers, key, wake);
    }
  }

  async acquire(key: string, owner: string, ttlMs: number): Promise<AcquiredLease | undefined> {
    textValue('key', key);
    textValue('owner', owner);
    leaseMs('ttlMs', ttlMs);
    this.reaper.start();
    // A refused acquisition marks the row only while this process watches the key (it waits for
    // it): a try-once caller must not make the holder's release notify.
    const text = this.watchers?.watching(key) ? this.sql.acquireOrWait : this.sql.acquire;
    const rows = await this.db.query<AcquireRow>(text, [key, owner, ttlMs]);
    const row = rows[0];
    if (row === undefined) return undefined;
    return { fence: safeInteger(`${this.db.what}: the fence`, row.fence), expiresAt: row.expires_at };
  }

  async renew(key: string, owner: string, ttlMs: number): Promise<boolean> {
    textValue('key', key);
    textValue('owner', owner);
    leaseMs('ttlMs', ttlMs);
    const rows = await this.db.query(this.sql.renew, [key, owner, ttlMs]);
    return rows.length === 1;
  }

  async release(key: string, owner: string): Promise<boolean> {
    textValue('key', key);
    textValue('owner', owner);
    const rows = await this.db.query<{ n: number }>(this.sql.release, [key, owner, this.channel]);
    // Stryker disable next-line OptionalChaining: the statement ends in `SELECT count(*)`, so it always returns one row
    return rows[0]?.n === 1;
  }

  /**
   * Deletes free rows (released, or whose lease ended) once the database's clock has passed their
   * fence by a minute, at most 1,000 per statement and 100 statements per call; resolves with how
   * many it deleted. Held leases are never touched, and fences keep increasing: the next fence of a
   * deleted key is floored by the clock. Runs every minute by itself; call it yourself to clean up
   * at a time of your choosing.
   */
  reap(): Promise<number> {
    return reapInBatches(this.db, this.sql.reap);
  }

  /** @internal Stops the reaper (from `stores.close()`). */
  stop(): void {
    this.reaper.stop();
  }

  /**
   * Watches `key`, and marks its row as awaited so that its holder's release notifies (one
   * statement, not awaited: a failure only leaves the waiter to poll).
   */
  private subscribe(watchers: KeyWatchers, key: string, wake: () => void): () => void {
    const unwatch = watchers.watch(key, wake);
    this.db.query(this.sql.markWaiters, [key]).catch(() => {});
    return unwatch;
  }
}
