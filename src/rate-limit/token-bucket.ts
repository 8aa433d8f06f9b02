import { type Algorithm, ceilMs, decision, TIME_EPSILON_MS } from './algorithm.js';
import type { RateLimitResult, RateLimitRule } from './store.js';

/**
 * A token bucket's state. The level is kept in token·milliseconds (tokens × `periodMs`), so a refill
 * of `elapsed × limit` and a take of `cost × periodMs` are exact for whole-millisecond times: no
 * rounding drift ever refuses a client that keeps to its rate.
 */
export interface TokenBucketState {
  /** Tokens × periodMs, from 0 to burst × periodMs. */
  level: number;
  /** When the level was last brought up to date (store clock, ms). */
  last: number;
}

/**
 * Token bucket: `burst` tokens, refilled continuously at `limit / periodMs`; a take of `cost` needs
 * `cost` tokens. Allows at most `burst + limit × t / periodMs` units over any interval of `t` ms.
 */
export const tokenBucket: Algorithm<TokenBucketState> = {
  create(rule: RateLimitRule, now: number): TokenBucketState {
    return { level: rule.burst * rule.periodMs, last: now };
  },

  take(state: TokenBucketState, now: number, cost: number, rule: RateLimitRule): RateLimitResult {
    const { limit, periodMs, burst } = rule;
    const capacity = burst * periodMs;
    let level = state.level;
    let last = state.last;
    // A clock that steps back refills nothing until it catches up.
    if (now > last) {
      level += (now - last) * limit;
      if (level > capacity) level = capacity;
      last = now;
    }
    const need = cost * periodMs;
    // The same tolerance as GCRA (a take due within 1e-6 ms is allowed), so both decide alike and
    // a refusal always says at least 1 ms.
    const wait = (need - level) / limit;
    if (wait <= TIME_EPSILON_MS) {
      level -= need;
      if (level < 0) level = 0;
      if (cost > 0) {
        state.level = level;
        state.last = last;
      }
      return decision(
        true,
        Math.floor(level / periodMs + 1e-9),
        0,
        ceilMs((capacity - level) / limit - TIME_EPSILON_MS),
        burst,
      );
    }
    return decision(
      false,
      Math.floor(level / periodMs + 1e-9),
      ceilMs(wait - TIME_EPSILON_MS),
      ceilMs((capacity - level) / limit - TIME_EPSILON_MS),
      burst,
    );
  },
};
