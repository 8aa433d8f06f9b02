import { type Algorithm, ceilMs, decision, TIME_EPSILON_MS } from './algorithm.js';
import type { RateLimitResult, RateLimitRule } from './store.js';

/** GCRA's whole state: one timestamp. */
export interface GcraState {
  /** Theoretical arrival time (store clock, ms): when the key would be back at full capacity. */
  tat: number;
}

/**
 * GCRA (generic cell rate algorithm, the virtual-scheduling form of the leaky bucket): the same
 * policy as the token bucket, stored as one timestamp. Each unit advances the theoretical arrival
 * time (TAT) by the emission interval `periodMs / limit`; a take is allowed while the TAT stays
 * within `burst × periodMs / limit` (tau) of now.
 */
export const gcra: Algorithm<GcraState> = {
  create(_rule: RateLimitRule, now: number): GcraState {
    return { tat: now };
  },

  take(state: GcraState, now: number, cost: number, rule: RateLimitRule): RateLimitResult {
    // Mirrored by the Redis script with the same operations in the same order (it receives `unit`
    // and `tau` computed exactly like this), so both stores compute the same doubles.
    const unit = rule.periodMs / rule.limit;
    const tau = (rule.burst * rule.periodMs) / rule.limit;
    const tat = Math.max(state.tat, now);
    const before = tat - now;
    const debt = before + cost * unit;
    // Allowed when the wait is within the epsilon; durations are rounded up after taking it off, so
    // a refusal always says at least 1 ms and waiting exactly retryAfterMs is always enough.
    const wait = debt - tau;
    if (wait > TIME_EPSILON_MS) {
      return decision(
        false,
        remainingOf(tau, before, unit),
        ceilMs(wait - TIME_EPSILON_MS),
        ceilMs(before - TIME_EPSILON_MS),
        rule.burst,
      );
    }
    if (cost > 0) state.tat = now + debt;
    return decision(true, remainingOf(tau, debt, unit), 0, ceilMs(debt - TIME_EPSILON_MS), rule.burst);
  },
};

/** Whole units available when the TAT is `debt` ms ahead of now (the 1e-9 absorbs rounding). */
function remainingOf(tau: number, debt: number, unit: number): number {
  return Math.max(Math.floor((tau - debt) / unit + 1e-9), 0);
}
