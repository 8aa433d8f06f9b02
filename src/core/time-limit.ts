/**
 * Runs steps under a time limit: the machinery behind `timeout()` and the circuit breaker's
 * `callTimeoutMs`. Internal to bulwark.
 */
import { AbortScope } from './abort-scope.js';
import type { Clock, TimerHandle } from './clock.js';
import {
  type AbortWatch,
  type Context,
  contextAborted,
  contextAbortReason,
  unwatchContext,
  watchContext,
} from './context.js';
import { DeadlineQueue, type Expiring } from './deadline-queue.js';
import { TimeoutError } from './errors.js';
import { failure, type Outcome } from './outcome.js';
import type { Step } from './policy.js';

/** The error for a call limited to `ms` that was actually allowed `allowedMs` (a caller's earlier deadline). */
export function timeoutError(ms: number, allowedMs: number): TimeoutError {
  return allowedMs >= ms
    ? new TimeoutError(ms)
    : new TimeoutError(ms, {
        message: `operation hit the caller's deadline after ${Math.max(0, Math.round(allowedMs))} ms (timeout ${ms} ms)`,
      });
}

/**
 * The context inside one timed call. Its signal is created only if someone reads it, so a call
 * that finishes in time and never looked at its signal costs no AbortController and no abort().
 * Inner policies that only need to know about an abort (an inner aggressive timeout, a hedge)
 * watch the scope itself ({@link AbortWatch}) instead of its signal, so nesting timeouts creates
 * no controller either.
 *
 * The scope is the call's one subscriber to the enclosing context (through `watchContext`, so
 * calls sharing a caller signal share one real listener). A parent abort reaches the inner signal
 * and watchers first, then ends the call early in aggressive mode: everything inside sees the
 * abort before the call is released.
 */
class TimeoutScope extends AbortScope implements Context, Expiring {
  settled = false;
  queueNext: Expiring | undefined = undefined;
  /** Set when the deadline passed: the reason the signal aborts with. */
  expired: TimeoutError | undefined = undefined;
  /** Aggressive mode: settles the call at the deadline or on the parent's abort. */
  onEnd: ((outcome: Outcome<never>) => void) | undefined = undefined;
  /** Subscribed to the parent context's abort. */
  private listening = false;

  constructor(
    readonly parent: Context,
    readonly deadline: number,
    private readonly ms: number,
    private readonly startedAt: number,
  ) {
    super();
  }

  get attempt(): number {
    return this.parent.attempt;
  }

  get isAborted(): boolean {
    return this.aborted || (!this.listening && contextAborted(this.parent));
  }

  get abortReason(): unknown {
    return this.aborted ? this.reason : this.listening ? undefined : contextAbortReason(this.parent);
  }

  /** Subscribes to the (not yet aborted) parent context, once. */
  override listen(): void {
    // Stryker disable next-line ConditionalExpression,LogicalOperator: subscriptions are sets, so subscribing twice is a no-op, and listen() never runs on an aborted scope
    if (this.listening || this.aborted) return;
    this.listening = true;
    watchContext(this.parent, this);
  }

  /** The parent aborted: pass its reason on, then (aggressive) end the call. */
  handleEvent(): void {
    // Stryker disable next-line BooleanLiteral: the abort that follows disposes the scope, which clears the flag (unwatching a fired signal is a no-op)
    this.listening = false;
    this.abort(contextAbortReason(this.parent));
  }

  /** The deadline passed. */
  expire(): void {
    const error = this.timeoutError();
    this.expired = error;
    this.abort(error);
  }

  private abort(reason: unknown): void {
    if (this.abortScope(reason)) this.onEnd?.(failure(reason));
  }

  /** Detaches from the parent before anything inside hears of the abort. */
  protected override beforeAbort(): void {
    this.dispose();
  }

  /** The error of this call's deadline. */
  timeoutError(): TimeoutError {
    return timeoutError(this.ms, this.deadline - this.startedAt);
  }

  /** Detaches from the parent context once the call is over. */
  dispose(): void {
    // Stryker disable next-line ConditionalExpression: unwatching a scope that is not subscribed is a no-op (offAbort and unwatchAbort ignore unknown listeners)
    if (this.listening) {
      this.listening = false;
      unwatchContext(this.parent, this);
    }
  }
}

/**
 * Runs steps with a time limit each. Calls whose deadlines arrive in order share one timer; a
 * call due earlier than the last queued one (a caller's tighter deadline, or a shorter limit than
 * before) gets a timer of its own.
 */
export class TimeLimit {
  private readonly deadlines: DeadlineQueue;

  constructor(
    private readonly clock: Clock,
    private readonly aggressive: boolean,
  ) {
    this.deadlines = new DeadlineQueue(clock);
  }

  /**
   * Runs `next` within `ms` (or the context's earlier deadline), exposing the tightened deadline
   * to the inside. A parent abort reaches the inner signal at once, in both modes. Cooperative:
   * aborts the inner signal at the deadline and waits; a failure once the deadline has passed
   * (whether or not the timer has fired yet) becomes a `TimeoutError` with the failure as `cause`,
   * a late value is returned. Aggressive: settles at the deadline or on the parent's abort
   * without waiting; a failure that arrives after the deadline, before the timer fired, is the
   * same `TimeoutError` with cause.
   */
  run<T>(next: Step<T>, context: Context, ms: number): Promise<Outcome<T>> {
    const now = this.clock.now();
    const own = now + ms;
    const inherited = context.deadline;
    // Stryker disable next-line ConditionalExpression,EqualityOperator: undefined < own is false anyway, and on a tie both choices are the same time
    const deadline = inherited !== undefined && inherited < own ? inherited : own;
    if (deadline <= now) return Promise.resolve(failure(timeoutError(ms, deadline - now)));
    const scope = new TimeoutScope(context, deadline, ms, now);
    const timer = this.deadlines.add(scope)
      ? undefined
      : this.clock.setTimer(() => scope.expire(), deadline - now);
    return this.aggressive ? this.race(next, scope, timer) : this.cooperate(next, scope, timer);
  }

  private async cooperate<T>(
    next: Step<T>,
    scope: TimeoutScope,
    timer: TimerHandle | undefined,
  ): Promise<Outcome<T>> {
    const outcome = await next(scope);
    this.release(scope, timer);
    // A value that arrives after the deadline is still returned: the work is done.
    return outcome.ok ? outcome : this.lateFailure(scope, outcome);
  }

  private race<T>(next: Step<T>, scope: TimeoutScope, timer: TimerHandle | undefined): Promise<Outcome<T>> {
    return new Promise<Outcome<T>>((resolve) => {
      let settled = false;
      const finish = (outcome: Outcome<T>): void => {
        // Stryker disable next-line ConditionalExpression: only saves work: a second finish (the step settling after the deadline) releases idempotently and resolves a settled promise
        if (settled) return;
        // Stryker disable next-line BooleanLiteral: as above, a repeated finish changes nothing
        settled = true;
        this.release(scope, timer);
        resolve(outcome.ok ? outcome : this.lateFailure(scope, outcome));
      };
      scope.onEnd = finish;
      if (contextAborted(scope.parent)) return finish(failure(contextAbortReason(scope.parent)));
      scope.listen();
      next(scope).then(finish);
    });
  }

  /**
   * The outcome of a failed (released) call: once the deadline has passed the outcome is the
   * timeout, with the failure as `cause`, even if the operation failed before the timer fired (a
   * busy event loop runs timers late).
   */
  private lateFailure<T>(scope: TimeoutScope, outcome: Outcome<T> & { ok: false }): Outcome<T> {
    let expired = scope.expired;
    if (expired === undefined) {
      if (this.clock.now() < scope.deadline) return outcome;
      expired = scope.timeoutError();
    }
    if (outcome.error === expired) return outcome;
    return failure(new TimeoutError(expired.timeoutMs, { cause: outcome.error, message: expired.message }));
  }

  private release(scope: TimeoutScope, timer: TimerHandle | undefined): void {
    if (timer === undefined) this.deadlines.settle(scope);
    else this.clock.clearTimer(timer);
    scope.dispose();
  }
}
