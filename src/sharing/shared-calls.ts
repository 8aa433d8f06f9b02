/**
 * The calls in flight of a `Coalescer` or a `dedup`, by key: the first caller of a key starts
 * the call, later callers join it, and every caller gets its outcome. They differ only in what a
 * caller's abort does (see {@link WaiterAbort}).
 */
import { offAbort, onAbort } from '../core/abort.js';
import { LazySignal } from '../core/lazy-signal.js';
import { show } from '../core/validate.js';

/**
 * What a caller's abort does. By default (`Coalescer`) that caller rejects at once with its
 * reason and leaves, and the call's signal aborts when the last caller has left, unless
 * `keepRunning`. With `cancelAll` (`dedup`) the call's signal aborts and every caller rejects with
 * that reason.
 */
export interface WaiterAbort {
  readonly cancelAll?: boolean;
  readonly keepRunning?: boolean;
}

/** What the function of a shared call receives. */
export interface SharedCallContext {
  /** Aborted when the call is cancelled (see `WaiterAbort`): stop the work. */
  readonly signal: AbortSignal;
}

/** What the calls report. */
export interface SharedCallHooks {
  /** A caller joined the call in flight for `key`; `waiters` counts every caller so far. */
  shared(key: string, waiters: number): void;
  /** The call in flight for `key` was cancelled with `reason` before it settled. */
  cancelled(key: string, reason: unknown): void;
}

/** One call in flight: its outcome, its callers and its lazily created signal. */
class SharedCall<T> {
  readonly promise: Promise<T>;
  /** Callers that have not left (those without a signal never do). */
  active = 0;
  /** Every caller so far. */
  waiters = 1;
  settled = false;
  readonly lazy = new LazySignal();
  resolve!: (value: T) => void;
  reject!: (error: unknown) => void;

  constructor(readonly key: string) {
    this.promise = new Promise<T>((resolve, reject) => {
      this.resolve = resolve;
      this.reject = reject;
    });
  }
}

/** The context handed to the call's function: a class, so its signal is only made when read. */
class CallContext implements SharedCallContext {
  readonly #lazy: LazySignal;
  constructor(lazy: LazySignal) {
    this.#lazy = lazy;
  }
  get signal(): AbortSignal {
    return this.#lazy.signal;
  }
}

/** One caller with a signal, waiting on a call: settles with it, or leaves when its signal aborts. */
class Waiter<T> {
  constructor(
    private readonly calls: SharedCalls,
    private readonly call: SharedCall<T>,
    private readonly signal: AbortSignal,
    resolve: (value: T) => void,
    private readonly reject: (error: unknown) => void,
  ) {
    onAbort(signal, this);
    call.promise.then(
      (value) => {
        offAbort(signal, this);
        resolve(value);
      },
      (error: unknown) => {
        offAbort(signal, this);
        reject(error);
      },
    );
  }

  /** The caller's signal aborted. */
  handleEvent(): void {
    const { reason } = this.signal;
    this.reject(reason);
    this.calls.leave(this.call, reason);
  }
}

/** The calls in flight by key (see the module doc). */
export class SharedCalls {
  private readonly calls = new Map<string, SharedCall<unknown>>();

  private readonly cancelAll: boolean;
  private readonly keepRunning: boolean;

  constructor(
    private readonly hooks: SharedCallHooks,
    // Stryker disable next-line BooleanLiteral: (keepRunning true) only dedup leaves keepRunning out, and there cancelAll decides first
    { cancelAll = false, keepRunning = false }: WaiterAbort,
  ) {
    this.cancelAll = cancelAll;
    this.keepRunning = keepRunning;
  }

  /** How many calls are in flight. */
  get size(): number {
    return this.calls.size;
  }

  /**
   * Runs `fn` for `key`, or joins the call in flight for it; resolves or rejects with the call's
   * outcome. A `signal` already aborted rejects with its reason before anything starts; a key that
   * is not a string throws a `TypeError`.
   */
  run<T>(
    key: string,
    fn: (context: SharedCallContext) => T | PromiseLike<T>,
    signal: AbortSignal | undefined,
  ): Promise<T> {
    if (typeof key !== 'string') throw new TypeError(`expected "key" to be a string, got ${show(key)}`);
    if (signal?.aborted) return Promise.reject(signal.reason);
    let call = this.calls.get(key) as SharedCall<T> | undefined;
    if (call === undefined) {
      call = new SharedCall<T>(key);
      // The map holds calls of every value type; each caller reads back the type it passed in.
      this.calls.set(key, call as unknown as SharedCall<unknown>);
      this.start(call, fn);
    } else {
      call.waiters++;
      this.hooks.shared(key, call.waiters);
    }
    call.active++;
    if (signal === undefined) return call.promise;
    const joined = call;
    return new Promise<T>((resolve, reject) => new Waiter(this, joined, signal, resolve, reject));
  }

  /** Makes the next caller of `key` start a new call; the one in flight runs on for its callers. */
  forget(key: string): void {
    this.calls.delete(key);
  }

  /** A caller of `call` left because its signal aborted with `reason`. */
  leave<T>(call: SharedCall<T>, reason: unknown): void {
    call.active--;
    if (this.cancelAll || (call.active === 0 && !this.keepRunning)) this.cancel(call, reason);
  }

  private start<T>(call: SharedCall<T>, fn: (context: SharedCallContext) => T | PromiseLike<T>): void {
    let pending: T | PromiseLike<T>;
    try {
      pending = fn(new CallContext(call.lazy));
    } catch (error) {
      this.settle(call);
      call.reject(error);
      return;
    }
    Promise.resolve(pending).then(
      (value) => {
        this.settle(call);
        call.resolve(value);
      },
      (error: unknown) => {
        this.settle(call);
        call.reject(error);
      },
    );
  }

  /** The call is over (settled or cancelled): later callers of its key start a new one. */
  private settle<T>(call: SharedCall<T>): void {
    call.settled = true;
    if (this.calls.get(call.key) === call) this.calls.delete(call.key);
  }

  private cancel<T>(call: SharedCall<T>, reason: unknown): void {
    if (call.settled) return;
    this.settle(call);
    call.lazy.abort(reason);
    // Under `cancelAll` every caller rejects with the reason now, whatever the work does next.
    // Stryker disable next-line ConditionalExpression: (true) otherwise every caller has left, and nobody reads the call's promise
    if (this.cancelAll) call.reject(reason);
    this.hooks.cancelled(call.key, reason);
  }
}
