import { canAbort } from '../core/abort.js';
import { classify, isTransient } from '../core/classify.js';
import { type Clock, systemClock } from '../core/clock.js';
import { AttemptContext, type Context, type Operation } from '../core/context.js';
import { type GiveUpReason, RetriesExhaustedError } from '../core/errors.js';
import { type Disposer, type Listener, Listeners } from '../core/events.js';
import { failure, type Outcome } from '../core/outcome.js';
import {
  BasePolicy,
  type ExecuteOptions,
  invoke,
  isThenable,
  openEdge,
  runStep,
  type Step,
  settle,
} from '../core/policy.js';
import { retryAfterOf } from '../core/retry-after.js';
import {
  isClock,
  isFunction,
  nonNegative,
  optionKeys,
  optionsObject,
  positiveInteger,
} from '../core/validate.js';
import { type Backoff, backoffOption, exponentialJitter } from './backoff.js';
import { RetryBudget } from './budget.js';

/** Options of {@link retry}, {@link retryIf} and {@link retryAll}. */
export interface RetryOptions {
  /**
   * Total attempts, the first included: `maxAttempts: 3` means one call and at most two retries.
   * (cockatiel's `maxAttempts` counts retries only; ours does not.) `Infinity` needs a finite
   * `maxElapsedMs`.
   * @default 3
   */
  readonly maxAttempts?: number | undefined;
  /** Delay before retry n. @default exponentialJitter({ baseMs: 100, maxMs: 10_000 }) */
  readonly backoff?: Backoff | undefined;
  /** Stop retrying once the next attempt would start later than this after the first began. @default Infinity */
  readonly maxElapsedMs?: number | undefined;
  /**
   * The longest wait a failure may ask for (its `retryAfterMs` or HTTP `Retry-After`) that the
   * policy still waits out. A failure asking for more is not retried: the call fails at once with
   * that error, unwrapped, so the caller still sees its `retryAfterMs` (`onGiveUp` reason
   * `'retry-after'`). `Infinity` waits whatever is asked (the deadline and `maxElapsedMs` still apply).
   * @default 60_000
   */
  readonly maxRetryAfterMs?: number | undefined;
  /** A shared {@link RetryBudget}; a refused retry fails fast with the original error. */
  readonly budget?: RetryBudget | undefined;
  /** @default systemClock */
  readonly clock?: Clock | undefined;
  /** Called before each backoff sleep. */
  readonly onRetry?: Listener<RetryEvent> | undefined;
  /** Called when a retryable failure is not retried (attempts, time, deadline or budget spent). */
  readonly onGiveUp?: Listener<GiveUpEvent> | undefined;
}

const retryOptionKeys = optionKeys<RetryOptions>({
  maxAttempts: true,
  backoff: true,
  maxElapsedMs: true,
  maxRetryAfterMs: true,
  budget: true,
  clock: true,
  onRetry: true,
  onGiveUp: true,
});

/** Emitted before each retry. */
export interface RetryEvent {
  /** The attempt that just failed (1 = the first call). */
  readonly attempt: number;
  /** How long the policy will sleep before the next attempt. */
  readonly delayMs: number;
  /** The failed attempt's error. */
  readonly error: unknown;
}

/** Emitted when the policy stops retrying a failure it would otherwise retry. */
export interface GiveUpEvent {
  /** Attempts made, the first included. */
  readonly attempts: number;
  /** The last attempt's error. */
  readonly error: unknown;
  /**
   * Why: `attempts`, `elapsed`, `deadline`, `budget` (the shared budget refused) or `retry-after`
   * (the failure asked for a longer wait than `maxRetryAfterMs`).
   */
  readonly reason: GiveUpReason | DeclineReason;
}

/** Why a retry was declined, the failure returned unwrapped: the retry never happened. */
type DeclineReason = 'budget' | 'retry-after';

/** Decides whether an error is worth another attempt. */
export type RetryPredicate = (error: unknown, attempt: number) => boolean;

const defaultBackoff = exponentialJitter({ baseMs: 100, maxMs: 10_000 });

/** A retry policy. Create one with {@link retry}, {@link retryIf} or {@link retryAll}. */
export class RetryPolicy extends BasePolicy {
  private readonly maxAttempts: number;
  private readonly backoff: Backoff;
  private readonly maxElapsedMs: number;
  private readonly maxRetryAfterMs: number;
  private readonly budget: RetryBudget | undefined;
  private readonly clock: Clock;
  private readonly retried = new Listeners<RetryEvent>();
  private readonly gaveUp = new Listeners<GiveUpEvent>();
  /** With a budget, the fast path deposits each first-attempt success. */
  private readonly firstValue: (<T>(value: T) => T) | undefined;

  /** Use {@link retry}, {@link retryIf} or {@link retryAll}. */
  constructor(
    private readonly shouldRetry: RetryPredicate,
    options: RetryOptions | undefined,
  ) {
    super();
    const o = optionsObject('retry options', options, retryOptionKeys);
    this.maxAttempts = positiveInteger('maxAttempts', o.maxAttempts ?? 3, true);
    this.maxElapsedMs = nonNegative('maxElapsedMs', o.maxElapsedMs ?? Infinity, true);
    if (this.maxAttempts === Infinity && this.maxElapsedMs === Infinity) {
      throw new TypeError(
        'expected "maxElapsedMs" to be finite when "maxAttempts" is Infinity, got Infinity',
      );
    }
    this.maxRetryAfterMs =
      o.maxRetryAfterMs === undefined ? 60_000 : nonNegative('maxRetryAfterMs', o.maxRetryAfterMs, true);
    this.backoff = o.backoff === undefined ? defaultBackoff : backoffOption(o.backoff);
    if (o.budget !== undefined && !(o.budget instanceof RetryBudget)) {
      throw new TypeError('expected "budget" to be a RetryBudget from retryBudget(), got something else');
    }
    this.budget = o.budget;
    const budget = o.budget;
    this.firstValue =
      budget === undefined
        ? undefined
        : <T>(value: T): T => {
            budget.deposit();
            return value;
          };
    this.clock = o.clock === undefined ? systemClock : isClock<Clock>('clock', o.clock);
    if (o.onRetry !== undefined) this.retried.add(isFunction('onRetry', o.onRetry));
    if (o.onGiveUp !== undefined) this.gaveUp.add(isFunction('onGiveUp', o.onGiveUp));
  }

  /** Subscribes to retries; returns a disposer. */
  onRetry(listener: Listener<RetryEvent>): Disposer {
    return this.retried.add(listener);
  }

  /** Subscribes to give-ups; returns a disposer. */
  onGiveUp(listener: Listener<GiveUpEvent>): Disposer {
    return this.gaveUp.add(listener);
  }

  /**
   * Runs `operation`, retrying as configured. The first attempt takes a fast path (one promise, no
   * context or outcome objects) when nothing bounds the time.
   */
  override execute<T>(operation: Operation<T>, options?: ExecuteOptions): Promise<T> {
    if (this.maxElapsedMs !== Infinity || options?.deadline !== undefined)
      return super.execute(operation, options);
    const context = openEdge(operation, options);
    if (context instanceof Promise) return context;
    let result: T | PromiseLike<T>;
    try {
      result = operation(context);
    } catch (error) {
      return this.recover(operation, context, error);
    }
    if (!isThenable<T>(result)) {
      this.budget?.deposit();
      return Promise.resolve(result);
    }
    return Promise.resolve(result).then(this.firstValue as (value: T) => T, (error: unknown) =>
      this.recover(operation, context, error),
    );
  }

  async [runStep]<T>(next: Step<T>, context: Context): Promise<Outcome<T>> {
    // Read the clock only when something bounds the time.
    const timed = this.maxElapsedMs !== Infinity || context.deadline !== undefined;
    const startedAt = timed ? this.clock.now() : 0;
    const outcome = await next(context.attempt === 1 ? context : new AttemptContext(context, 1));
    if (outcome.ok) {
      this.budget?.deposit();
      return outcome;
    }
    return this.retryAfter(next, context, outcome, timed, startedAt);
  }

  /** The slow path of {@link execute}: the first attempt failed. */
  private recover<T>(operation: Operation<T>, context: Context, error: unknown): Promise<T> {
    return this.retryAfter(
      (ctx: Context) => invoke(operation, ctx),
      context,
      failure<T>(error),
      false,
      0,
    ).then(settle);
  }

  /** Decides on a failed first attempt and keeps trying while the rules allow. */
  private async retryAfter<T>(
    next: Step<T>,
    context: Context,
    first: Outcome<T>,
    timed: boolean,
    startedAt: number,
  ): Promise<Outcome<T>> {
    let outcome = first;
    let attemptStartedAt = startedAt;
    for (let attempt = 1; ; attempt++) {
      if (attempt > 1) {
        outcome = await next(attempt === context.attempt ? context : new AttemptContext(context, attempt));
        if (outcome.ok) {
          this.budget?.deposit();
          return outcome;
        }
      }
      const error = (outcome as { error: unknown }).error;
      const signal = context.signal;
      // The caller (or an enclosing timeout) gave up: never retry that.
      if (signal.aborted) return outcome;
      let retryable: boolean;
      try {
        retryable = this.shouldRetry(error, attempt);
      } catch (predicateError) {
        return failure(predicateError);
      }
      if (!retryable) return outcome;
      if (attempt >= this.maxAttempts) return this.giveUp(attempt, 'attempts', error);

      const now = this.clock.now();
      let delay = this.backoff(attempt);
      const asked = retryAfterOf(error, now);
      if (asked !== undefined) {
        // A wait asked from outside is bounded: never sleep for days because a server said so.
        if (asked > this.maxRetryAfterMs) return this.decline(outcome, attempt, 'retry-after');
        if (asked > delay) delay = asked;
      }
      if (!(delay > 0)) delay = 0; // a NaN or negative custom backoff means "no wait"
      if (now - startedAt + delay > this.maxElapsedMs) return this.giveUp(attempt, 'elapsed', error);
      // Give up now rather than sleep into a deadline that leaves no room for another attempt
      // (estimated by how long the last one took).
      if (context.deadline !== undefined && now + delay + (now - attemptStartedAt) >= context.deadline) {
        return this.giveUp(attempt, 'deadline', error);
      }
      if (this.budget !== undefined && !this.budget.tryWithdraw())
        return this.decline(outcome, attempt, 'budget');
      if (this.retried.active) this.retried.emit({ attempt, delayMs: delay, error });
      if (delay > 0) {
        try {
          await this.clock.sleep(delay, canAbort(signal) ? signal : undefined);
        } catch {
          return failure(signal.reason);
        }
      }
      if (signal.aborted) return failure(signal.reason);
      if (timed) attemptStartedAt = this.clock.now();
    }
  }

  /** Stops without wrapping the failure: the caller gets it as it came (with its `retryAfterMs`). */
  private decline<T>(outcome: Outcome<T>, attempts: number, reason: DeclineReason): Outcome<T> {
    if (this.gaveUp.active) {
      this.gaveUp.emit({ attempts, error: (outcome as { error: unknown }).error, reason });
    }
    return outcome;
  }

  private giveUp<T>(attempts: number, reason: GiveUpReason, error: unknown): Outcome<T> {
    if (this.gaveUp.active) this.gaveUp.emit({ attempts, error, reason });
    return failure(new RetriesExhaustedError(attempts, reason, error, classify(error)));
  }
}

const transientOnly: RetryPredicate = (error) => isTransient(error);
const everything: RetryPredicate = () => true;

/**
 * Retries failures whose kind is transient (`transient`, `timeout`, `unavailable`,
 * `rate_limited`, `overloaded`; see `classify`). Anything else, and any failure after the
 * caller's signal aborted, is returned at once, unchanged.
 *
 * Waits `max(backoff(n), error.retryAfterMs / Retry-After)` between attempts; an abort during
 * the wait ends it at once with the signal's reason. A failure asking for a wait longer than
 * `maxRetryAfterMs` (default 60 s) is returned at once, unwrapped, never slept on. Gives up before sleeping when the deadline
 * cannot fit the wait plus another attempt as long as the last one.
 *
 * Fails with {@link RetriesExhaustedError} (`attempts`, `reason`, the last error as `cause`, its
 * kind) when attempts, `maxElapsedMs` or the deadline run out; with the original error when the
 * shared budget refuses or the asked wait exceeds `maxRetryAfterMs`. Throws a `TypeError` for invalid options.
 *
 * @example
 * const policy = retry({ maxAttempts: 4, backoff: exponentialJitter({ baseMs: 100, maxMs: 2_000 }) });
 * const body = await policy.execute(({ signal }) => fetch(url, { signal }).then(check));
 */
export function retry(options?: RetryOptions): RetryPolicy {
  return new RetryPolicy(transientOnly, options);
}

/**
 * Retries failures for which `predicate(error, attempt)` returns true (caller aborts are never
 * retried). A predicate that throws ends the call with the predicate's error. Otherwise as
 * {@link retry}.
 *
 * @example
 * const policy = retryIf((error) => (error as { code?: string }).code === 'SQLITE_BUSY', { maxAttempts: 5 });
 */
export function retryIf(predicate: RetryPredicate, options?: RetryOptions): RetryPolicy {
  return new RetryPolicy(isFunction<RetryPredicate>('predicate', predicate), options);
}

/**
 * Retries every failure except a caller abort, whatever its kind: only for idempotent work, since
 * it also retries bugs and permanent refusals. Otherwise as {@link retry}.
 *
 * @example
 * const policy = retryAll({ maxAttempts: 3, backoff: constant(50) });
 */
export function retryAll(options?: RetryOptions): RetryPolicy {
  return new RetryPolicy(everything, options);
}
