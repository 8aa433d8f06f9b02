import { offAbort, onAbort } from '../core/abort.js';
import { isThenable } from '../core/policy.js';
import { isFunction, show } from '../core/validate.js';
import { type MapConcurrentOptions, readMapConcurrentOptions } from './options.js';

/** What `fn` is told about the map it runs in. */
export interface MapContext {
  /**
   * Shared by every call of one map. Aborts when the caller's signal aborts (with its reason) or,
   * failing fast, when a sibling fails (with that sibling's error as the reason). Created only if
   * read.
   */
  readonly signal: AbortSignal;
}

/** The function {@link mapConcurrent} applies to each item. */
export type MapFn<T, R> = (item: T, index: number, context: MapContext) => R | PromiseLike<R>;

const DONE: IteratorReturnResult<undefined> = Object.freeze({ done: true, value: undefined });
const ignore = (): void => {};

/** The state of one mapConcurrent call. */
class MapRun<T, R> {
  readonly results: unknown[];
  /** `fn` calls in flight. */
  private running = 0;
  /** Live workers (each holds at most one pulled item or one pending pull). */
  private workers = 0;
  /** The next index to hand out. */
  private index = 0;
  private sourceDone = false;
  /** The source threw: it must not be closed. */
  private sourceBroken = false;
  private pullTail: Promise<unknown> = Promise.resolve();
  private stopped = false;
  private error: unknown = undefined;
  private finished = false;
  private controller: AbortController | undefined = undefined;
  private iterator: Iterator<T> | AsyncIterator<T> | undefined = undefined;
  private resolve!: (results: unknown[]) => void;
  private reject!: (error: unknown) => void;
  readonly promise: Promise<unknown[]>;
  /** The third argument of every `fn` call: one object per map, its signal made on first read. */
  private readonly context: MapContext;

  constructor(
    private readonly fn: MapFn<T, R>,
    private readonly concurrency: number,
    private readonly settleAll: boolean,
    private readonly callerSignal: AbortSignal | undefined,
    size: number,
  ) {
    // Stryker disable next-line ConditionalExpression,EqualityOperator,ArrayDeclaration: only preallocates; every result is written by index before the map resolves
    this.results = size > 0 ? new Array(size) : [];
    this.promise = new Promise<unknown[]>((resolve, reject) => {
      this.resolve = resolve;
      this.reject = reject;
    });
    const run = this;
    this.context = Object.freeze({
      get signal(): AbortSignal {
        return run.signal();
      },
    });
  }

  private signal(): AbortSignal {
    if (this.controller === undefined) {
      this.controller = new AbortController();
      if (this.stopped) this.controller.abort(this.error);
    }
    return this.controller.signal;
  }

  /** The caller's signal aborted. (An {@link onAbort} listener object: no closure per map.) */
  handleEvent(): void {
    // Stryker disable next-line OptionalChaining: this listener is subscribed only on a caller signal, so it is defined here
    this.stop(this.callerSignal?.reason);
  }

  startArray(items: ArrayLike<T>): void {
    this.listen();
    const workers = Math.min(this.concurrency, items.length);
    if (workers === 0) {
      this.finish();
      return;
    }
    for (let i = 0; i < workers && !this.stopped; i++) {
      this.workers++;
      void this.arrayWorker(items);
    }
  }

  startIterator(iterator: Iterator<T>): void {
    this.iterator = iterator;
    this.listen();
    // Each worker pulls its first item synchronously, so the loop sees the end of a short source.
    while (this.workers < this.concurrency && !this.sourceDone && !this.stopped) {
      this.workers++;
      void this.iteratorWorker(iterator);
    }
  }

  startAsyncIterator(iterator: AsyncIterator<T>): void {
    this.iterator = iterator;
    this.listen();
    // More workers are spawned as items arrive, so an async source is never asked for more than
    // it has delivered plus one.
    this.workers++;
    void this.asyncWorker(iterator);
  }

  /** One subscription per map, through the signal's shared fan-out (its one real listener). */
  private listen(): void {
    if (this.callerSignal !== undefined) onAbort(this.callerSignal, this);
  }

  private async arrayWorker(items: ArrayLike<T>): Promise<void> {
    const fn = this.fn;
    const context = this.context;
    const results = this.results;
    while (!this.stopped) {
      const index = this.index;
      if (index >= items.length) break;
      this.index = index + 1;
      this.running++;
      try {
        const value = await fn(items[index] as T, index, context);
        results[index] = this.settleAll ? { status: 'fulfilled', value } : value;
      } catch (error) {
        this.failed(index, error);
      }
      this.running--;
    }
    this.workerDone();
  }

  private async iteratorWorker(iterator: Iterator<T>): Promise<void> {
    const fn = this.fn;
    const context = this.context;
    const results = this.results;
    while (!this.stopped && !this.sourceDone) {
      let item: T;
      try {
        const result = iterator.next();
        if (result.done) {
          this.sourceDone = true;
          break;
        }
        item = result.value;
      } catch (error) {
        this.sourceFailed(error);
        break;
      }
      const index = this.index++;
      this.running++;
      try {
        const value = await fn(item, index, context);
        results[index] = this.settleAll ? { status: 'fulfilled', value } : value;
      } catch (error) {
        this.failed(index, error);
      }
      this.running--;
    }
    this.workerDone();
  }

  private async asyncWorker(iterator: AsyncIterator<T>): Promise<void> {
    const fn = this.fn;
    const context = this.context;
    const results = this.results;
    while (!this.stopped && !this.sourceDone) {
      let result: IteratorResult<T>;
      try {
        result = await this.pull(iterator);
      } catch (error) {
        this.sourceFailed(error);
        break;
      }
      // Stopped while waiting: the item (if any) is dropped, never started.
      if (this.stopped || result.done) break;
      if (this.workers < this.concurrency && !this.sourceDone) {
        this.workers++;
        void this.asyncWorker(iterator);
      }
      const index = this.index++;
      this.running++;
      try {
        const value = await fn(result.value, index, context);
        results[index] = this.settleAll ? { status: 'fulfilled', value } : value;
      } catch (error) {
        this.failed(index, error);
      }
      this.running--;
    }
    this.workerDone();
  }

  /** One `next()` at a time: async iterators need not support overlapping calls. */
  private pull(iterator: AsyncIterator<T>): Promise<IteratorResult<T>> {
    const pulled = this.pullTail.then(async (): Promise<IteratorResult<T>> => {
      if (this.sourceDone || this.stopped) return DONE;
      const result = await iterator.next();
      // Marked here, before the next queued pull runs, so nothing calls next() after the end.
      if (result.done) this.sourceDone = true;
      return result;
    });
    this.pullTail = pulled.then(ignore, ignore);
    return pulled;
  }

  private failed(index: number, error: unknown): void {
    if (this.settleAll) this.results[index] = { status: 'rejected', reason: error };
    else this.stop(error);
  }

  private sourceFailed(error: unknown): void {
    this.sourceBroken = true;
    this.stop(error);
  }

  /** Stops launching; the first reason wins. Running calls see the shared signal abort. */
  private stop(error: unknown): void {
    if (this.stopped || this.finished) return;
    this.stopped = true;
    this.error = error;
    this.controller?.abort(error);
    this.check();
  }

  private workerDone(): void {
    this.workers--;
    this.check();
  }

  /** Settles the map once nothing it started is still running. */
  private check(): void {
    if (this.finished) return;
    if (this.stopped ? this.running === 0 : this.workers === 0) this.finish();
  }

  private finish(): void {
    this.finished = true;
    // Stryker disable next-line ConditionalExpression: (true) offAbort on undefined finds no subscription and does nothing; (false) is killed
    if (this.callerSignal !== undefined) offAbort(this.callerSignal, this);
    if (!this.stopped) {
      this.resolve(this.results);
      return;
    }
    const error = this.error;
    const iterator = this.iterator;
    if (iterator === undefined || this.sourceDone || this.sourceBroken) {
      this.reject(error);
      return;
    }
    // Close the source like a `for ... of` that breaks, so its `finally` blocks run, and settle only
    // once it is closed: the close is work the map started. A failure to close never replaces the
    // error that stopped the map; it is attached (see `withCloseError`), never dropped.
    let closing: unknown;
    try {
      if (typeof iterator.return !== 'function') {
        this.reject(error);
        return;
      }
      closing = iterator.return();
    } catch (closeError) {
      this.reject(withCloseError(error, closeError));
      return;
    }
    // Stryker disable next-line ConditionalExpression,BlockStatement: (false, {}) Promise.resolve of a non-thenable close result rejects with the same error, only a microtask later; (true) is killed
    if (!isThenable(closing)) {
      this.reject(error);
      return;
    }
    Promise.resolve(closing).then(
      () => this.reject(error),
      (closeError: unknown) => this.reject(withCloseError(error, closeError)),
    );
  }
}

/**
 * The map's rejection when closing its source failed too: an `AggregateError` of both, the error
 * that stopped the map first (`errors[0]`) and the close failure second (`errors[1]`).
 */
function withCloseError(error: unknown, closeError: unknown): AggregateError {
  return new AggregateError(
    [error, closeError],
    'mapConcurrent stopped on errors[0], and closing its source failed too (errors[1])',
  );
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
): Promise<PromiseSettledResult<R>[]>;
export function mapConcurrent<T, R>(
  items: Iterable<T> | AsyncIterable<T>,
  fn: MapFn<T, R>,
  options: MapConcurrentOptions & { readonly settle?: false | undefined },
): Promise<R[]>;
export function mapConcurrent<T, R>(
  items: Iterable<T> | AsyncIterable<T>,
  fn: MapFn<T, R>,
  options: MapConcurrentOptions,
): Promise<R[] | PromiseSettledResult<R>[]>;
export function mapConcurrent<T, R>(
  items: Iterable<T> | AsyncIterable<T>,
  fn: MapFn<T, R>,
  options: MapConcurrentOptions,
): Promise<unknown[]> {
  let run: MapRun<T, R>;
  let signal: AbortSignal | undefined;
  try {
    const o = readMapConcurrentOptions(options);
    isFunction('fn', fn);
    signal = o.signal;
    const source = items as Partial<Iterable<T> & AsyncIterable<T>> | null;
    const array = Array.isArray(items);
    if (
      !array &&
      (source === null ||
        (typeof source !== 'object' && typeof source !== 'string') ||
        (typeof source[Symbol.iterator] !== 'function' && typeof source[Symbol.asyncIterator] !== 'function'))
    ) {
      throw new TypeError(`expected "items" to be an iterable or async iterable, got ${show(items)}`);
    }
    if (signal?.aborted) return Promise.reject(signal.reason);
    run = new MapRun(fn, o.concurrency, o.settle, signal, array ? (items as T[]).length : 0);
    // Stryker disable next-line ConditionalExpression: (false) the iterator path maps an array's items in the same order at the same moments (only an array whose Symbol.iterator was replaced could tell); (true) is killed
    if (array) run.startArray(items as T[]);
    else if (typeof source![Symbol.asyncIterator] === 'function') {
      run.startAsyncIterator(source![Symbol.asyncIterator]!());
    } else run.startIterator(source![Symbol.iterator]!());
  } catch (error) {
    return Promise.reject(error);
  }
  return run.promise;
}
