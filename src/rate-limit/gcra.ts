import { type Algorithm, ceilMs, decision, slackOf } from './algorithm.js';
import type { RateLimitResult, RateLimitRule } from './store.js';

/**
 * GCRA's state: the theoretical arrival time (TAT, store clock), when the key would be back at full
 * capacity. It is kept in two parts, whole milliseconds and the rest in token·ms (the fraction of a
 * millisecond × `limit`), because one double cannot hold an epoch-sized time finely enough: at
 * ~1.7e12 ms a double is exact to 2.4e-4 ms only, a quarter of a millisecond of drift per take at a
 * million units per second and worse beyond. In two parts every quantity is exact for
 * whole-millisecond clocks, at any rate.
 */
export interface GcraState {
  /** Whole milliseconds of the TAT. */
  tatMs: number;
  /** The rest of the TAT in token·ms, from 0 to `limit` (exclusive). */
  tatRest: number;
}

/**
 * GCRA (generic cell rate algorithm, the virtual-scheduling form of the leaky bucket): the same
 * policy as the token bucket, stored as one timestamp. Each unit advances the TAT by the emission
 * interval `periodMs / limit`; a take is allowed while the TAT stays within `burst × periodMs /
 * limit` (tau) of now. Computed in token·ms (durations × `limit`), the token bucket's scale: tau is
 * `burst × periodMs`, a unit `periodMs`. Adjusting moves the TAT by whole units, clamped between now
 * (full) and now + tau (empty; a TAT already beyond stays), exactly as the token bucket's level.
 */
export const gcra: Algorithm<GcraState> = {
  create(rule: RateLimitRule, now: number): GcraState {
    const nowMs = Math.floor(now);
    // Stryker disable next-line ArithmeticOperator: (÷) a fresh key is taken at the time it is created, and with a whole limit ≥ 1 a rest of fraction ÷ limit is behind now as fraction × limit is not ahead: both are "no debt"
    return { tatMs: nowMs, tatRest: (now - nowMs) * rule.limit };
  },

  take(state: GcraState, now: number, cost: number, rule: RateLimitRule, commit = true): RateLimitResult {
    // Mirrored by the Redis script with the same operations in the same order, so both stores
    // compute the same doubles.
    const { limit, periodMs, burst } = rule;
    const tau = burst * periodMs;
    const slack = slackOf(periodMs);
    const nowMs = Math.floor(now);
    const nowRest = (now - nowMs) * limit;
    const before = aheadOf(state, nowMs, nowRest, limit);
    const debt = before + cost * periodMs;
    const short = debt - tau;
    if (short > slack) {
      return decision(
        false,
        remainingOf(tau, before, periodMs),
        ceilMs((short - slack) / limit),
        ceilMs((before - slack) / limit),
        burst,
      );
    }
    if (cost > 0 && commit) setTat(state, nowMs, nowRest, debt, limit);
    return decision(true, remainingOf(tau, debt, periodMs), 0, ceilMs((debt - slack) / limit), burst);
  },

  adjust(state: GcraState, now: number, units: number, rule: RateLimitRule): void {
    const { limit, periodMs, burst } = rule;
    const nowMs = Math.floor(now);
    const nowRest = (now - nowMs) * limit;
    const before = aheadOf(state, nowMs, nowRest, limit);
    const next = before + units * periodMs;
    const debt = units > 0 ? Math.min(next, Math.max(before, burst * periodMs)) : Math.max(next, 0);
    setTat(state, nowMs, nowRest, debt, limit);
  },
};

/** How far the TAT is ahead of now, in token·ms (0 when it is in the past). */
function aheadOf(state: GcraState, nowMs: number, nowRest: number, limit: number): number {
  const before = (state.tatMs - nowMs) * limit + (state.tatRest - nowRest);
  return Math.max(before, 0);
}

/** Sets the TAT to `debt` token·ms after now, in its two parts. */
function setTat(state: GcraState, nowMs: number, nowRest: number, debt: number, limit: number): void {
  const ahead = nowRest + debt;
  const whole = Math.floor(ahead / limit);
  state.tatMs = nowMs + whole;
  state.tatRest = ahead - whole * limit;
}

/** Whole units available when the TAT is `debt` token·ms ahead of now (the 1e-9 absorbs rounding). */
function remainingOf(tau: number, debt: number, periodMs: number): number {
  return Math.max(Math.floor((tau - debt) / periodMs + 1e-9), 0);
}
