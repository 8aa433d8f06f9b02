import { classify } from '../core/classify.js';
import {
  AttemptContext,
  type Context,
  contextAborted,
  contextAbortReason,
  type Operation,
} from '../core/context.js';
import { type Disposer, type Listener, Listeners } from '../core/events.js';
import { GatedPolicy } from '../core/gate.js';
import type { CallNote, Ticket } from '../core/gate-types.js';
import { isPermanentKind } from '../core/kind.js';
import { failure, type Outcome } from '../core/outcome.js';
import { type ExecuteOptions, invoke, type Policy, type Step } from '../core/policy.js';
import type { PolicyEvents } from '../core/policy-events.js';
import type { HedgeCanceledError } from './errors.js';
import { HedgeCall, type HedgeEvent, type HedgeSettings } from './hedge-call.js';
import { type HedgeOptions, readHedgeOptions } from './options.js';

export type { HedgeEvent, HedgeTrigger } from './hedge-call.js';

/**
 * A hedging policy (a {@link Policy}, so it composes in `pipeline(...)`). `execute` resolves with
 * the first successful try's value: the operation's, or with `variants`, one of theirs. Create one
 * with {@link hedge}.
 */
export type HedgePolicy<V = never> = {
  /**
   * Runs the hedged call (see {@link hedge}). With `variants`, the variants run and `operation`
   * is not called. Rejects with the fatal or last failure, or the caller's abort reason; rejects
   * with a `TypeError` (never a synchronous throw) for a non-function operation, a `signal` that
   * is not an `AbortSignal` or a NaN deadline, before any try starts.
   */
  execute<T>(operation: Operation<T>, options?: ExecuteOptions): Promise<T | V>;
  /** Subscribes to started hedges; returns a disposer. */
  onHedge(listener: Listener<HedgeEvent>): Disposer;
} & Policy<V> &
  PolicyEvents<never>;

const permanentFailure = (error: unknown): boolean => isPermanentKind(classify(error));

class Hedge extends GatedPolicy {
  private readonly settings: HedgeSettings;
  private readonly hedged = new Listeners<HedgeEvent>();

  constructor(options: HedgeOptions<unknown> | undefined) {
    super('hedge');
    const o = readHedgeOptions(options);
    if (o.onHedge !== undefined) this.hedged.add(o.onHedge);
    const { attempts, delayMs, variants, budget, clock } = o;
    const isFatal = o.isFatal ?? permanentFailure;
    const count = (error: unknown) => this.count('hedge', error);
    this.settings = { count, attempts, delayMs, variants, budget, clock, isFatal, hedged: this.hedged };
    this.configure(o, clock);
  }

  /** Every call runs the hedging machinery: never the bare fast path. */
  // Stryker disable next-line BlockStatement: (returns undefined) falsy, as false is
  protected override direct(_context: Context): boolean {
    return false;
  }

  onHedge(listener: Listener<HedgeEvent>): Disposer {
    return this.hedged.add(listener);
  }

  protected override run<T>(
    next: Step<T>,
    context: Context,
    _ticket: Ticket,
    note: CallNote | undefined,
  ): Promise<Outcome<T>> {
    if (contextAborted(context)) return Promise.resolve(failure(contextAbortReason(context)));
    if (this.settings.attempts === 1) return this.once(next, context);
    const call = new HedgeCall<T>(this.settings, next, context);
    if (note === undefined) return call.run();
    // Observed: the hedge acted on a failure when it started a try beyond the first.
    return call.run().then((outcome) => {
      if (!outcome.ok && call.started > 1) note.handled = true;
      return outcome;
    });
  }

  /** `attempts: 1`: a plain call, numbered 1, with no signal or timer of its own. */
  private once<T>(next: Step<T>, context: Context): Promise<Outcome<T>> {
    // Stryker disable next-line ConditionalExpression: (always wrapped) an attempt-1 context renumbered 1 reads the same signal, deadline and attempt
    const ctx = context.attempt === 1 ? context : new AttemptContext(context, 1);
    const { variants, budget } = this.settings;
    const step = variants === undefined ? next(ctx) : (invoke(variants[0]!, ctx) as Promise<Outcome<T>>);
    if (budget === undefined) return step;
    return step.then((outcome) => {
      if (outcome.ok) budget.deposit();
      return outcome;
    });
  }
}

/**
 * Hedged requests: runs up to `attempts` tries of an operation (or one of each `variants`) and
 * resolves with the first success. The first try starts at once; each further try starts when the
 * tries before it have not settled after `delayMs` (all at once with `delayMs: 0`), or at once when
 * a try fails with an error that is not fatal (gRPC hedging does the same). Tries overlap: use it
 * for idempotent work only.
 *
 * - **Winner.** The first success settles the call; every other try still running has its signal
 *   aborted with a {@link HedgeCanceledError} (kind `canceled`), and no further try starts.
 * - **Failures.** A fatal failure (by default a permanent kind: 400, 401, 403, 404, 409, ...) ends
 *   the call at once with that error and aborts the rest. Otherwise the call rejects, when every
 *   started try has failed and no more can start, with the **last error to arrive**.
 * - **Caller abort** aborts every try with the signal's reason and rejects with it at once.
 * - **Deadline.** No try starts at or after `context.deadline` (from an outer `timeout` or
 *   `execute(op, { deadline })`); the hedge does not itself enforce the deadline.
 * - **Pushback.** A failure that asks to wait (`retryAfterMs`, `Retry-After`) delays the next try
 *   by that much instead of starting it at once.
 * - **Budget.** With `budget`, each hedge withdraws a retry; when refused, no more hedges start.
 *
 * Each try gets its own signal (a child of the caller's), created only if the try reads it; the
 * call holds one subscription to the caller's signal, and concurrent calls sharing that signal
 * share one real listener on it. The stagger timer is cleared when the call settles. `attempts: 1` is a plain call. Throws a
 * `TypeError` for invalid options.
 *
 * @example
 * const reads = hedge({ attempts: 3, delayMs: 150 }); // ~p95 of the dependency
 * const user = await reads.execute(({ signal }) => fetch(`${api}/users/${id}`, { signal }).then(json));
 *
 * const regions = hedge({
 *   delayMs: 200,
 *   variants: [({ signal }) => getQuote(eu, { signal }), ({ signal }) => getQuote(us, { signal })],
 * });
 * const quote = await regions.execute(({ signal }) => getQuote(eu, { signal })); // operation unused: variants run
 */
export function hedge<V = never>(options?: HedgeOptions<V>): HedgePolicy<V> {
  return new Hedge(options as HedgeOptions<unknown> | undefined) as unknown as HedgePolicy<V>;
}
