/**
 * The time series of one build's run, for the charts of `lab-report.html`: counts per second of the
 * run (admitted, shed and rate-limited requests, processor calls), operation latencies by the
 * second they finished in, and the breaker's state changes. Each process of a run records its own;
 * {@link mergeSeries} adds them up.
 */
import type { Timeline } from './timeline.js';

/** What is counted per second. */
export type CountName = 'admitted' | 'shed' | 'rate-limited' | 'processor calls';

/** A state change of one breaker, `atMs` into the run. */
export interface StateMark {
  readonly atMs: number;
  /** Which breaker (one per worker process in a multi-worker run). */
  readonly source: string;
  readonly state: string;
}

/** The recorded series: plain data (it crosses process boundaries as JSON). */
export interface RunSeries {
  /** Seconds the run lasted (the length of every per-second array). */
  readonly seconds: number;
  readonly counts: Readonly<Record<CountName, readonly number[]>>;
  /** Latencies (ms) of the operations that finished in each second. */
  readonly latencies: readonly (readonly number[])[];
  readonly breaker: readonly StateMark[];
}

const countNames: readonly CountName[] = ['admitted', 'shed', 'rate-limited', 'processor calls'];

/** Records one process's series along a timeline. */
export class SeriesRecorder {
  readonly #timeline: Timeline;
  readonly #seconds: number;
  readonly #counts = new Map<CountName, number[]>();
  readonly #latencies: number[][];
  readonly #breaker: StateMark[] = [];

  /** A recorder whose seconds are those of `timeline` (one more for what finishes after it). */
  constructor(timeline: Timeline) {
    this.#timeline = timeline;
    this.#seconds = Math.ceil(timeline.durationMs / 1_000) + 1;
    for (const name of countNames) this.#counts.set(name, new Array<number>(this.#seconds).fill(0));
    this.#latencies = Array.from({ length: this.#seconds }, () => []);
  }

  #second(): number {
    return Math.min(this.#seconds - 1, Math.floor(this.#timeline.elapsedMs() / 1_000));
  }

  /** Counts one `name` now. */
  count(name: CountName): void {
    this.#counts.get(name)![this.#second()]!++;
  }

  /** Records an operation that finished now after `latencyMs`. */
  latency(latencyMs: number): void {
    this.#latencies[this.#second()]!.push(latencyMs);
  }

  /** Records that breaker `source` entered `state` now. */
  breakerState(source: string, state: string): void {
    this.#breaker.push({ atMs: this.#timeline.elapsedMs(), source, state });
  }

  /** What was recorded so far. */
  series(): RunSeries {
    return {
      seconds: this.#seconds,
      counts: Object.fromEntries(this.#counts) as Record<CountName, number[]>,
      latencies: this.#latencies,
      breaker: this.#breaker,
    };
  }
}

/**
 * Adds up the series of the processes of one run (counts and latencies per second; every breaker's
 * changes, in time order).
 *
 * @example
 * const series = mergeSeries([main.series(), ...workerSeries]);
 */
export function mergeSeries(parts: readonly RunSeries[]): RunSeries {
  const seconds = Math.max(0, ...parts.map((part) => part.seconds));
  const counts = Object.fromEntries(
    countNames.map((name) => [
      name,
      Array.from({ length: seconds }, (_, second) =>
        parts.reduce((sum, part) => sum + (part.counts[name][second] ?? 0), 0),
      ),
    ]),
  ) as Record<CountName, number[]>;
  const latencies = Array.from({ length: seconds }, (_, second) =>
    parts.flatMap((part) => part.latencies[second] ?? []),
  );
  const breaker = parts.flatMap((part) => part.breaker).sort((a, b) => a.atMs - b.atMs);
  return { seconds, counts, latencies, breaker };
}
