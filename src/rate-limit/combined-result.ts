/**
 * The decision of several limits on one take (`rateLimiter.all()`), from each limit's own: which
 * limit binds, and the combined numbers.
 */
import type { RateLimitResult, RateLimitRule } from './store.js';

/** The limit that decided a combined decision, and its own decision. */
export interface BindingLimit {
  /** The binding limiter's rule (its `name` is what the HTTP `RateLimit` header states). */
  readonly rule: RateLimitRule;
  /** Its own decision: its `remaining` and `resetMs`, not the combined ones. */
  readonly result: RateLimitResult;
}

/**
 * The decision of a combined limiter (`rateLimiter.all()`): allowed when every limit allows;
 * `remaining` and `limit` those of the limit with the fewest units left (the first of equals, in
 * the order the limiters were given): what could be taken now under all of them; `retryAfterMs`
 * the longest wait (until every limit could allow the cost, absent other takers); `resetMs` the
 * longest reset (when the key is back at full capacity under every limit).
 */
export interface CombinedRateLimitResult extends RateLimitResult {
  /**
   * The limit that binds: on a refusal the refusing limit with the longest wait (the one
   * `retryAfterMs` is), otherwise the one with the fewest units left (the first of equals, in the
   * order the limiters were given).
   */
  readonly binding: BindingLimit;
}

/**
 * Combines the decisions `results[i]` of `rules[i]` (one or more, in the limiters' order; on a
 * refusal known locally, only the limits that refused).
 */
export function combine(
  rules: readonly RateLimitRule[],
  results: readonly RateLimitResult[],
): CombinedRateLimitResult {
  let tightest = 0;
  let binding = 0;
  let allowed = true;
  let retryAfterMs = 0;
  let resetMs = 0;
  let fallback: RateLimitResult['fallback'];
  for (let i = 0; i < results.length; i++) {
    const result = results[i]!;
    const bound = results[binding]!;
    if (result.remaining < results[tightest]!.remaining) tightest = i;
    if (result.allowed) {
      if (bound.allowed && result.remaining < bound.remaining) binding = i;
    } else if (bound.allowed || result.retryAfterMs > bound.retryAfterMs) {
      binding = i;
    }
    allowed &&= result.allowed;
    retryAfterMs = Math.max(retryAfterMs, result.retryAfterMs);
    resetMs = Math.max(resetMs, result.resetMs);
    if (result.fallback !== undefined && fallback !== 'local') fallback = result.fallback;
  }
  const { remaining, limit } = results[tightest]!;
  const bindingLimit: BindingLimit = { rule: rules[binding]!, result: results[binding]! };
  return fallback === undefined
    ? { allowed, remaining, retryAfterMs, resetMs, limit, binding: bindingLimit }
    : { allowed, remaining, retryAfterMs, resetMs, limit, fallback, binding: bindingLimit };
}
