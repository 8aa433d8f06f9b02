/**
 * What `stats()` reports, and the latency sample of a time window. The windows keep running counts
 * and raw latencies as calls end (no allocation per call); percentiles are computed only when
 * `stats()` asks, from a sorted copy.
 */

/** Latency percentiles over the window's timed calls, in milliseconds (nearest rank). */
export interface LatencyPercentiles {
  readonly p50: number;
  readonly p90: number;
  readonly p99: number;
  readonly max: number;
}

/**
 * Rolling figures over the circuit breaker's window (its last N calls, or its time span), as its
 * `stats()` reports them.
 *
 * @example
 * const { successes, failures, timeouts, rejections, latencyMs } = breaker.stats();
 * chart({ calls: successes + failures, timeouts, rejections, p99: latencyMs?.p99 });
 */
export interface CircuitStats {
  /**
   * Calls the breaker counted as successes: they resolved, or failed in a way that shows the
   * dependency answered (a 4xx, a conflict; see `isFailure`).
   */
  readonly successes: number;
  /** Calls the breaker counted as failures, timeouts included. */
  readonly failures: number;
  /** Of the failures, those that timed out (`callTimeoutMs`, an outer timeout or deadline). */
  readonly timeouts: number;
  /** Calls at least `slowCallMs` slow, whatever their outcome (0 without a slow-call rule). */
  readonly slowCalls: number;
  /** Calls refused without running (open, half-open with every probe taken, isolated). */
  readonly rejections: number;
  /**
   * Latency percentiles over the window's counted calls: with `trackLatency` only (on by itself
   * with `callTimeoutMs` or a slow-call rule), and `undefined` while the window holds no such call.
   * A count window covers its N calls; a time window the latest 1,024 calls of its span.
   */
  readonly latencyMs: LatencyPercentiles | undefined;
}

/** Percentiles of `latencies` (sorted in place), or `undefined` when there are none. */
export function percentiles(latencies: Float64Array): LatencyPercentiles | undefined {
  const n = latencies.length;
  if (n === 0) return undefined;
  latencies.sort();
  // Nearest rank: the smallest value with at least `percent` % of the values at or below it.
  // `percent * n` is an exact integer, so the division rounds up to the right rank.
  const rank = (percent: number) => latencies[Math.ceil((percent * n) / 100) - 1]!;
  return { p50: rank(50), p90: rank(90), p99: rank(99), max: latencies[n - 1]! };
}

/** How many latencies a time window keeps: its latest calls (memory does not grow with traffic). */
export const LATENCY_SAMPLE = 1_024;

/**
 * The latencies of a time window's latest {@link LATENCY_SAMPLE} calls, each with when it ended, in
 * a ring: recording overwrites the oldest; reading takes those that ended within the window.
 */
export class LatencySample {
  private readonly latencies = new Float64Array(LATENCY_SAMPLE);
  private readonly endedAt = new Float64Array(LATENCY_SAMPLE);
  private length = 0;
  private next = 0;

  /** Records the latency of a call that ended at `at`. */
  record(latencyMs: number, at: number): void {
    const slot = this.next;
    this.latencies[slot] = latencyMs;
    this.endedAt[slot] = at;
    this.next = slot + 1 === LATENCY_SAMPLE ? 0 : slot + 1;
    // Stryker disable next-line ConditionalExpression,EqualityOperator: (true, <=) a length past LATENCY_SAMPLE only makes since() read past the ends of the rings, where endedAt[i] is undefined and never >= start; (false) and (this.length >= LATENCY_SAMPLE) are killed by the latency tests
    if (this.length < LATENCY_SAMPLE) this.length++;
  }

  /** A copy of the latencies of calls that ended at or after `start`. */
  since(start: number): Float64Array {
    let count = 0;
    for (let i = 0; i < this.length; i++) if (this.endedAt[i]! >= start) count++;
    const out = new Float64Array(count);
    count = 0;
    // Stryker disable next-line EqualityOperator: (i <= this.length) the one place more can only write past the end of out, sized by the first pass, which a typed array ignores; (> start) is killed by the oldest-bucket test, (< start) and (i >= this.length) by every latency test
    for (let i = 0; i < this.length; i++) if (this.endedAt[i]! >= start) out[count++] = this.latencies[i]!;
    return out;
  }

  /** Forgets every call. */
  clear(): void {
    this.length = 0;
    this.next = 0;
  }
}
