import type { Clock } from '../core/clock.js';
import { SlidingWindow } from '../core/sliding-window.js';
import { type CircuitStats, LatencySample, percentiles } from './stats.js';

/**
 * What the breaker records about a counted call, as bit flags (0: a success, not slow). Bit n
 * feeds counter n + 1 (see {@link OutcomeWindow.count}).
 */
export const Mark = {
  Failed: 1,
  Slow: 2,
  /** A failure that timed out (always with `Failed`). */
  TimedOut: 4,
} as const;

// The counters of every window.
const CALLS = 0;
const FAILURES = 1;
const SLOW = 2;
const TIMEOUTS = 3;
export const REJECTIONS = 4;
export const COUNTERS = 5;

/** A rate rule: trip when `share ≥ threshold` of at least `minimumThroughput` calls in the window. */
export interface RateRule {
  readonly threshold: number;
  readonly minimumThroughput: number;
}

/**
 * The outcomes of recent calls, with running counts: answers the failure-rate and slow-call-rate
 * trip rules and `stats()`. A call the breaker did not count (its caller left) is not in it.
 */
export abstract class OutcomeWindow {
  /** Records a counted call: its {@link Mark}s and its latency (0 when latency is not tracked). */
  abstract record(marks: number, latencyMs: number): void;

  /** Records a refused call: a rejection, never one of the calls the rate rules judge. */
  abstract reject(): void;

  /** Forgets every call (a fresh start after closing). */
  abstract clear(): void;

  /** Adds `amount` to `counter`. */
  protected abstract add(counter: number, amount: number): void;

  /** The sum of `counter` over the window. */
  protected abstract total(counter: number): number;

  /** A copy of the latencies of the window's counted calls; `undefined` when not tracked. */
  protected abstract latencies(): Float64Array | undefined;

  /** True when failures reach the rule's share of enough calls. */
  failureRateReached(rule: RateRule): boolean {
    return this.reached(FAILURES, rule);
  }

  /** True when slow calls reach the rule's share of enough calls. */
  slowRateReached(rule: RateRule): boolean {
    return this.reached(SLOW, rule);
  }

  /** The window's figures, percentiles computed now. */
  stats(): CircuitStats {
    const calls = this.total(CALLS);
    const failures = this.total(FAILURES);
    const latencies = this.latencies();
    return {
      successes: calls - failures,
      failures,
      timeouts: this.total(TIMEOUTS),
      slowCalls: this.total(SLOW),
      rejections: this.total(REJECTIONS),
      latencyMs: latencies === undefined ? undefined : percentiles(latencies),
    };
  }

  /** Counts (`amount` 1) or takes back (−1) a counted call with `marks`. */
  protected count(marks: number, amount: number): void {
    this.add(CALLS, amount);
    for (let rest = marks, counter = FAILURES; rest !== 0; rest >>= 1, counter++) {
      if ((rest & 1) !== 0) this.add(counter, amount);
    }
  }

  private reached(counter: number, rule: RateRule): boolean {
    const calls = this.total(CALLS);
    // minimumThroughput is at least 1 (and 0 / 0 would be NaN, which reaches no threshold).
    return calls >= rule.minimumThroughput && this.total(counter) / calls >= rule.threshold;
  }
}

/** The buckets a time window is cut into. */
const BUCKETS = 10;

/**
 * A sliding time window of {@link BUCKETS} buckets: O(buckets) memory however many calls, and it
 * spans between `sizeMs − sizeMs / 10` and `sizeMs` of history. Its latencies are the latest
 * calls' (see {@link LatencySample}).
 */
export class TimeWindow extends OutcomeWindow {
  private readonly counts: SlidingWindow;
  private readonly bucketMs: number;
  private readonly sample: LatencySample | undefined;

  constructor(
    private readonly clock: Clock,
    sizeMs: number,
    trackLatency: boolean,
  ) {
    super();
    this.counts = new SlidingWindow(clock, COUNTERS, sizeMs, BUCKETS);
    this.bucketMs = sizeMs / BUCKETS;
    this.sample = trackLatency ? new LatencySample() : undefined;
  }

  record(marks: number, latencyMs: number): void {
    this.count(marks, 1);
    this.sample?.record(latencyMs, this.clock.now());
  }

  reject(): void {
    this.counts.add(REJECTIONS);
  }

  clear(): void {
    this.counts.clear();
    this.sample?.clear();
  }

  protected add(counter: number, amount: number): void {
    this.counts.add(counter, amount);
  }

  protected total(counter: number): number {
    return this.counts.total(counter);
  }

  protected latencies(): Float64Array | undefined {
    // The span the counts cover: the current bucket and the BUCKETS − 1 before it.
    const start = (Math.floor(this.clock.now() / this.bucketMs) - BUCKETS + 1) * this.bucketMs;
    return this.sample?.since(start);
  }
}
