import { type Algorithm, ceilMs, decision, slackOf } from './algorithm.js';
import type { RateLimitResult, RateLimitRule } from './store.js';

/**
 * A token bucket's state. The level is kept in token·milliseconds (tokens × `periodMs`), so a refill
 * of `elapsed × limit` and a take of `cost × periodMs` are exact for whole-millisecond times: no
 * rounding drift ever refuses a client that keeps to its rate, or admits more than the rate, at any
 * rate (a billion units per second included).
 */
export interface TokenBucketState {
  /**
   * Tokens × periodMs, up to burst × periodMs; below 0 after a take allowed within the slack (the
   * shortfall is carried, as GCRA carries it in its TAT) or once a clock stepped back.
   */
  level: number;
  /** When the level was last brought up to date (store clock, ms). */
  last: number;
}

/**
 * Token bucket: `burst` tokens, refilled continuously at `limit / periodMs`; a take of `cost` needs
 * `cost` tokens. Allows at most `burst + limit × t / periodMs` units over any interval of `t` ms.
 * Adjusting moves the level by whole units: a penalty never below 0 (nor a level already below it
 * lower), a reward never above the capacity.
 */
export const tokenBucket: Algorithm<TokenBucketState> = {
  create(rule: RateLimitRule, now: number): TokenBucketState {
    return { level: rule.burst * rule.periodMs, last: now };
  },

  take(
    state: TokenBucketState,
    now: number,
    cost: number,
    rule: RateLimitRule,
    commit = true,
  ): RateLimitResult {
    const { limit, periodMs, burst } = rule;
    const capacity = burst * periodMs;
    const slack = slackOf(periodMs);
    let level = refilled(state, now, limit, capacity);
    // What is missing, in token·ms: the same quantity and comparison as GCRA's, so both decide
    // alike, and a refusal always says at least 1 ms.
    const short = cost * periodMs - level;
    if (short <= slack) {
      // A shortfall within the slack is carried, not forgiven: forgiving it at every take would let
      // a client a billionth of a unit early each time drift past the rate, and decide unlike GCRA.
      level = -short;
      if (cost > 0 && commit) {
        state.level = level;
        state.last = now;
      }
      return decision(true, unitsOf(level, periodMs), 0, ceilMs((capacity - level - slack) / limit), burst);
    }
    return decision(
      false,
      unitsOf(level, periodMs),
      ceilMs((short - slack) / limit),
      ceilMs((capacity - level - slack) / limit),
      burst,
    );
  },

  adjust(state: TokenBucketState, now: number, units: number, rule: RateLimitRule): void {
    const { limit, periodMs, burst } = rule;
    const capacity = burst * periodMs;
    const level = refilled(state, now, limit, capacity);
    const next = level - units * periodMs;
    state.level = units > 0 ? Math.max(next, Math.min(level, 0)) : Math.min(next, capacity);
    state.last = now;
  },
};

/**
 * The level refilled up to `now`, capped at the capacity. A clock that steps back takes back what
 * it refilled since then (the level may go below 0): quota taken at a later time counts as taken,
 * as GCRA's TAT counts it, so both decide alike and retryAfterMs is enough on the clock as it reads
 * now.
 */
function refilled(state: TokenBucketState, now: number, limit: number, capacity: number): number {
  const level = state.level + (now - state.last) * limit;
  return Math.min(level, capacity);
}

/** Whole units in `level` token·ms (the 1e-9 absorbs rounding; a carried shortfall is 0 units). */
function unitsOf(level: number, periodMs: number): number {
  return Math.max(Math.floor(level / periodMs + 1e-9), 0);
}
