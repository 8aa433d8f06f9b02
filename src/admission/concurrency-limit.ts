import type { Context, Operation } from '../core/context.js';
import { type Disposer, type Listener, Listeners } from '../core/events.js';
import { failure, type Outcome } from '../core/outcome.js';
import { BasePolicy, type ExecuteOptions, isThenable, openEdge, runStep, type Step } from '../core/policy.js';
import { isFunction, optionKeys, optionsObject, positiveInteger } from '../core/validate.js';
import { ConcurrencyLimitError } from './errors.js';

/** Options of {@link concurrencyLimit}. */
export interface ConcurrencyLimitOptions {
  /** Called for each refused call (same as subscribing with `onRejected`). */
  readonly onRejected?: Listener<ConcurrencyLimitRejectedEvent> | undefined;
}

const concurrencyLimitOptionKeys = optionKeys<ConcurrencyLimitOptions>({ onRejected: true });

/** Emitted when a {@link concurrencyLimit} refuses a call. */
export interface ConcurrencyLimitRejectedEvent {
  /** Calls in flight at the refusal (equal to `limit`). */
  readonly inFlight: number;
  /** The limiter's `max`. */
  readonly limit: number;
}

/**
 * A concurrency limit policy: at most `max` calls in flight, the rest refused at once. Create one
 * with {@link concurrencyLimit}.
 */
export class ConcurrencyLimitPolicy extends BasePolicy {
  /** The most calls admitted at once. */
  readonly max: number;
  private active = 0;
  private readonly rejected = new Listeners<ConcurrencyLimitRejectedEvent>();
  // Bound once: releasing a slot allocates no closure per call.
  private readonly releaseValue = (value: unknown): unknown => {
    this.active--;
    return value;
  };
  private readonly releaseError = (error: unknown): never => {
    this.active--;
    throw error;
  };
  private readonly releaseOutcome = (outcome: Outcome<unknown>): Outcome<unknown> => {
    this.active--;
    return outcome;
  };
  private readonly releaseBroken = (error: unknown): Outcome<unknown> => {
    this.active--;
    return failure(error);
  };

  /** Use {@link concurrencyLimit}. */
  constructor(max: number, options?: ConcurrencyLimitOptions) {
    super();
    this.max = positiveInteger('max', max);
    const o = optionsObject('concurrencyLimit options', options, concurrencyLimitOptionKeys);
    if (o.onRejected !== undefined) this.rejected.add(isFunction('onRejected', o.onRejected));
  }

  /** Calls admitted and not yet settled. */
  get inFlight(): number {
    return this.active;
  }

  /** Subscribes to refusals; returns a disposer. */
  onRejected(listener: Listener<ConcurrencyLimitRejectedEvent>): Disposer {
    return this.rejected.add(listener);
  }

  /**
   * Runs `operation` if fewer than `max` calls are in flight, else rejects at once with a
   * {@link ConcurrencyLimitError} without calling it. The slot is released exactly once, when the
   * operation settles (value, rejection or synchronous throw). An already-aborted signal rejects
   * with its reason and takes no slot; so does a `signal` that is not an `AbortSignal`, with a
   * `TypeError` (never a synchronous throw).
   */
  override execute<T>(operation: Operation<T>, options?: ExecuteOptions): Promise<T> {
    const context = openEdge(operation, options);
    if (context instanceof Promise) return context;
    if (this.active >= this.max) return Promise.reject(this.refuse());
    this.active++;
    let result: T | PromiseLike<T>;
    let thenable: boolean;
    try {
      result = operation(context);
      thenable = isThenable<T>(result);
    } catch (error) {
      this.active--;
      return Promise.reject(error);
    }
    if (!thenable) {
      this.active--;
      return Promise.resolve(result as T);
    }
    // Promise.resolve adopts a foreign thenable once, whatever it does: one release exactly.
    return Promise.resolve(result).then(this.releaseValue, this.releaseError) as Promise<T>;
  }

  [runStep]<T>(next: Step<T>, context: Context): Promise<Outcome<T>> {
    if (this.active >= this.max) return Promise.resolve(failure(this.refuse()));
    this.active++;
    let step: Promise<Outcome<T>>;
    try {
      step = next(context);
    } catch (error) {
      // Steps report failures as outcomes; this guards a broken foreign step.
      this.active--;
      return Promise.resolve(failure(error));
    }
    return step.then(
      this.releaseOutcome as (outcome: Outcome<T>) => Outcome<T>,
      this.releaseBroken as (error: unknown) => Outcome<T>,
    );
  }

  private refuse(): ConcurrencyLimitError {
    if (this.rejected.active) this.rejected.emit({ inFlight: this.active, limit: this.max });
    return new ConcurrencyLimitError(this.max);
  }
}

/**
 * Admits at most `max` calls at once and refuses the rest immediately with a
 * {@link ConcurrencyLimitError} (kind `overloaded`, code `ERR_CONCURRENCY_LIMIT`): no queue, no
 * waiting, no timer. A refused operation never runs, so when the limit sits outermost in a
 * `pipeline` a refusal costs nothing downstream (no retry, no breaker count).
 *
 * Each admitted call holds its slot until its operation settles, and releases it exactly once
 * whether it resolves, rejects, throws synchronously or gives up on an abort. A caller abort does
 * not free the slot early: the slot stands for work actually running, so an operation that
 * ignores its signal keeps it until it ends. `inFlight` reads the current count.
 *
 * Throws a `TypeError` when `max` is not a positive integer or an option is invalid. Use
 * {@link bulkhead} instead when callers should wait for a slot.
 *
 * @example
 * const limit = concurrencyLimit(64);
 * app.post('/render', async (req, res) => {
 *   try {
 *     res.send(await limit.execute(({ signal }) => render(req.body, { signal })));
 *   } catch (error) {
 *     problemResponse(res, error); // ConcurrencyLimitError → 503
 *   }
 * });
 */
export function concurrencyLimit(max: number, options?: ConcurrencyLimitOptions): ConcurrencyLimitPolicy {
  return new ConcurrencyLimitPolicy(max, options);
}
