/**
 * The rate-limit store contract: where the per-key state of a rate limiter lives and where each
 * decision is made atomically. One interface for every backend: the in-memory store
 * (`memoryRateLimitStore`, in this folder) is the default and the reference behaviour;
 * `redisStores(client).rateLimit` (in `bulwark/redis`) shares limits between processes. Both pass
 * the same conformance suite (`rateLimitStoreConformance` from `bulwark/testing`).
 */

/**
 * How a limiter decides. All three enforce `limit` per `periodMs` on average:
 *
 * - `token-bucket`: a bucket of `burst` tokens refilled continuously at `limit / periodMs`.
 * - `gcra`: the same policy as the token bucket (the same decisions), stored as one timestamp per
 *   key (the theoretical arrival time). The default.
 * - `sliding-window`: at most `limit` in any window of `periodMs`, with no burst at window
 *   boundaries; a counter in `buckets` sub-windows, so quota comes back up to one sub-window late.
 */
export type RateLimitAlgorithm = 'token-bucket' | 'gcra' | 'sliding-window';

/**
 * A validated rule: everything a store needs to make a decision. Built by `rateLimiter()`; stores
 * read it and never change it. Limiters that share a store must have distinct `name`s.
 */
export interface RateLimitRule {
  /** Names the limiter: its namespace in a shared store and its policy name in HTTP headers. */
  readonly name: string;
  readonly algorithm: RateLimitAlgorithm;
  /** Units admitted per `periodMs` on average (a positive integer). */
  readonly limit: number;
  /** The period of `limit`, in milliseconds. */
  readonly periodMs: number;
  /** The most units admitted at once: the capacity `remaining` counts down from. */
  readonly burst: number;
  /** Sub-windows of the sliding window (1 for the other algorithms). */
  readonly buckets: number;
}

/**
 * One decision. Every duration is a whole number of milliseconds, rounded up, so that waiting
 * `retryAfterMs` is always enough for an uncontended key.
 */
export interface RateLimitResult {
  /** Whether the units were taken. A refusal is a result, not an error. */
  readonly allowed: boolean;
  /** Whole units that could still be taken at once, after this decision. */
  readonly remaining: number;
  /** 0 when allowed; otherwise how long until the same `cost` could be allowed (absent other takers). */
  readonly retryAfterMs: number;
  /** How long until the key is back at full capacity (`remaining === limit`) if nothing else is taken. */
  readonly resetMs: number;
  /** The capacity: the rule's `burst` (equal to `limit` unless set otherwise). */
  readonly limit: number;
  /**
   * Present only when the store failed and the decision was made without it, by the limiter's
   * `storeFailure` mode: `fail-open` (admitted blindly; the numbers mean nothing) or `local` (made
   * by the local in-memory fallback at `limit / instances`).
   */
  readonly fallback?: 'fail-open' | 'local' | undefined;
}

/**
 * Where rate-limit state lives. Three operations every store has, each atomic per key, each
 * answering with a promise whatever the backend (the in-memory store too, so a limiter's callers
 * never depend on which store it has), and three for quota control and combined limits that both
 * built-in stores have.
 *
 * - **Atomicity.** `take` reads the key's state, decides and writes the new state as one step: two
 *   concurrent takes of the last unit never both succeed, whichever process they come from. A
 *   refused take changes nothing. `adjust`, `block` and `takeAll` are each one step the same way.
 * - **Whose clock.** The store's: a memory store reads its `clock`, the Redis store `TIME` on the
 *   server, so processes with skewed clocks share one timeline. The client's clock is never written
 *   into shared state (a block's end included).
 * - **Expiry.** State may be dropped once it is equivalent to a fresh key (full capacity, no block):
 *   Redis keys carry a `PEXPIRE` of exactly that long, so expiry never changes a decision. A bounded
 *   memory store also evicts least-recently-used keys (and blocks), which then restart at full
 *   capacity, unblocked.
 * - **Blocks.** A blocked key refuses every take until the block ends, with `remaining` 0 and a
 *   `retryAfterMs` of the longer of the block's rest and the wait its quota itself needs; its quota
 *   is kept underneath and refills as usual. `peek` reports it with `remaining` 0.
 * - **Failure.** A store that cannot decide rejects; it never reports a failure as a refusal. The
 *   limiter turns failures of `take` into its `storeFailure` behaviour (a store that throws instead of
 *   rejecting is treated the same); failures of the other operations reject the limiter's call.
 */
export interface RateLimitStore {
  /**
   * Takes `cost` units (a positive integer ≤ `rule.burst`) from `key` if they are available now,
   * atomically. Resolves with the decision; rejects only when the store failed.
   */
  take(key: string, cost: number, rule: RateLimitRule): Promise<RateLimitResult>;
  /** The key's state now, as an allowed take of 0 units would see it; changes nothing. */
  peek(key: string, rule: RateLimitRule): Promise<RateLimitResult>;
  /** Forgets `key`: it restarts at full capacity, and a block on it is lifted. */
  reset(key: string, rule: RateLimitRule): Promise<void>;
  /**
   * Moves `key`'s quota by `units` (a non-zero safe integer), atomically: positive consumes (a
   * penalty), negative gives back (a reward), clamped so that `remaining` stays within [0, burst]
   * whatever the algorithm (the token bucket moves its level, GCRA its arrival time, the sliding
   * window counts the units in its newest sub-window or, for a reward, removes the most recent ones).
   * Resolves with the state after, as `peek` reports it.
   *
   * Optional in the type so that a store written for `take`, `peek` and `reset` still compiles and
   * limits; `limiter.penalty()` and `reward()` reject with a `TypeError` on a store without it.
   */
  adjust?(key: string, units: number, rule: RateLimitRule): Promise<RateLimitResult>;
  /**
   * Blocks `key` for `ms` (a positive number of milliseconds) from now on the store's clock,
   * atomically: a block never shortens one already longer, and `reset` lifts it. Resolves with the
   * state after, as `peek` reports it (`remaining` 0). Optional like `adjust` (`limiter.block()`
   * rejects with a `TypeError` on a store without it).
   */
  block?(key: string, ms: number, rule: RateLimitRule): Promise<RateLimitResult>;
  /**
   * Takes `cost` units from `key` under every rule of `rules` (distinct names, `cost` ≤ each
   * `burst`) atomically, or from none: resolves with one decision per rule, in order, each saying
   * whether that rule alone admits the cost now; the units were taken exactly when every decision
   * allows. When some rule refuses, nothing is taken, and a rule that would have allowed reports its
   * state as `peek` does. Optional like `adjust` (`rateLimiter.all()` refuses a store without it).
   */
  takeAll?(key: string, cost: number, rules: readonly RateLimitRule[]): Promise<RateLimitResult[]>;
}
