/**
 * The lock store contract: where each key's lease and fence live, and where acquire, renew and
 * release are decided atomically; and the fence store, which checks a fence at the resource. One
 * interface for every backend: the in-memory stores (`memoryLockStore`, `memoryFenceStore`, in this
 * folder) are the defaults and the reference behaviour; `redisStores(client).lock` / `.fence` and
 * `postgresStores(db).lock` / `.fence` share them between processes. All pass
 * `lockStoreConformance` from `bulwark/testing`.
 *
 * - **Atomicity.** `acquire` reads the key's lease and, if there is none (or it has expired),
 *   writes a new one for `owner` with the next fence, as one step: of any number of concurrent
 *   acquisitions of a free key, whichever process they come from, exactly one succeeds. `renew`
 *   and `release` are compare-and-set on the owner: they act only while the lease is unexpired and
 *   held by the caller's `owner`. A stale owner (whose lease expired, or was taken over) is refused
 *   with `false` and never removes or extends a successor's lease.
 * - **Fences.** Every successful `acquire` of a key returns a fence: a safe-integer `number`
 *   strictly greater than every fence issued for that key before — across client restarts, and
 *   even after the store lost its data — because it is `max(last fence + 1, the store's clock in
 *   microseconds)`. A fence is not secret; it orders writers.
 * - **Whose clock.** The store's: the memory store reads its `clock`, Redis `TIME` and `PEXPIRE`,
 *   PostgreSQL `clock_timestamp()`. The client's clock is never written into shared state.
 *   `expiresAt` is on the store's clock, for information: a holder measures its lease on its own
 *   clock from the moment it sent the acquisition, never from `expiresAt`.
 * - **Values.** Keys and owners are non-empty strings of well-formed UTF-16 (a `TypeError`
 *   otherwise); `ttlMs` is a positive safe integer.
 * - **Failure.** A store that cannot decide rejects (a remote store with `StoreUnavailableError`,
 *   within its deadline, `timeoutMs`); it never reports a failure as a refusal or a free key. A
 *   call that missed its deadline may still execute on the server later: a late `acquire` holds the
 *   key for one lease under an owner who never learns of it, exactly like a crashed holder.
 */

/** A lease that `acquire` took. */
export interface AcquiredLease {
  /** Strictly greater than every fence issued for this key before: pass it to the resource. */
  readonly fence: number;
  /** When the lease ends, in epoch ms on the store's clock (for information; see the module doc). */
  readonly expiresAt: number;
}

/** Where locks live. */
export interface LockStore {
  /**
   * The store's deadline for one call, in ms (0 for a store that never waits, like memory): a
   * lock's `ttlMs` must be at least 3 × this, so that a renewal can be confirmed in time.
   */
  readonly timeoutMs: number;
  /**
   * Takes `key` for `owner` for `ttlMs`, if it is free (or its lease has expired). Atomic (see the
   * module doc). Resolves the lease with its fence, or `undefined` when another owner holds it (the
   * same owner acquiring again is refused too: a lock is not reentrant).
   */
  acquire(key: string, owner: string, ttlMs: number): Promise<AcquiredLease | undefined>;
  /**
   * Extends the lease to `ttlMs` from now (the store's clock), if `owner` holds its unexpired
   * lease. Resolves true when renewed, false when the lease was already lost.
   */
  renew(key: string, owner: string, ttlMs: number): Promise<boolean>;
  /**
   * Frees `key` at once, if `owner` holds its unexpired lease, and wakes its watchers. Resolves true
   * when released, false when `owner` no longer held it (nothing changed).
   */
  release(key: string, owner: string): Promise<boolean>;
  /**
   * Optional: calls `wake` soon after `key` is released (by any process sharing the store) and
   * returns an unsubscribe function. Promised to a watcher once an acquisition of `key` was refused
   * after it watched (a store may notify only for keys a waiter is known to wait for, as the
   * PostgreSQL store does); `distributedLock` tries again after each wait. A hint only: a
   * notification may be late or lost, so waiters poll as well; and `wake` may come when nothing
   * changed (a remote store wakes its watchers each time it (re)starts listening, as notifications
   * sent before were lost): a woken waiter looks again. Never throws and never calls `wake`
   * synchronously.
   */
  watch?(key: string, wake: () => void): () => void;
}

/**
 * Where fences are checked, at the resource. Every fence store has a `write(resource, fence,
 * apply)` that refuses a fence lower than the highest one seen for `resource` (`StaleFenceError`,
 * and nothing is written), accepts the same fence writing again, and records the fence with the
 * write, atomically: of two writers, the one with the lower fence can never write after the other.
 * What `apply` is depends on what the backend can make atomic with the check, so `write` is each
 * store's own: a function on the memory store (`apply()`), a function of the transaction on
 * PostgreSQL (`apply(tx)`, committed with the fence), the value itself on Redis (a JavaScript
 * callback cannot run inside a script). Resources are non-empty well-formed strings; fences
 * non-negative safe integers (a `TypeError` otherwise).
 */
export interface FenceStore {
  /** The highest fence that wrote to `resource`, or `undefined` if none has. */
  highest(resource: string): Promise<number | undefined>;
}
