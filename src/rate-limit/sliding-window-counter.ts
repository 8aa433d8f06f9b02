import { type Algorithm, ceilMs, decision } from './algorithm.js';
import type { RateLimitResult, RateLimitRule } from './store.js';

/**
 * A sliding-window counter's state: a ring of `buckets + 1` counts, one per sub-window of
 * `periodMs / buckets`, and the index of the newest sub-window.
 */
export interface SlidingWindowState {
  /** counts[i mod (buckets + 1)] = units admitted in sub-window i. */
  readonly counts: Float64Array;
  /** Index (time / sub-window length, floored) of the newest sub-window. */
  newest: number;
  /** The sum of `counts`. */
  total: number;
}

/**
 * Sliding-window counter: at most `limit` units in any window of `periodMs` (half-open: a unit
 * taken at `t` no longer counts against a take at `t + periodMs`), with no burst at window
 * boundaries.
 *
 * The window is cut into `buckets` sub-windows of `b = periodMs / buckets`. A take at `t` counts
 * every sub-window that overlaps `(t − periodMs, t]`, the oldest one whole: that is what makes the
 * quota strict, at a price in exactness: a unit comes back when its whole sub-window has slid out,
 * up to `b` later than an exact log of timestamps would give it back. A client is never refused
 * while it takes at most `limit` units in any window of `periodMs + b`. Memory is
 * `buckets + 1` numbers per key; a decision is O(1) when allowed, O(buckets) when refused.
 */
export const slidingWindowCounter: Algorithm<SlidingWindowState> = {
  create(rule: RateLimitRule, now: number): SlidingWindowState {
    return {
      counts: new Float64Array(rule.buckets + 1),
      // Stryker disable next-line ArithmeticOperator: a fresh key has no units, so the first decision's slide from any earlier sub-window only empties empty ones
      newest: Math.floor(now / (rule.periodMs / rule.buckets)),
      total: 0,
    };
  },

  take(
    stored: SlidingWindowState,
    now: number,
    cost: number,
    rule: RateLimitRule,
    commit = true,
  ): RateLimitResult {
    // A peek (or a take that only asks) slides a copy: sliding the stored state would change a later
    // decision of a clock that steps back (a take after it counts what the peek dropped), and a peek
    // changes nothing.
    const state =
      cost > 0 && commit
        ? stored
        : { counts: stored.counts.slice(), newest: stored.newest, total: stored.total };
    const { limit, periodMs, buckets } = rule;
    const width = periodMs / buckets;
    const slots = buckets + 1;
    const counts = state.counts;
    slide(state, now, width, slots);
    const newest = state.newest;
    const total = state.total;

    if (total + cost <= limit) {
      // Stryker disable next-line ConditionalExpression,EqualityOperator: a cost of 0 adds nothing, and a peek works on a copy
      if (cost > 0) {
        counts[newest % slots]! += cost;
        state.total = total + cost;
      }
      return decision(true, limit - state.total, 0, resetOf(state, now, width, slots), limit);
    }

    // Refused: find the first sub-window whose expiry frees enough. Sub-window (newest − buckets + j)
    // (slot (newest + 1 + j) mod slots) stops counting at (newest + 1 + j) × width.
    let freed = 0;
    let retryAfterMs = 0;
    // Stryker disable next-line EqualityOperator: (<=) the loop breaks by j = slots − 1, when every sub-window is freed (the limiter refuses a cost above the limit)
    for (let j = 0; j < slots; j++) {
      freed += counts[(newest + 1 + j) % slots]!;
      if (total - freed + cost <= limit) {
        retryAfterMs = msUntil(newest + 1 + j, now, width);
        break;
      }
    }
    const remaining = limit - total;
    return decision(false, Math.max(remaining, 0), retryAfterMs, resetOf(state, now, width, slots), limit);
  },

  adjust(state: SlidingWindowState, now: number, units: number, rule: RateLimitRule): void {
    const { limit, periodMs, buckets } = rule;
    const slots = buckets + 1;
    const counts = state.counts;
    slide(state, now, periodMs / buckets, slots);
    if (units > 0) {
      // A penalty counts as units taken now, up to the limit.
      const added = Math.min(units, Math.max(limit - state.total, 0));
      counts[state.newest % slots]! += added;
      state.total += added;
      return;
    }
    // A reward gives back the most recent units first (it undoes the last takes), as far as it goes.
    let left = -units;
    for (let j = 0; j < slots && left > 0; j++) {
      const slot = (state.newest + slots - j) % slots;
      const back = Math.min(counts[slot]!, left);
      counts[slot]! -= back;
      state.total -= back;
      left -= back;
    }
  },
};

/**
 * Slides `state` to `now`: empties the sub-windows between the newest recorded and now. A clock
 * that steps back keeps counting into the newest sub-window.
 */
function slide(state: SlidingWindowState, now: number, width: number, slots: number): void {
  const current = Math.floor(now / width);
  // Stryker disable next-line EqualityOperator: (>=) in the same sub-window there is nothing to slide
  if (current > state.newest) {
    const counts = state.counts;
    const steps = Math.min(slots, current - state.newest);
    for (let i = 1; i <= steps; i++) {
      const slot = (state.newest + i) % slots;
      state.total -= counts[slot]!;
      counts[slot] = 0;
    }
    state.newest = current;
  }
}

/** Time until the newest non-empty sub-window stops counting (0 when every count is 0). */
function resetOf(state: SlidingWindowState, now: number, width: number, slots: number): number {
  // Stryker disable next-line ConditionalExpression: (false) with no units the scan finds none and returns 0 too
  if (state.total === 0) return 0;
  const counts = state.counts;
  // Stryker disable next-line ConditionalExpression,LogicalOperator,EqualityOperator,ArithmeticOperator: units are in a sub-window from newest − buckets to newest and at least 0, so the scan returns before either bound
  for (let j = 0; j < slots && state.newest - j >= 0; j++) {
    const index = state.newest - j;
    if (counts[index % slots]! > 0) return msUntil(index + slots, now, width);
  }
  return 0;
}

/**
 * Whole milliseconds from `now` until sub-window `index` begins, computed the way the index itself
 * is (`floor(time / width)`), so that waiting exactly this long always gets there and one ms less
 * never does, whatever the rounding of `index × width`.
 */
function msUntil(index: number, now: number, width: number): number {
  let ms = ceilMs(index * width - now);
  // Stryker disable next-line ConditionalExpression,EqualityOperator,ArithmeticOperator: (ms > 1 → true, ≥ 1) at 1 ms less the time is now, still before index; (now + ms + 1, × width) lower ms too far, and the loop below raises it back to the first that reaches index (now − ms − 1, which lowers nothing, is killable: the 29-sub-window tests catch it)
  while (ms > 1 && Math.floor((now + ms - 1) / width) >= index) ms -= 1;
  while (Math.floor((now + ms) / width) < index) ms += 1;
  return ms;
}
