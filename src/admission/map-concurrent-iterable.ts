import { isFunction } from '../core/validate.js';
import { checkItems, type MapFn, mapSkip, withCloseError } from './map-concurrent.js';
import {
  type MapConcurrentIterableOptions,
  readMapConcurrentIterableOptions,
} from './map-concurrent-iterable-options.js';
import { DONE, MapRun } from './map-concurrent-run.js';

/** A `next()` (or `return()`) call waiting for its answer. */
interface Waiter {
  readonly resolve: (result: IteratorResult<unknown>) => void;
  readonly reject: (error: unknown) => void;
}

/**
 * One mapConcurrentIterable iteration: the run, its results buffered by index until the consumer
 * takes them in input order, and the async iterator the consumer drives.
 */
class StreamRun<T> extends MapRun<T> implements AsyncIterableIterator<unknown> {
  /** Results not yet taken, by index (with the running items, at most `backpressure`). */
  private readonly ready = new Map<number, unknown>();
  /** The index the consumer gets next: every item before it was yielded or skipped. */
  private consumed = 0;
  /** `next()` calls waiting for a result, oldest first. */
  private readonly waiting: Waiter[] = [];
  /** The first `next()` or `return()` came: the run started (or never will). */
  private begun = false;
  /** The consumer was told the end: done, the error, or its own `return()`. */
  private over = false;
  /** The run ended: nothing it started is still running, and a stopped source is closed. */
  private settled = false;
  /** What the next `next()` rejects with once a stopped run has ended. */
  private failure: unknown = undefined;
  /** The consumer's `return()`, answered once the run has ended. */
  private returning: Waiter | undefined = undefined;
  private returned: Promise<IteratorResult<unknown>> | undefined = undefined;

  constructor(
    private readonly items: Iterable<T> | AsyncIterable<T>,
    fn: MapFn<T, unknown>,
    concurrency: number,
    private readonly backpressure: number,
    signal: AbortSignal | undefined,
  ) {
    super(fn, concurrency, signal);
  }

  [Symbol.asyncIterator](): this {
    return this;
  }

  next(): Promise<IteratorResult<unknown>> {
    if (!this.begun) {
      this.begun = true;
      try {
        this.callerSignal?.throwIfAborted();
        this.start(this.items);
      } catch (error) {
        this.over = true;
        return Promise.reject(error);
      }
    } else if (!this.over && !this.stopped && this.callerSignal?.aborted) {
      // All work was done before the caller aborted (the run no longer listened): the abort still
      // ends the iteration, whatever results the consumer had not taken yet.
      this.over = true;
      this.ready.clear();
      return Promise.reject(this.callerSignal.reason);
    }
    return new Promise((resolve, reject) => {
      this.waiting.push({ resolve, reject });
      this.deliver();
    });
  }

  return(): Promise<IteratorResult<unknown>> {
    this.over = true;
    this.ready.clear();
    this.deliver();
    if (!this.begun || this.settled) {
      this.begun = true;
      return Promise.resolve(DONE);
    }
    this.returned ??= new Promise((resolve, reject) => {
      this.returning = { resolve, reject };
      if (!this.stopped) {
        this.stop(new DOMException('the consumer stopped iterating (return() was called)', 'AbortError'));
      }
    });
    return this.returned;
  }

  protected fulfilled(index: number, value: unknown): void {
    // A stopped run yields nothing more: the iteration ends with what stopped it.
    if (this.stopped) return;
    this.ready.set(index, value);
    if (index === this.consumed) this.deliver();
  }

  protected rejected(_index: number, error: unknown): void {
    this.stop(error);
  }

  protected override full(): boolean {
    return this.index + this.pulling - this.consumed >= this.backpressure;
  }

  protected ended(closeFailure: { readonly error: unknown } | undefined): void {
    this.settled = true;
    if (this.stopped) {
      this.ready.clear();
      this.failure =
        closeFailure === undefined
          ? this.error
          : withCloseError('mapConcurrentIterable', this.error, closeFailure.error);
    }
    if (closeFailure === undefined) this.returning?.resolve(DONE);
    else this.returning?.reject(closeFailure.error);
    this.deliver();
  }

  /** Answers the waiting `next()` calls, oldest first, as far as the results allow. */
  private deliver(): void {
    while (this.waiting.length > 0) {
      if (this.over) this.waiting.shift()!.resolve(DONE);
      else if (this.stopped) {
        // Told only once the running calls have settled and the source is closed.
        if (!this.settled) return;
        this.over = true;
        this.waiting.shift()!.reject(this.failure);
      } else if (this.ready.has(this.consumed)) {
        const value = this.ready.get(this.consumed);
        this.ready.delete(this.consumed++);
        this.wake();
        if (value !== mapSkip) this.waiting.shift()!.resolve({ done: false, value });
      } else if (this.settled) this.over = true;
      else return;
    }
  }
}

/**
 * Like `mapConcurrent`, but streams the results: an async iterator that yields
 * `fn(item, index, { signal })` for each item **in input order**, as soon as that result and every
 * one before it are in, with at most `concurrency` calls in flight. p-map's `pMapIterable`, with
 * cancellation.
 *
 * - **Lazy, with backpressure**: nothing is taken from `items` before the first `next()`. After
 *   that the run works ahead of the consumer, but never holds more than `backpressure` items
 *   (default `concurrency`) taken and not yet yielded, running or done; a slow consumer or a slow
 *   item at the head pauses it. `items` may be any iterable or async iterable, infinite ones too.
 *   Async sources see one `next()` at a time.
 * - **Skipping**: an item whose `fn` returns {@link mapSkip} is not yielded.
 * - **Fail fast**: the first `fn` to fail (first in time, not by index) stops the run: nothing new
 *   is taken, the shared `signal` aborts with that error, results not yet yielded are dropped, and
 *   once the running calls have settled and the source is closed the pending (or next) `next()`
 *   rejects with that error. A source that throws ends it the same way (and is not closed).
 * - **Caller abort** (`signal`): the same, with `signal.reason`; also after all work is done, for
 *   results not yet taken. An already-aborted signal rejects the first `next()` without touching
 *   `items`.
 * - **Stopping early** (`break` in `for await`, or `return()`): nothing more is taken, the shared
 *   signal aborts (an `AbortError`), the source is closed; `return()` resolves once the running
 *   calls have settled and the close is done, and leaves no listener behind. Call it (or iterate
 *   to the end): an iteration abandoned half-way keeps its buffered results and caller-signal
 *   subscription.
 * - **Closing the source**: as in `mapConcurrent`; a failed close is attached to the error that
 *   stopped the run (`AggregateError([error, closeError])`), or rejects `return()` by itself.
 *
 * The iterator is its own iterable (one pass, like a generator's: done once a loop over it ended).
 * Throws a `TypeError` at once (nothing taken) when `items` is not iterable, `fn` is not a
 * function, or an option is invalid (`backpressure` below `concurrency` included).
 *
 * @example
 * for await (const page of mapConcurrentIterable(urls, (url, _i, { signal }) => fetch(url, { signal }), {
 *   concurrency: 8,
 *   signal: AbortSignal.timeout(30_000),
 * })) {
 *   if (await handle(page)) break; // aborts the fetches still running
 * }
 */
export function mapConcurrentIterable<T, R>(
  items: Iterable<T> | AsyncIterable<T>,
  fn: MapFn<T, R>,
  options: MapConcurrentIterableOptions,
): AsyncIterableIterator<Exclude<R, typeof mapSkip>> {
  const { concurrency, backpressure, signal } = readMapConcurrentIterableOptions(options);
  isFunction('fn', fn);
  checkItems(items);
  return new StreamRun(items, fn, concurrency, backpressure, signal) as AsyncIterableIterator<
    Exclude<R, typeof mapSkip>
  >;
}
