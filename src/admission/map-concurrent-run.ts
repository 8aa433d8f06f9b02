/**
 * The run under `mapConcurrent` and `mapConcurrentIterable`: up to `concurrency` workers take items
 * from the source and call `fn`; each outcome goes to the subclass (collect it, or buffer it for a
 * consumer). A failure, a caller abort or a source error stops the run: nothing new is taken, the
 * shared signal aborts, and once the running calls have settled the source is closed and the
 * subclass told, once. A subclass may also bound how far the run gets ahead of it ({@link full}).
 */
import { offAbort, onAbort } from '../core/abort.js';
import { LazySignal } from '../core/lazy-signal.js';
import { isThenable } from '../core/policy.js';
import type { MapContext, MapFn } from './map-concurrent.js';

/** The source's end, as an iterator result (shared: never mutated). */
export const DONE: IteratorReturnResult<undefined> = Object.freeze({ done: true, value: undefined });
const ignore = (): void => {};

/** One concurrent map over one source. */
export abstract class MapRun<T> {
  /** The next index to hand out: how many items were taken from the source. */
  protected index = 0;
  /** Pulls from an async source asked for and not yet answered (items being taken). */
  protected pulling = 0;
  /** Stopped (by a failure, an abort, a source error or the subclass): nothing new starts. */
  protected stopped = false;
  /** Why it stopped (the first reason wins). */
  protected error: unknown = undefined;
  /** `fn` calls in flight. */
  private running = 0;
  /** Live workers (each holds at most one pulled item or one pending pull, or waits for room). */
  private workers = 0;
  /** Workers waiting for the subclass to make room, oldest first. */
  private parked: (() => void)[] = [];
  private sourceDone = false;
  /** The source threw: it must not be closed. */
  private sourceBroken = false;
  private pullTail: Promise<unknown> = Promise.resolve();
  private finished = false;
  private iterator: Iterator<T> | AsyncIterator<T> | undefined = undefined;
  private readonly shared = new LazySignal();
  /** The third argument of every `fn` call: one object per map, its signal made on first read. */
  private readonly context: MapContext;

  constructor(
    private readonly fn: MapFn<T, unknown>,
    private readonly concurrency: number,
    protected readonly callerSignal: AbortSignal | undefined,
  ) {
    const shared = this.shared;
    this.context = Object.freeze({
      get signal(): AbortSignal {
        return shared.signal;
      },
    });
  }

  /** `fn` resolved for the item at `index` (possibly with `mapSkip`). */
  protected abstract fulfilled(index: number, value: unknown): void;
  /** `fn` failed for the item at `index`. */
  protected abstract rejected(index: number, error: unknown): void;
  /**
   * The run is over: nothing it started is running and the source is closed. `stopped` and `error`
   * say how it ended; `closeFailure` holds what closing a stopped source threw, if it did.
   */
  protected abstract ended(closeFailure: { readonly error: unknown } | undefined): void;

  /** True while no more items may be taken (the subclass calls {@link wake} when that changes). */
  protected full(): boolean {
    return false;
  }

  /** The caller's signal aborted. (An {@link onAbort} listener object: no closure per map.) */
  handleEvent(): void {
    // Stryker disable next-line OptionalChaining: this listener is subscribed only on a caller signal, so it is defined here
    this.stop(this.callerSignal?.reason);
  }

  /** Starts the workers on `items` (checked with `checkItems`). */
  start(items: Iterable<T> | AsyncIterable<T>): void {
    const source = items as Partial<Iterable<T> & AsyncIterable<T>>;
    // Stryker disable next-line ConditionalExpression: (false) the iterator path maps an array's items in the same order at the same moments (only an array whose Symbol.iterator was replaced could tell); (true) is killed
    if (Array.isArray(items)) this.startArray(items as T[]);
    else if (typeof source[Symbol.asyncIterator] === 'function') {
      this.iterator = source[Symbol.asyncIterator]!();
      this.listen();
      // More workers are spawned as items arrive, so an async source is never asked for more than
      // it has delivered plus one.
      this.workers++;
      void this.asyncWorker(this.iterator);
    } else {
      const iterator = source[Symbol.iterator]!();
      this.iterator = iterator;
      this.listen();
      // Each worker pulls its first item synchronously, so the loop sees the end of a short source.
      while (this.workers < this.concurrency && !this.sourceDone && !this.stopped) {
        this.workers++;
        void this.iteratorWorker(iterator);
      }
    }
  }

  private startArray(items: ArrayLike<T>): void {
    this.listen();
    const workers = Math.min(this.concurrency, items.length);
    if (workers === 0) this.finish();
    for (let i = 0; i < workers && !this.stopped; i++) {
      this.workers++;
      void this.arrayWorker(items);
    }
  }

  /** One subscription per map, through the signal's shared fan-out (its one real listener). */
  private listen(): void {
    if (this.callerSignal !== undefined) onAbort(this.callerSignal, this);
  }

  private async arrayWorker(items: ArrayLike<T>): Promise<void> {
    const fn = this.fn;
    const context = this.context;
    while (!this.stopped) {
      const index = this.index;
      if (index >= items.length) break;
      if (this.full()) {
        await this.park();
        continue;
      }
      this.index = index + 1;
      this.running++;
      try {
        this.fulfilled(index, await fn(items[index] as T, index, context));
      } catch (error) {
        this.rejected(index, error);
      }
      this.running--;
    }
    this.workerDone();
  }

  private async iteratorWorker(iterator: Iterator<T>): Promise<void> {
    const fn = this.fn;
    const context = this.context;
    while (!this.stopped && !this.sourceDone) {
      if (this.full()) {
        await this.park();
        continue;
      }
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
        this.fulfilled(index, await fn(item, index, context));
      } catch (error) {
        this.rejected(index, error);
      }
      this.running--;
    }
    this.workerDone();
  }

  private async asyncWorker(iterator: AsyncIterator<T>): Promise<void> {
    const fn = this.fn;
    const context = this.context;
    while (!this.stopped && !this.sourceDone) {
      if (this.full()) {
        await this.park();
        continue;
      }
      let result: IteratorResult<T>;
      this.pulling++;
      try {
        result = await this.pull(iterator);
      } catch (error) {
        this.sourceFailed(error);
        break;
      } finally {
        this.pulling--;
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
        this.fulfilled(index, await fn(result.value, index, context));
      } catch (error) {
        this.rejected(index, error);
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

  /** Waits until {@link wake} (or the run stops, or a worker leaves because the source ended). */
  private park(): Promise<void> {
    return new Promise((resolve) => this.parked.push(resolve));
  }

  /** Lets the longest-waiting worker look again: the subclass made room for one more item. */
  protected wake(): void {
    this.parked.shift()?.();
  }

  private wakeAll(): void {
    for (const resume of this.parked.splice(0)) resume();
  }

  private sourceFailed(error: unknown): void {
    this.sourceBroken = true;
    this.stop(error);
  }

  /** Stops taking items; the first reason wins. Running calls see the shared signal abort. */
  protected stop(error: unknown): void {
    if (this.stopped || this.finished) return;
    this.stopped = true;
    this.error = error;
    this.shared.abort(error);
    this.wakeAll();
    this.check();
  }

  /** A worker leaves only when nothing is left to take (or the run stopped): so may the parked. */
  private workerDone(): void {
    this.workers--;
    this.wakeAll();
    this.check();
  }

  /** Ends the run once nothing it started is still running. */
  private check(): void {
    if (this.finished) return;
    if (this.stopped ? this.running === 0 : this.workers === 0) this.finish();
  }

  private finish(): void {
    this.finished = true;
    // Stryker disable next-line ConditionalExpression: (true) offAbort on undefined finds no subscription and does nothing; (false) is killed
    if (this.callerSignal !== undefined) offAbort(this.callerSignal, this);
    const iterator = this.iterator;
    if (!this.stopped || iterator === undefined || this.sourceDone || this.sourceBroken) {
      this.ended(undefined);
      return;
    }
    // Close the source like a `for ... of` that breaks, so its `finally` blocks run, and end only
    // once it is closed: the close is work the run started. A failure to close is reported beside
    // the error that stopped the run (see `withCloseError`), never dropped.
    let closing: unknown;
    try {
      if (typeof iterator.return !== 'function') {
        this.ended(undefined);
        return;
      }
      closing = iterator.return();
    } catch (closeError) {
      this.ended({ error: closeError });
      return;
    }
    // Stryker disable next-line ConditionalExpression,BlockStatement: (false, {}) Promise.resolve of a non-thenable close result ends the run the same way, only a microtask later; (true) is killed
    if (!isThenable(closing)) {
      this.ended(undefined);
      return;
    }
    Promise.resolve(closing).then(
      () => this.ended(undefined),
      (closeError: unknown) => this.ended({ error: closeError }),
    );
  }
}
