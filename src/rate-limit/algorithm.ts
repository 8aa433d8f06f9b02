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
   * Decides a take of `cost` units at `now`, updating `state` only when allowed and `commit` (the
   * default; `false` asks what the take would decide, changing nothing). `cost` 0 is a peek: it is
   * always allowed and changes nothing.
   */
  take(state: S, now: number, cost: number, rule: RateLimitRule, commit?: boolean): RateLimitResult;
  /**
   * Moves the key's quota by `units` at `now` (a non-zero integer): positive consumes (a penalty),
   * negative gives back (a reward), clamped so that `remaining` stays within [0, burst] — a penalty
   * never takes a key below empty, a reward never fills it above its capacity.
   */
  adjust(state: S, now: number, units: number, rule: RateLimitRule): void;
}

/**
 * Slack for comparisons made in floating point, in token·milliseconds (units × `periodMs`, the scale
 * the token bucket and GCRA compute in): a take short of its quota by at most a billionth of a unit
 * is allowed, so rounding never refuses a client that is exactly on time. Relative to one unit, it
 * stays far below a unit at any rate (a fixed slack in time would be whole units at a billion per
 * second); with whole-millisecond times and an integer `periodMs` every quantity is an exact integer,
 * so below a `periodMs` of 1e9 (where the slack reaches 1 token·ms) it never decides anything. A
 * shortfall allowed within the slack is carried by both the token bucket and GCRA, never forgiven,
 * so it is allowed once, not at every take.
 */
export function slackOf(periodMs: number): number {
  return periodMs * 1e-9;
}

/** Rounds a duration up to whole milliseconds; anything ≤ 0 is 0. */
export function ceilMs(ms: number): number {
  // Stryker disable next-line EqualityOperator: (>=) Math.ceil(0) is 0
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
