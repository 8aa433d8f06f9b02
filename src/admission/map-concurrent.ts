import { isFunction, show } from '../core/validate.js';
import { MapRun } from './map-concurrent-run.js';
import { type MapConcurrentOptions, readMapConcurrentOptions } from './options.js';

/** What `fn` is told about the map it runs in. */
export interface MapContext {
  /**
   * Shared by every call of one map. Aborts when the caller's signal aborts (with its reason), when
   * a sibling fails and the map fails fast (with that sibling's error as the reason), or when the
   * consumer of `mapConcurrentIterable` stops early. Created only if read.
   */
  readonly signal: AbortSignal;
}

/**
 * The function `mapConcurrent` and `mapConcurrentIterable` apply to each item. Returning
 * {@link mapSkip} leaves the item out of the results.
 */
export type MapFn<T, R> = (item: T, index: number, context: MapContext) => R | PromiseLike<R>;

/**
 * Returned (or resolved) by a map's `fn`, leaves that item out of the results: `mapConcurrent`
 * resolves with a shorter array (the rest in input order), `mapConcurrentIterable` does not yield
 * it. Indexes passed to `fn` still count every item. The same symbol in every copy of bulwark
 * (`Symbol.for('bulwark.mapSkip')`), like p-map's `pMapSkip`.
 *
 * @example
 * const pages = await mapConcurrent(urls, async (url, _i, { signal }) => {
 *   const response = await fetch(url, { signal });
 *   return response.status === 404 ? mapSkip : response.text();
 * }, { concurrency: 4 });
 */
export const mapSkip: unique symbol = Symbol.for('bulwark.mapSkip');

/** Refuses with a `TypeError` anything that is neither an iterable nor an async iterable. */
export function checkItems(items: unknown): void {
  if (Array.isArray(items)) return;
  const source = items as Partial<Iterable<unknown> & AsyncIterable<unknown>> | null;
  if (
    source === null ||
    (typeof source !== 'object' && typeof source !== 'string') ||
    (typeof source[Symbol.iterator] !== 'function' && typeof source[Symbol.asyncIterator] !== 'function')
  ) {
    throw new TypeError(`expected "items" to be an iterable or async iterable, got ${show(items)}`);
  }
}

/**
 * A map's rejection when closing its source failed too: an `AggregateError` of both, the error that
 * stopped the map first (`errors[0]`) and the close failure second (`errors[1]`).
 */
export function withCloseError(name: string, error: unknown, closeError: unknown): AggregateError {
  return new AggregateError(
    [error, closeError],
    `${name} stopped on errors[0], and closing its source failed too (errors[1])`,
  );
}

/** One mapConcurrent call: collects every outcome by index, and settles the promise at the end. */
class CollectRun<T> extends MapRun<T> {
  readonly results: unknown[];
  /** How many results are {@link mapSkip} (removed at the end). */
  private skipped = 0;
  private resolve!: (results: unknown[]) => void;
  private reject!: (error: unknown) => void;
  readonly promise: Promise<unknown[]>;

  constructor(
    fn: MapFn<T, unknown>,
    concurrency: number,
    private readonly settleAll: boolean,
    signal: AbortSignal | undefined,
    size: number,
  ) {
    super(fn, concurrency, signal);
    // Stryker disable next-line ConditionalExpression,EqualityOperator,ArrayDeclaration: only preallocates; every result is written by index before the map resolves
    this.results = size > 0 ? new Array(size) : [];
    this.promise = new Promise<unknown[]>((resolve, reject) => {
      this.resolve = resolve;
      this.reject = reject;
    });
  }

  protected fulfilled(index: number, value: unknown): void {
    if (value === mapSkip) {
      this.skipped++;
      this.results[index] = mapSkip;
    } else this.results[index] = this.settleAll ? { status: 'fulfilled', value } : value;
  }

  protected rejected(index: number, error: unknown): void {
    if (this.settleAll) this.results[index] = { status: 'rejected', reason: error };
    else this.stop(error);
  }

  protected ended(closeFailure: { readonly error: unknown } | undefined): void {
    if (this.stopped) {
      this.reject(
        closeFailure === undefined
          ? this.error
          : withCloseError('mapConcurrent', this.error, closeFailure.error),
      );
    } else if (this.skipped === 0) this.resolve(this.results);
    else this.resolve(this.results.filter((result) => result !== mapSkip));
  }
}

/**
 * Applies `fn(item, index, { signal })` to every item with at most `concurrency` calls in flight,
 * and resolves with the results **in input order** (not completion order).
 *
 * - **Sources**: arrays, any iterable (generators, Sets, Maps...) and async iterables (async
 *   generators, Node streams). Items are pulled lazily: never more than `concurrency` items
 *   are pulled ahead of their results (backpressure), so an infinite generator is fine as
 *   long as something stops the map. Async sources see one `next()` at a time.
 * - **Fail fast** (default): the first `fn` to fail (the first in time, not by index) stops the
 *   map: nothing new is pulled or started, the shared `signal` aborts with that error as its
 *   reason, and the map waits for the running calls to settle (no orphaned work) before
 *   rejecting with that first error. Later errors are ignored.
 * - **`settle: true`**: every item runs; resolves with `{ status: 'fulfilled', value }` or
 *   `{ status: 'rejected', reason }` per item (the `PromiseSettledResult` shape).
 * - **Skipping**: an item whose `fn` returns (or resolves with) {@link mapSkip} is left out of the
 *   results (in both modes): the array is shorter, the rest keep their input order.
 * - **Caller abort** (`signal`): stops launching, aborts the shared signal with the caller's
 *   reason, waits for running calls, then rejects with `signal.reason` (whatever they returned).
 *   An already-aborted signal rejects at once without touching `items`.
 *   Any number of maps may share one signal: it carries a single `abort` listener between them.
 * - **Source errors**: if the iterator throws, the map stops as on a failure and rejects with that
 *   error (in both modes).
 * - **Closing the source**: a source stopped early is closed (`iterator.return()`), so generator
 *   `finally` blocks run, and the map settles only once the close has, even with a pull still
 *   pending (an async generator or Node stream closes only after its pending `next()` settles:
 *   make such a source abortable). If closing fails, the map rejects with an `AggregateError` whose
 *   `errors` are `[firstError, closeError]`; otherwise with the first error itself. Every promise
 *   the map creates is handled: nothing it does is an unhandled rejection.
 *
 * Rejects with a `TypeError` (nothing pulled, nothing run) when `items` is not iterable, `fn` is
 * not a function, or an option is invalid (`concurrency` must be a positive integer or Infinity,
 * `signal` an `AbortSignal`).
 *
 * @example
 * const prices = await mapConcurrent(skus, (sku, _i, { signal }) => fetchPrice(sku, { signal }), {
 *   concurrency: 8,
 *   signal: AbortSignal.timeout(5_000),
 * });
 *
 * @example
 * // Stream rows without loading them all: at most 16 in memory at once.
 * const outcomes = await mapConcurrent(db.cursor('SELECT ...'), sendEmail, { concurrency: 16, settle: true });
 * const failed = outcomes.filter((o) => o.status === 'rejected');
 */
export function mapConcurrent<T, R>(
  items: Iterable<T> | AsyncIterable<T>,
  fn: MapFn<T, R>,
  options: MapConcurrentOptions & { readonly settle: true },
): Promise<PromiseSettledResult<Exclude<R, typeof mapSkip>>[]>;
export function mapConcurrent<T, R>(
  items: Iterable<T> | AsyncIterable<T>,
  fn: MapFn<T, R>,
  options: MapConcurrentOptions & { readonly settle?: false | undefined },
): Promise<Exclude<R, typeof mapSkip>[]>;
export function mapConcurrent<T, R>(
  items: Iterable<T> | AsyncIterable<T>,
  fn: MapFn<T, R>,
  options: MapConcurrentOptions,
): Promise<Exclude<R, typeof mapSkip>[] | PromiseSettledResult<Exclude<R, typeof mapSkip>>[]>;
export function mapConcurrent<T, R>(
  items: Iterable<T> | AsyncIterable<T>,
  fn: MapFn<T, R>,
  options: MapConcurrentOptions,
): Promise<unknown[]> {
  let run: CollectRun<T>;
  try {
    const { concurrency, signal, settle } = readMapConcurrentOptions(options);
    isFunction('fn', fn);
    checkItems(items);
    if (signal?.aborted) return Promise.reject(signal.reason);
    run = new CollectRun(fn, concurrency, settle, signal, Array.isArray(items) ? items.length : 0);
    run.start(items);
  } catch (error) {
    return Promise.reject(error);
  }
  return run.promise;
}
