/**
 * The PostgreSQL fence store: `postgresStores(db).fence`. The fence check and the caller's writes
 * commit in one transaction: `write(resource, fence, apply)` advances the resource's row in
 * `<schema>.fences` (or refuses a stale fence), then runs `apply(tx)` while that row stays locked.
 * See `lock/store.ts` for the contract and `fence-sql.ts` for the statements.
 *
 * For a table of your own, the same check fits in the write itself: keep the highest fence that
 * wrote to each row in a column (`fence_seen bigint NOT NULL DEFAULT 0`) and write only when the
 * caller's fence is not lower —
 *
 * ```sql
 * UPDATE accounts SET balance = $2, fence_seen = $3 WHERE id = $1 AND fence_seen <= $3
 * ```
 *
 * — where zero rows updated means the fence was stale (or the row is missing): the lock was lost,
 * so do not retry with that fence.
 */
import { show, textValue } from '../../core/validate.js';
import { StaleFenceError } from '../../lock/errors.js';
import { fenceValue } from '../../lock/memory-store.js';
import type { FenceStore } from '../../lock/store.js';
import type { Database, PostgresTransaction } from './database.js';
import { type FenceSql, fenceSql } from './fence-sql.js';
import { quoteIdent } from './identifiers.js';
import { safeInteger } from './values.js';

/**
 * Fenced writes in PostgreSQL (or PGlite), from `postgresStores(db).fence`: the resource side of a
 * `distributedLock()`. `write` refuses a fence lower than the highest that wrote to the resource
 * (`StaleFenceError`, nothing written), accepts the same fence writing again, and commits the fence
 * with your writes or neither: of two writers, the one with the lower fence can never write after
 * the other.
 *
 * Resources are `text`: non-empty, well-formed, without U+0000; fences non-negative safe integers
 * (a `TypeError` otherwise). A failure of the database or a missed deadline (`timeoutMs`, per
 * statement) is a `StoreUnavailableError`. Fence rows are never deleted (one per resource).
 *
 * For a fence checked on a table of your own in one statement, without this store:
 * `UPDATE accounts SET balance = $2, fence_seen = $3 WHERE id = $1 AND fence_seen <= $3` (zero rows
 * updated: the fence was stale).
 *
 * @example
 * const stores = postgresStores(pool);
 * await stores.migrate();
 * const locks = distributedLock({ store: stores.lock });
 * await locks.withLock(`account:${id}`, ({ fence }) =>
 *   stores.fence.write(`account:${id}`, fence, (tx) =>
 *     tx.query('UPDATE accounts SET balance = $2 WHERE id = $1', [id, balance]),
 *   ),
 * );
 */
export class PostgresFenceStore implements FenceStore {
  private readonly sql: FenceSql;

  /** @internal Built by `postgresStores`. */
  constructor(
    private readonly db: Database,
    schema: string,
  ) {
    this.sql = fenceSql(quoteIdent(schema));
  }

  /**
   * In one transaction: records `fence` as the highest for `resource` if it is not lower than the
   * highest yet, then runs `apply(tx)` and commits, resolving with its value. The fence row stays
   * locked until the commit, so a concurrent writer of the resource waits, and the check and your
   * writes commit together. Write with `tx.query(text, params)` only.
   *
   * Rejects with `StaleFenceError` for a lower fence (rolled back; `apply` never runs); with
   * `apply`'s error when it rejects (rolled back: the fence is not recorded either);
   * `StoreUnavailableError` when the database fails or a statement misses the deadline; a
   * `TypeError` for a bad resource, fence or `apply`, before anything is sent. On PGlite the
   * transaction holds the session: inside `apply` use only `tx`, never the stores (they would wait
   * for the session until their deadline), and keep it shorter than `timeoutMs` (a lock renewal
   * due meanwhile waits for it).
   *
   * @example
   * await stores.fence.write('account:42', fence, async (tx) => {
   *   await tx.query('UPDATE accounts SET balance = $2 WHERE id = $1', ['42', next]);
   * });
   */
  async write<T>(
    resource: string,
    fence: number,
    apply: (tx: PostgresTransaction) => T | Promise<T>,
  ): Promise<T> {
    textValue('resource', resource);
    fenceValue(fence);
    if (typeof apply !== 'function')
      throw new TypeError(`expected "apply" to be a function, got ${show(apply)}`);
    return this.db.transaction(async (tx) => {
      const written = await this.db.queryIn(tx, this.sql.advance, [resource, fence]);
      if (written.length === 0) {
        // The row is ours until the rollback: this read sees the fence that refused us.
        const rows = await this.db.queryIn<{ fence: string }>(tx, this.sql.highest, [resource]);
        // Stryker disable next-line OptionalChaining: the refused upsert met the row (a conflict) and holds its lock, so this read returns it
        throw new StaleFenceError(resource, fence, this.fence(rows[0]?.fence));
      }
      return apply(tx);
    });
  }

  /**
   * The highest fence that wrote to `resource` (committed), or `undefined` if none has. Rejects with
   * `StoreUnavailableError` when the database fails, a `TypeError` for a bad resource.
   */
  async highest(resource: string): Promise<number | undefined> {
    textValue('resource', resource);
    const rows = await this.db.query<{ fence: string }>(this.sql.highest, [resource]);
    const row = rows[0];
    return row === undefined ? undefined : this.fence(row.fence);
  }

  private fence(text: unknown): number {
    return safeInteger(`${this.db.what}: the highest fence`, text);
  }
}
