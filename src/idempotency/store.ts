/**
 * The idempotency store contract: where each key's claim and stored result live, and where each
 * step of claim → execute → complete/release is decided atomically. One interface for every
 * backend: the in-memory store (`memoryIdempotencyStore`, in this folder) is the default and the
 * reference behaviour; `redisStores(client).idempotency` and `postgresStores(db).idempotency`
 * share keys between processes. All pass `idempotencyStoreConformance` from `bulwark/testing`.
 *
 * - **Atomicity.** `claim` reads the key's record and, if there is none (or it has expired), writes
 *   a new in-progress record with a fresh owner token, as one step: of any number of concurrent
 *   claims of a free key, whichever process they come from, exactly one gets `claimed`.
 *   `complete`, `release` and `renew` are compare-and-set on that token: they act only while the
 *   record is in progress, holds the caller's token and its lease has not expired. A stale owner
 *   (whose lease expired, or was taken over) is refused with `false`, never overwrites a successor.
 * - **Two lifetimes.** An in-progress record lives until its lease ends (`leaseMs`, short: a
 *   crashed owner blocks its key only that long); an expired lease counts as released, so the next
 *   claim takes the key over, whatever its fingerprint. A completed record lives `ttlMs` (the
 *   retention, long), then the key is free again.
 * - **Whose clock.** The store's: a memory store reads its `clock`, Redis `TIME` (through `PEXPIRE`
 *   and `PTTL`), PostgreSQL `clock_timestamp()`. The client's clock is never written into shared
 *   state, so processes with skewed clocks agree on every lease.
 * - **Values.** Keys, fingerprints and results are strings of well-formed UTF-16 (a lone
 *   surrogate is refused with a `TypeError`: Redis would store it as U+FFFD); keys are non-empty.
 *   The store keeps fingerprints and results exactly (the caller encodes: `idempotency()` stores
 *   JSON, which escapes lone surrogates, with bytes as base64).
 * - **Failure.** A store that cannot decide rejects (a remote store with `StoreUnavailableError`,
 *   within its deadline); it never reports a failure as a refusal, a mismatch or a free key. A call
 *   that missed its deadline may still execute on the server later: its outcome is unknown, not
 *   "nothing happened". A late `complete` stores what its owner asked; a late `claim` holds the key
 *   for one lease under a token nobody knows, exactly like a crashed owner.
 */

/** The outcome of {@link IdempotencyStore.claim}. */
export type ClaimResult =
  /** The key was free (or its lease or retention had expired): the caller owns it until its lease ends. */
  | { readonly status: 'claimed'; readonly token: string }
  /** A request with this fingerprint completed: `result` is what its owner stored. */
  | { readonly status: 'completed'; readonly result: string }
  /** A request with this fingerprint holds the key; its lease ends in `retryAfterMs` at the latest. */
  | { readonly status: 'in_progress'; readonly retryAfterMs: number }
  /** The key holds (or held, and still retains) a request with another fingerprint. */
  | { readonly status: 'mismatch' };

/**
 * Where idempotency records live. `Tx` is the store's transaction handle when it can write a
 * handler's effects in the same transaction as `complete` (PostgreSQL); `undefined` otherwise.
 */
export interface IdempotencyStore<Tx = undefined> {
  /**
   * Claims `key` for a request with `fingerprint`, for `leaseMs` (a positive integer). Atomic (see
   * the module doc). Resolves `claimed` with a fresh owner token unique to this claim,
   * `completed` with the stored result, `in_progress` with the lease's remaining time (≥ 1), or
   * `mismatch` when the live record has another fingerprint.
   */
  claim(key: string, fingerprint: string, leaseMs: number): Promise<ClaimResult>;
  /**
   * Stores `result` as the key's outcome, kept `ttlMs` (a positive integer), if `token` still owns
   * the key's unexpired lease; wakes the key's watchers. Resolves true when stored, false when
   * `token` no longer owns the key (nothing changed). With `tx` (from {@link transaction}), the write
   * is part of that transaction.
   */
  complete(key: string, token: string, result: string, ttlMs: number, tx?: Tx): Promise<boolean>;
  /**
   * Gives the key up, if `token` still owns its unexpired lease: the key is free at once and its
   * watchers are woken. Resolves true when released, false when `token` no longer owns the key.
   */
  release(key: string, token: string): Promise<boolean>;
  /**
   * Extends the key's lease to `leaseMs` from now (the store's clock), if `token` still owns the
   * unexpired lease. Resolves true when renewed, false when the lease was already lost.
   */
  renew(key: string, token: string, leaseMs: number): Promise<boolean>;
  /**
   * Optional: calls `wake` soon after `key` is completed or released (by any process sharing the
   * store) and returns an unsubscribe function. Promised only to a watcher whose claim saw the key
   * `in_progress` before it watched (a store may notify only for records a duplicate is known to
   * wait for, as the PostgreSQL store does); `idempotency()` watches exactly then. A hint only: a
   * notification may be late or lost (a dropped connection), so waiters poll as well; and `wake`
   * may come when nothing changed (a remote store wakes its watchers each time it (re)starts
   * listening, as notifications sent before were lost): a woken waiter looks again. Never throws
   * and never calls `wake` synchronously.
   */
  watch?(key: string, wake: () => void): () => void;
  /**
   * Optional: runs `work` in one transaction of the store and commits when it resolves (rolls back
   * when it rejects). What `work` writes through `tx` and a `complete(…, tx)` inside it commit
   * together or not at all.
   */
  transaction?<T>(work: (tx: Tx) => Promise<T>): Promise<T>;
}
