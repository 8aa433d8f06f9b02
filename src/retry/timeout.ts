import { canAbort } from '../core/abort.js';
import { type Clock, systemClock, type TimerHandle } from '../core/clock.js';
import type { Context } from '../core/context.js';
import { DeadlineQueue, type Expiring } from '../core/deadline-queue.js';
import { TimeoutError } from '../core/errors.js';
import { failure, type Outcome } from '../core/outcome.js';
import { BasePolicy, runStep, type Step } from '../core/policy.js';
import { isClock, oneOf, optionsObject, positive } from '../core/validate.js';

/** How a {@link timeout} treats an operation that is still running at the deadline. */
export type TimeoutMode = 'cooperative' | 'aggressive';

/** Options of {@link timeout}. */
export interface TimeoutOptions {
  /**
   * `cooperative`: abort the operation's signal and wait for it to settle. `aggressive`: also
   * reject at the deadline without waiting, even if the operation ignores its signal.
   * @default 'cooperative'
   */
  readonly mode?: TimeoutMode;
  /** @default systemClock */
  readonly clock?: Clock;
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
    private readonly policy: TimeoutPolicy,
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
    const error = this.policy.timeoutError(this.deadline - this.startedAt);
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

/** A timeout policy. Create one with {@link timeout}. */
export class TimeoutPolicy extends BasePolicy {
  private readonly clock: Clock;
  private readonly aggressive: boolean;
  // Every call lasts the same ms, so their deadlines arrive in order and share one timer.
  private readonly deadlines: DeadlineQueue;

  /** Use {@link timeout}. */
  constructor(
    private readonly ms: number,
    options: TimeoutOptions | undefined,
  ) {
    super();
    positive('ms', ms);
    const o = optionsObject('timeout options', options);
    this.aggressive =
      oneOf<TimeoutMode>('mode', o.mode ?? 'cooperative', ['cooperative', 'aggressive']) === 'aggressive';
    this.clock = o.clock === undefined ? systemClock : isClock<Clock>('clock', o.clock);
    this.deadlines = new DeadlineQueue(this.clock);
  }

  [runStep]<T>(next: Step<T>, context: Context): Promise<Outcome<T>> {
    const now = this.clock.now();
    const own = now + this.ms;
    const inherited = context.deadline;
    const deadline = inherited !== undefined && inherited < own ? inherited : own;
    if (deadline <= now) return Promise.resolve(failure(this.timeoutError(deadline - now)));
    const scope = new TimeoutScope(context, deadline, this, now);
    // A caller's earlier deadline may come out of order: it gets a timer of its own.
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

  /** The error for a call that was allowed `limitMs`. */
  timeoutError(limitMs: number): TimeoutError {
    return limitMs >= this.ms
      ? new TimeoutError(this.ms)
      : new TimeoutError(this.ms, {
          message: `operation hit the caller's deadline after ${Math.max(0, Math.round(limitMs))} ms (timeout ${this.ms} ms)`,
        });
  }
}

/**
 * Bounds each call to `ms` milliseconds (or the caller's earlier deadline, which always wins) and
 * tightens `context.deadline` for the policies inside it.
 *
 * - `cooperative` (default): at the deadline the operation's `signal` aborts with a
 *   {@link TimeoutError}; the policy waits for the operation to settle. A failure after the
 *   deadline becomes a `TimeoutError` (its `cause` the operation's error); a value that still
 *   arrives is returned.
 * - `aggressive`: rejects with `TimeoutError` at the deadline (or with the caller's abort reason
 *   when the caller aborts) even if the operation ignores its signal; the signal still aborts.
 *
 * A call that ends in time creates no AbortController unless the operation reads its signal,
 * never calls `abort()`, and starts no timer of its own: the policy's calls share one timer.
 * Throws a `TypeError` for `ms` ≤ 0, NaN or Infinity, or a bad `mode`.
 *
 * @example
 * const policy = timeout(2_000);
 * const res = await policy.execute(({ signal }) => fetch(url, { signal }));
 */
export function timeout(ms: number, options?: TimeoutOptions): TimeoutPolicy {
  return new TimeoutPolicy(ms, options);
}
