/**
 * The timeout policy: bounds each call in time. The machinery (the shared deadline queue, the
 * race against the operation, `TimeoutError`) lives in core, because the circuit breaker's call
 * timeout and the hedge use it too.
 */
import type { Clock } from '../core/clock.js';
import type { Context } from '../core/context.js';
import { GatedPolicy } from '../core/gate.js';
import type { CallNote, Ticket } from '../core/gate-types.js';
import type { Outcome } from '../core/outcome.js';
import type { Step } from '../core/policy.js';
import { TimeLimit } from '../core/time-limit.js';
import { positive } from '../core/validate.js';
import { readTimeoutOptions, type TimeoutOptions } from './options.js';

/** A timeout policy. Create one with {@link timeout}. */
export class TimeoutPolicy extends GatedPolicy {
  // Every call lasts the same ms, so their deadlines arrive in order and share one timer.
  private readonly limit: TimeLimit;
  private readonly clock: Clock;

  /** Use {@link timeout}. */
  constructor(
    private readonly ms: number,
    options: TimeoutOptions | undefined,
  ) {
    super('timeout');
    positive('ms', ms);
    const o = readTimeoutOptions(options);
    this.clock = o.clock;
    this.limit = new TimeLimit(o.clock, o.mode === 'aggressive');
    this.configure(o, o.clock);
  }

  /** Every call runs under the time limit: never the bare fast path. */
  // Stryker disable next-line BlockStatement: an empty body answers undefined, which the gate reads as false too
  protected override direct(_context: Context): boolean {
    return false;
  }

  protected override run<T>(
    next: Step<T>,
    context: Context,
    _ticket: Ticket,
    note: CallNote | undefined,
  ): Promise<Outcome<T>> {
    const running = this.limit.run(next, context, this.ms);
    if (note === undefined) return running;
    // Observed: the timeout acted on a failure when the call's deadline had passed by its end.
    const deadline = Math.min(this.clock.now() + this.ms, context.deadline ?? Infinity);
    return running.then((outcome) => {
      if (!outcome.ok && this.clock.now() >= deadline) note.handled = true;
      return outcome;
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
