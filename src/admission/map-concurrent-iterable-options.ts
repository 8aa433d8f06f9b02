/** The options of `mapConcurrentIterable`, with the declared schema that reads them. */
import {
  optional,
  positiveIntOrInfinity,
  type ReadOptions,
  readOptions,
  required,
  type Schema,
  signal,
} from '../core/read-options.js';
import { show } from '../core/validate.js';

/** Options of `mapConcurrentIterable`. */
export interface MapConcurrentIterableOptions {
  /**
   * The most `fn` calls in flight at once (a positive integer, or `Infinity`: finite sources only).
   * Required.
   */
  readonly concurrency: number;
  /**
   * The most items taken from `items` and not yet yielded: running, finished and waiting for the
   * consumer, or finished behind a slower item that comes first. When that many are out, nothing
   * more is taken until the consumer takes a result. An integer ≥ `concurrency`, or `Infinity`
   * (finite sources only). Same name, meaning and default as p-map's `pMapIterable`.
   * @default concurrency
   */
  readonly backpressure?: number | undefined;
  /** Cancels the iteration: nothing new starts, running calls see their signal abort. */
  readonly signal?: AbortSignal | undefined;
}

const mapConcurrentIterableSchema = {
  concurrency: required(positiveIntOrInfinity),
  backpressure: optional(positiveIntOrInfinity),
  signal: optional(signal),
} satisfies Schema<MapConcurrentIterableOptions>;

/**
 * Reads `mapConcurrentIterable` options, `backpressure` defaulted to `concurrency`; a `TypeError`
 * names the first bad one (also a `backpressure` below `concurrency`).
 */
export function readMapConcurrentIterableOptions(
  options: MapConcurrentIterableOptions,
): ReadOptions<typeof mapConcurrentIterableSchema> & { readonly backpressure: number } {
  const read = readOptions('mapConcurrentIterable options', options, mapConcurrentIterableSchema);
  const backpressure = read.backpressure ?? read.concurrency;
  if (backpressure < read.concurrency) {
    throw new TypeError(
      `expected "backpressure" to be at least "concurrency" (${read.concurrency}), got ${show(backpressure)}`,
    );
  }
  return { ...read, backpressure };
}
