/** What the load generator saw: responses by class, operations, latencies. */
import type { SeriesRecorder } from '../series.js';

/** How one HTTP attempt ended, as the client saw it. */
export type AttemptResult = number | 'timeout' | 'aborted' | 'network';

/** The counts and latencies of one load run. */
export interface LoadStats {
  /** HTTP requests sent (every attempt of every operation). */
  readonly requests: number;
  readonly ok: number;
  /** 4xx answers other than 429. */
  readonly clientErrors: number;
  readonly tooManyRequests: number;
  readonly unavailable: number;
  /** 5xx answers other than 503. */
  readonly serverErrors: number;
  /** Attempts the client gave up waiting for, or aborted, or that failed on the wire. */
  readonly noAnswer: number;
  /** Logical operations (a payment, an order, a read, with its retries). */
  readonly operations: number;
  /** Operations that ended in a 2xx. */
  readonly succeeded: number;
  /** Latency of each finished operation, retries included, in ms. */
  readonly latenciesMs: readonly number[];
}

/** Collects the stats of a run as it goes. */
export class LoadRecorder {
  #requests = 0;
  #ok = 0;
  #clientErrors = 0;
  #tooMany = 0;
  #unavailable = 0;
  #serverErrors = 0;
  #noAnswer = 0;
  #operations = 0;
  #succeeded = 0;
  readonly #latencies: number[] = [];
  readonly #series: SeriesRecorder | undefined;

  /** A recorder that also records each operation's latency in `series`, when given. */
  constructor(series?: SeriesRecorder) {
    this.#series = series;
  }

  /** HTTP requests sent so far (for the progress bar's rate). */
  get requests(): number {
    return this.#requests;
  }

  /** Records one HTTP attempt. */
  attempt(result: AttemptResult): void {
    this.#requests++;
    if (typeof result !== 'number') this.#noAnswer++;
    else if (result < 400) this.#ok++;
    else if (result === 429) this.#tooMany++;
    else if (result === 503) this.#unavailable++;
    else if (result < 500) this.#clientErrors++;
    else this.#serverErrors++;
  }

  /** Records one finished logical operation. */
  operation(succeeded: boolean, latencyMs: number): void {
    this.#operations++;
    if (succeeded) this.#succeeded++;
    this.#latencies.push(latencyMs);
    this.#series?.latency(latencyMs);
  }

  /** The stats so far. */
  stats(): LoadStats {
    return {
      requests: this.#requests,
      ok: this.#ok,
      clientErrors: this.#clientErrors,
      tooManyRequests: this.#tooMany,
      unavailable: this.#unavailable,
      serverErrors: this.#serverErrors,
      noAnswer: this.#noAnswer,
      operations: this.#operations,
      succeeded: this.#succeeded,
      latenciesMs: this.#latencies,
    };
  }
}

/**
 * The `p`-quantile (0–1) of `values` by the nearest-rank method; `NaN` when there are none.
 *
 * @example
 * percentile([5, 1, 3], 0.5); // 3
 */
export function percentile(values: readonly number[], p: number): number {
  if (values.length === 0) return Number.NaN;
  const sorted = [...values].sort((a, b) => a - b);
  const rank = Math.min(sorted.length, Math.max(1, Math.ceil(p * sorted.length)));
  return sorted[rank - 1]!;
}
