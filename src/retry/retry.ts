import { canAbort } from '../core/abort.js';
import { classify, isTransient } from '../core/classify.js';
import type { Clock } from '../core/clock.js';
import { AttemptContext, type Context, type Operation } from '../core/context.js';
import { type Disposer, type Listener, Listeners } from '../core/events.js';
import { GatedPolicy } from '../core/gate.js';
import type { CallNote, Ticket } from '../core/gate-types.js';
import { failure, type Outcome } from '../core/outcome.js';
import { invoke, type Step, settle } from '../core/policy.js';
import { retryAfterOf } from '../core/retry-after.js';
import { isFunction, show } from '../core/validate.js';
import { type AttemptFailure, type BackoffContext, ignoresContext, type RetryBackoff } from './backoff.js';
import type { RetryBudget } from './budget.js';
import { type GiveUpReason, RetriesExhaustedError } from './errors.js';
import {
  type DeclineReason,
  type GiveUpEvent,
  type ResultPredicate,
  type RetryEvent,
  type RetryOptions,
  type RetryPredicate,
  readRetryOptions,
} from './options.js';

/** What a failed attempt gave (an error, or a value `handleResult` refused), for the backoff and the events. */
function failureOf(outcome: Outcome<unknown>): AttemptFailure {
  return outcome.ok ? { result: outcome.value } : { error: outcome.error };
}

/** A retry policy. Create one with {@link retry}, {@link retryIf} or {@link retryAll}. */
export class RetryPolicy extends GatedPolicy {
  private readonly maxAttempts: number;
  private readonly backoff: RetryBackoff;
  private readonly handleResult: ResultPredicate | undefined;
  private readonly maxElapsedMs: number;
  private readonly maxRetryAfterMs: number;
  private readonly budget: RetryBudget | undefined;
  private readonly clock: Clock;
  /** Each call reads the clock before its first attempt: `maxElapsedMs` or the backoff's `elapsedMs` need it. */
  private readonly timesCalls: boolean;
  private readonly retried = new Listeners<RetryEvent>();
  private readonly gaveUp = new Listeners<GiveUpEvent>();

  /** Use {@link retry}, {@link retryIf} or {@link retryAll}. */
  constructor(
    private readonly shouldRetry: RetryPredicate,
    options: RetryOptions | undefined,
  ) {
    super('retry');
    const o = readRetryOptions(options);
    this.maxAttempts = o.maxAttempts;
    this.maxElapsedMs = o.maxElapsedMs;
    this.maxRetryAfterMs = o.maxRetryAfterMs;
    this.backoff = o.backoff;
    this.handleResult = o.handleResult;
    this.timesCalls = o.maxElapsedMs !== Infinity || !ignoresContext(o.backoff);
    this.budget = o.budget;
    const budget = o.budget;
    // With a budget, the fast path deposits each first-attempt success.
    this.passValue =
      budget === undefined
        ? undefined
        : <T>(value: T): T => {
            budget.deposit();
            return value;
          };
    this.clock = o.clock;
    if (o.onRetry !== undefined) this.retried.add(o.onRetry);
    if (o.onGiveUp !== undefined) this.gaveUp.add(o.onGiveUp);
    this.configure(o, o.clock);
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
   * The first attempt takes the gate's fast path (one promise, no outcome objects) when nothing
   * bounds the time, no backoff reads it, and no value needs judging.
   */
  // Stryker disable next-line BlockStatement: an empty body answers undefined, i.e. never direct: the step path decides every call the same way
  protected override direct(context: Context): boolean {
    // Stryker disable next-line ConditionalExpression: (false) the step path decides every call the same way, direct only saves allocations; (true) is killed by the bounds, elapsedMs and handleResult tests
    return !this.timesCalls && this.handleResult === undefined && context.deadline === undefined;
  }

  /** The fast path's first attempt failed: decide on it and keep trying while the rules allow. */
  protected override recover<T>(operation: Operation<T>, context: Context, error: unknown): Promise<T> {
    return this.retryAfter(
      (ctx: Context) => invoke(operation, ctx),
      context,
      failure<T>(error),
      // Stryker disable next-line BooleanLiteral: the fast path runs only without a deadline, and the time of the last attempt is read only with one
      false,
      // No start was read: the fast path runs only with a backoff made here, which never reads `elapsedMs`.
      0,
      undefined,
    ).then(settle);
  }

  protected override async run<T>(
    next: Step<T>,
    context: Context,
    _ticket: Ticket,
    note: CallNote | undefined,
  ): Promise<Outcome<T>> {
    // Read the clock only when something bounds the time or the backoff may read `elapsedMs`.
    // Stryker disable next-line ConditionalExpression: (true) reading the start anyway changes nothing unbounded: `x > Infinity` stays false and no deadline is checked; (false) is killed on a clock not at 0
    const timed = this.timesCalls || context.deadline !== undefined;
    const startedAt = timed ? this.clock.now() : 0;
    // Stryker disable next-line ConditionalExpression: (false) a new AttemptContext(context, 1) reads the same signal and deadline through, with the same attempt 1; (true) is killed by the nested-retry test
    const outcome = await next(context.attempt === 1 ? context : new AttemptContext(context, 1));
    return this.ended(outcome, 1) ?? this.retryAfter(next, context, outcome, timed, startedAt, note);
  }

  /**
   * The outcome that ends the call after an attempt that did not fail: its value (`handleResult`
   * accepted it; a success for the budget), or the error `handleResult` threw. `undefined` when the
   * attempt failed: an error, or a value `handleResult` refused.
   */
  private ended<T>(outcome: Outcome<T>, attempt: number): Outcome<T> | undefined {
    if (!outcome.ok) return undefined;
    if (this.handleResult !== undefined) {
      try {
        if (this.handleResult(outcome.value, attempt)) return undefined;
      } catch (predicateError) {
        return failure(predicateError);
      }
    }
    this.budget?.deposit();
    return outcome;
  }

  /** Decides on a failed first attempt and keeps trying while the rules allow. */
  private async retryAfter<T>(
    next: Step<T>,
    context: Context,
    first: Outcome<T>,
    timed: boolean,
    startedAt: number,
    note: CallNote | undefined,
  ): Promise<Outcome<T>> {
    let outcome = first;
    let attemptStartedAt = startedAt;
    for (let attempt = 1; ; attempt++) {
      if (attempt > 1) {
        // Stryker disable next-line ConditionalExpression: (false) a new AttemptContext reads the same signal and deadline through, with the same attempt number
        outcome = await next(attempt === context.attempt ? context : new AttemptContext(context, attempt));
        const ended = this.ended(outcome, attempt);
        if (ended !== undefined) return ended;
      }
      const signal = context.signal;
      // The caller (or an enclosing timeout) gave up: never retry that.
      if (signal.aborted) return outcome;
      // A refused value is retryable by definition; an error is when the predicate says so.
      if (!outcome.ok) {
        let retryable: boolean;
        try {
          retryable = this.shouldRetry(outcome.error, attempt);
        } catch (predicateError) {
          return failure(predicateError);
        }
        if (!retryable) return outcome;
      }
      if (attempt >= this.maxAttempts) return this.giveUp(outcome, attempt, 'attempts');

      const now = this.clock.now();
      const failed = failureOf(outcome);
      let delay = this.delayBefore(attempt, { ...failed, elapsedMs: now - startedAt });
      const asked = retryAfterOf(outcome.ok ? outcome.value : outcome.error, now);
      // Stryker disable next-line ConditionalExpression: (true) with no asked wait both comparisons with undefined are false; (false) is killed by the Retry-After tests
      if (asked !== undefined) {
        // A wait asked from outside is bounded: never sleep for days because a server said so.
        if (asked > this.maxRetryAfterMs) return this.giveUp(outcome, attempt, 'retry-after');
        // Stryker disable next-line EqualityOperator: when asked equals delay, taking either leaves the same delay
        if (asked > delay) delay = asked;
      }
      if (now - startedAt + delay > this.maxElapsedMs) return this.giveUp(outcome, attempt, 'elapsed');
      // Give up now rather than sleep into a deadline that leaves no room for another attempt
      // (estimated by how long the last one took).
      // Stryker disable next-line ConditionalExpression: (true) without a deadline the comparison with undefined is false anyway
      if (context.deadline !== undefined && now + delay + (now - attemptStartedAt) >= context.deadline) {
        return this.giveUp(outcome, attempt, 'deadline');
      }
      if (this.budget !== undefined && !this.budget.tryWithdraw())
        return this.giveUp(outcome, attempt, 'budget');
      // Stryker disable next-line ConditionalExpression: (true) emitting with no listener does nothing; the guard only skips building the event
      if (this.retried.active) this.retried.emit({ attempt, delayMs: delay, ...failed });
      this.count('retry', failed.error);
      if (note !== undefined) note.handled = true;
      if (delay > 0) {
        try {
          await this.clock.sleep(delay, canAbort(signal) ? signal : undefined);
        } catch {
          // A Clock's sleep rejects only when the signal aborts: the check below ends the call.
        }
      }
      if (signal.aborted) return failure(signal.reason);
      // Stryker disable next-line ConditionalExpression: (true) the last attempt's start is read only with a deadline, and then `timed` is true
      if (timed) attemptStartedAt = this.clock.now();
    }
  }

  /**
   * The backoff's delay before retry `attempt`: NaN or a negative number is no wait; `Infinity`
   * (a wait that never ends) or a non-number is a broken backoff, and fails the call.
   */
  private delayBefore(attempt: number, context: BackoffContext): number {
    const delay = this.backoff(attempt, context);
    if (typeof delay !== 'number' || delay === Infinity) {
      throw new TypeError(`expected "backoff" to return a finite number of milliseconds, got ${show(delay)}`);
    }
    // biome-ignore lint/complexity/useMathMinMax: the ternary maps NaN to 0 (Math.max keeps NaN)
    return delay > 0 ? delay : 0;
  }

  /**
   * Stops retrying. A refused value ends the call as it came (the call resolves with it), and so
   * does an error the budget or an over-long `Retry-After` declined (the retry never happened, and
   * the caller still sees its `retryAfterMs`); an error out of attempts, time or deadline is wrapped
   * in a {@link RetriesExhaustedError}.
   */
  private giveUp<T>(outcome: Outcome<T>, attempts: number, reason: GiveUpReason | DeclineReason): Outcome<T> {
    // Stryker disable next-line ConditionalExpression: (true) emitting with no listener does nothing; the guard only skips building the event
    if (this.gaveUp.active) this.gaveUp.emit({ attempts, reason, ...failureOf(outcome) });
    this.count(reason === 'budget' ? 'budget_exhausted' : 'give_up', outcome.ok ? undefined : outcome.error);
    if (outcome.ok || reason === 'budget' || reason === 'retry-after') return outcome;
    return failure(new RetriesExhaustedError(attempts, reason, outcome.error, classify(outcome.error)));
  }
}

const transientOnly: RetryPredicate = (error) => isTransient(error);
const everything: RetryPredicate = () => true;

/**
 * Retries failures whose kind is transient (`transient`, `timeout`, `unavailable`,
 * `rate_limited`, `overloaded`; see `classify`). Anything else, and any failure after the
 * caller's signal aborted, is returned at once, unchanged. With `handleResult`, a value it
 * refuses is retried the same way, and when the retries run out the call resolves with the last
 * value.
 *
 * Waits `max(backoff(n, context), retryAfterMs / Retry-After)` between attempts; an abort during
 * the wait ends it at once with the signal's reason. A failure asking for a wait longer than
 * `maxRetryAfterMs` (default 60 s) is returned at once, unwrapped, never slept on. Gives up before
 * sleeping when the deadline cannot fit the wait plus another attempt as long as the last one.
 *
 * Fails with {@link RetriesExhaustedError} (`attempts`, `reason`, the last error as `cause`, its
 * kind) when attempts, `maxElapsedMs` or the deadline run out on an error; with the original error
 * when the shared budget refuses or the asked wait exceeds `maxRetryAfterMs`; with the error of a
 * `handleResult` or backoff that throws, and with a `TypeError` when the backoff returns `Infinity`
 * or a non-number. Throws a `TypeError` for invalid options.
 *
 * @example
 * const policy = retry({ maxAttempts: 4, backoff: exponentialJitter({ baseMs: 100, maxMs: 2_000 }) });
 * const body = await policy.execute(({ signal }) => fetch(url, { signal }).then(check));
 * // Retry 503 responses too; after the last attempt the caller gets the last response.
 * const polling = retry({ handleResult: (res) => res instanceof Response && res.status === 503 });
 * const res = await polling.execute(({ signal }) => fetch(url, { signal }));
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
