import { type Clock, systemClock } from '../core/clock.js';
import type { Context } from '../core/context.js';
import type { Outcome } from '../core/outcome.js';
import { BasePolicy, runStep, type Step } from '../core/policy.js';
import { TimeLimit } from '../core/time-limit.js';
import { isClock, oneOf, optionKeys, optionsObject, positive } from '../core/validate.js';

/** How a {@link timeout} treats an operation that is still running at the deadline. */
export type TimeoutMode = 'cooperative' | 'aggressive';

/** Options of {@link timeout}. */
export interface TimeoutOptions {
  /**
   * `cooperative`: abort the operation's signal and wait for it to settle. `aggressive`: also
   * reject at the deadline without waiting, even if the operation ignores its signal.
   * @default 'cooperative'
   */
  readonly mode?: TimeoutMode | undefined;
  /** @default systemClock */
  readonly clock?: Clock | undefined;
}

const timeoutOptionKeys = optionKeys<TimeoutOptions>({ mode: true, clock: true });

/** A timeout policy. Create one with {@link timeout}. */
export class TimeoutPolicy extends BasePolicy {
  // Every call lasts the same ms, so their deadlines arrive in order and share one timer.
  private readonly limit: TimeLimit;

  /** Use {@link timeout}. */
  constructor(
    private readonly ms: number,
    options: TimeoutOptions | undefined,
  ) {
    super();
    positive('ms', ms);
    const o = optionsObject('timeout options', options, timeoutOptionKeys);
    const aggressive =
      oneOf<TimeoutMode>('mode', o.mode ?? 'cooperative', ['cooperative', 'aggressive']) === 'aggressive';
    const clock = o.clock === undefined ? systemClock : isClock<Clock>('clock', o.clock);
    this.limit = new TimeLimit(clock, aggressive);
  }

  [runStep]<T>(next: Step<T>, context: Context): Promise<Outcome<T>> {
    return this.limit.run(next, context, this.ms);
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
 * In both modes a failure once the deadline has passed is the timeout, even if the timer has not
 * fired yet (a loaded event loop); a caller's abort reaches the operation's signal and every
 * policy inside at once (a retry inside stops, a call queued in a bulkhead inside never runs);
 * and every call's deadline fires at its own time, whatever order calls arrive in.
 *
 * A call that ends in time creates no AbortController unless the operation reads its signal,
 * never calls `abort()`, and starts no timer of its own: the policy's calls share one timer.
 * Calls sharing one caller signal put one abort listener on it between them.
 * Throws a `TypeError` for `ms` ≤ 0, NaN or Infinity, or a bad `mode`; `execute` rejects with a
 * `TypeError` (never throws) for a `signal` that is not an `AbortSignal`.
 *
 * @example
 * const policy = timeout(2_000);
 * const res = await policy.execute(({ signal }) => fetch(url, { signal }));
 */
export function timeout(ms: number, options?: TimeoutOptions): TimeoutPolicy {
  return new TimeoutPolicy(ms, options);
}
