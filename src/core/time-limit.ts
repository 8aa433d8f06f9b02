/**
 * Runs steps under a time limit: the machinery behind `timeout()` and the circuit breaker's
 * `callTimeoutMs`. Internal to bulwark.
 */
import { canAbort } from './abort.js';
import type { Clock, TimerHandle } from './clock.js';
import type { Context } from './context.js';
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
 */
class TimeoutScope implements Context, Expiring {
  settled = false;
  queueNext: Expiring | undefined = undefined;
  /** Set when the deadline passed: the reason the signal aborts with. */
  expired: TimeoutError | undefined = undefined;
  /** Aggressive mode: settles the call at the deadline. */
  onExpired: ((error: TimeoutError) => void) | undefined = undefined;
  private controller: AbortController | undefined = undefined;
  private parentSignal: AbortSignal | undefined = undefined;

  constructor(
    private readonly parent: Context,
    readonly deadline: number,
    private readonly ms: number,
    private readonly startedAt: number,
  ) {}

  get attempt(): number {
    return this.parent.attempt;
  }

  /** The enclosing signal (the caller's, or an outer timeout's). */
  get upstream(): AbortSignal {
    return this.parent.signal;
  }

  get signal(): AbortSignal {
    if (this.controller === undefined) {
      const controller = new AbortController();
      this.controller = controller;
      if (this.expired !== undefined) {
        controller.abort(this.expired);
      } else {
        const parentSignal = this.parent.signal;
        if (parentSignal.aborted) controller.abort(parentSignal.reason);
        else if (canAbort(parentSignal)) {
          this.parentSignal = parentSignal;
          parentSignal.addEventListener('abort', this, { once: true });
        }
      }
    }
    return this.controller.signal;
  }

  /** The parent aborted: pass its reason on. (An EventListener object: no closure per call.) */
  handleEvent(): void {
    this.controller?.abort(this.parentSignal?.reason);
  }

  /** The deadline passed. */
  expire(): void {
    const error = timeoutError(this.ms, this.deadline - this.startedAt);
    this.expired = error;
    this.controller?.abort(error);
    this.onExpired?.(error);
  }

  /** Detaches from the parent signal once the call is over. */
  dispose(): void {
    if (this.parentSignal !== undefined) {
      this.parentSignal.removeEventListener('abort', this);
      this.parentSignal = undefined;
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
   * to the inside. Cooperative: aborts the inner signal at the deadline and waits; a late failure
   * becomes a `TimeoutError` with the failure as `cause`, a late value is returned. Aggressive:
   * settles at the deadline or on the caller's abort without waiting.
   */
  run<T>(next: Step<T>, context: Context, ms: number): Promise<Outcome<T>> {
    const now = this.clock.now();
    const own = now + ms;
    const inherited = context.deadline;
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
    const expired = scope.expired;
    // A value that arrives after the deadline is still returned: the work is done.
    if (expired === undefined || outcome.ok || outcome.error === expired) return outcome;
    return failure(new TimeoutError(expired.timeoutMs, { cause: outcome.error, message: expired.message }));
  }

  private race<T>(next: Step<T>, scope: TimeoutScope, timer: TimerHandle | undefined): Promise<Outcome<T>> {
    return new Promise<Outcome<T>>((resolve) => {
      const upstream = scope.upstream;
      const parentSignal = canAbort(upstream) ? upstream : undefined;
      let settled = false;
      const finish = (outcome: Outcome<T>): void => {
        if (settled) return;
        settled = true;
        this.release(scope, timer);
        if (parentSignal !== undefined) parentSignal.removeEventListener('abort', onParentAbort);
        resolve(outcome);
      };
      const onParentAbort = (): void => finish(failure(parentSignal?.reason));
      scope.onExpired = (error) => finish(failure(error));
      if (parentSignal?.aborted) return finish(failure(parentSignal.reason));
      if (parentSignal !== undefined) parentSignal.addEventListener('abort', onParentAbort, { once: true });
      next(scope).then(finish);
    });
  }

  private release(scope: TimeoutScope, timer: TimerHandle | undefined): void {
    if (timer === undefined) this.deadlines.settle(scope);
    else this.clock.clearTimer(timer);
    scope.dispose();
  }
}
