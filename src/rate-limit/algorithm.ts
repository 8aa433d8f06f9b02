/**
 * The shape shared by the rate-limit algorithms as the in-memory store runs them. Each algorithm
 * keeps a small mutable state per key and decides in O(1) (the sliding window in O(buckets) on a
 * refusal). The Redis store runs the same arithmetic in Lua, expression for expression, so both
 * stores make the same decisions.
 */
import type { RateLimitResult, RateLimitRule } from './store.js';

/** One algorithm over its per-key state `S`. */
export interface Algorithm<S> {
  /** A fresh key's state at time `now`: full capacity. */
  create(rule: RateLimitRule, now: number): S;
  /**
   * Decides a take of `cost` units at `now`, updating `state` only when allowed. `cost` 0 is a peek:
   * it is always allowed and changes nothing.
   */
  take(state: S, now: number, cost: number, rule: RateLimitRule): RateLimitResult;
}

/**
 * Slack for comparisons of times computed in floating point (GCRA): a take due at `t` is allowed
 * from `t − 1e-6` ms, so rounding never refuses a client that is exactly on time.
 */
export const TIME_EPSILON_MS = 1e-6;

/** Rounds a duration up to whole milliseconds; anything ≤ 0 is 0. */
export function ceilMs(ms: number): number {
  return ms > 0 ? Math.ceil(ms) : 0;
}

/** Builds a decision (one object shape for every algorithm). */
export function decision(
  allowed: boolean,
  remaining: number,
  retryAfterMs: number,
  resetMs: number,
  limit: number,
): RateLimitResult {
  return { allowed, remaining, retryAfterMs, resetMs, limit };
}
