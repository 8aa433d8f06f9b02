import type { Clock } from './clock.js';

/**
 * Counters over a sliding time window, kept in a fixed ring of buckets: memory is
 * O(buckets × counters) whatever the call rate, and each update is O(1) amortised. Used by the
 * retry budget and the circuit breaker's failure-rate rule.
 *
 * The window covers the current bucket and the `buckets − 1` before it, so it spans between
 * `windowMs − bucketMs` and `windowMs` of history.
 */
export class SlidingWindow {
  private readonly counts: Float64Array;
  private readonly totals: Float64Array;
  private readonly bucketMs: number;
  private bucket: number;

  /**
   * @param counters how many independent counters (e.g. calls, failures, slow calls)
   * @param windowMs the span of the window
   * @param buckets how many buckets the window is cut into
   */
  constructor(
    private readonly clock: Clock,
    private readonly counters: number,
    windowMs: number,
    private readonly buckets = 10,
  ) {
    this.counts = new Float64Array(counters * buckets);
    this.totals = new Float64Array(counters);
    this.bucketMs = windowMs / buckets;
    this.bucket = Math.floor(clock.now() / this.bucketMs);
  }

  /** Adds `amount` to `counter` in the current bucket. */
  add(counter: number, amount = 1): void {
    const slot = this.rotate();
    this.counts[slot * this.counters + counter]! += amount;
    this.totals[counter]! += amount;
  }

  /** The sum of `counter` over the window. */
  total(counter: number): number {
    this.rotate();
    return this.totals[counter]!;
  }

  /** Forgets everything. */
  clear(): void {
    this.counts.fill(0);
    this.totals.fill(0);
  }

  /** Moves the window to now, dropping buckets that fell out of it; returns the current slot. */
  private rotate(): number {
    const bucket = Math.floor(this.clock.now() / this.bucketMs);
    // A clock that steps back keeps counting into the newest bucket.
    // Stryker disable next-line EqualityOperator: in the same bucket nothing is stale (the loop runs 0 times) and the bucket stays as it is
    if (bucket > this.bucket) {
      const stale = Math.min(this.buckets, bucket - this.bucket);
      for (let i = 1; i <= stale; i++) {
        const base = ((this.bucket + i) % this.buckets) * this.counters;
        for (let c = 0; c < this.counters; c++) {
          this.totals[c]! -= this.counts[base + c]!;
          this.counts[base + c] = 0;
        }
      }
      this.bucket = bucket;
    }
    return this.bucket % this.buckets;
  }
}
