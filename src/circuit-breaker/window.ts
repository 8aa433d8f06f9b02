import type { Clock } from '../core/clock.js';
import { SlidingWindow } from '../core/sliding-window.js';

const CALLS = 0;
const FAILURES = 1;
const SLOW = 2;

/** A rate rule: trip when `share ≥ threshold` of at least `minimumThroughput` calls in the window. */
export interface RateRule {
  readonly threshold: number;
  readonly minimumThroughput: number;
}

/**
 * The outcomes of recent calls over a sliding time window, in buckets: O(buckets) memory however
 * many calls. Answers the failure-rate and slow-call-rate trip rules.
 */
export class OutcomeWindow {
  private readonly counts: SlidingWindow;

  constructor(clock: Clock, windowMs: number) {
    this.counts = new SlidingWindow(clock, 3, windowMs);
  }

  /** Records one call. */
  record(failed: boolean, slow: boolean): void {
    this.counts.add(CALLS);
    if (failed) this.counts.add(FAILURES);
    if (slow) this.counts.add(SLOW);
  }

  /** True when failures reach the rule's share of enough calls. */
  failureRateReached(rule: RateRule): boolean {
    return this.reached(FAILURES, rule);
  }

  /** True when slow calls reach the rule's share of enough calls. */
  slowRateReached(rule: RateRule): boolean {
    return this.reached(SLOW, rule);
  }

  /** Forgets every call (a fresh start after closing). */
  clear(): void {
    this.counts.clear();
  }

  private reached(counter: number, rule: RateRule): boolean {
    const calls = this.counts.total(CALLS);
    // minimumThroughput is at least 1 (and 0 / 0 would be NaN, which reaches no threshold).
    return calls >= rule.minimumThroughput && this.counts.total(counter) / calls >= rule.threshold;
  }
}
