import { classify } from '../core/classify.js';
import { type Clock, systemClock } from '../core/clock.js';
import {
  AttemptContext,
  type Context,
  contextAborted,
  contextAbortReason,
  type Operation,
} from '../core/context.js';
import { type Disposer, type Listener, Listeners } from '../core/events.js';
import type { Kind } from '../core/kind.js';
import { failure, type Outcome } from '../core/outcome.js';
import { BasePolicy, type ExecuteOptions, invoke, type Policy, runStep, type Step } from '../core/policy.js';
import {
  isClock,
  isFunction,
  nonNegative,
  optionKeys,
  optionsObject,
  positiveInteger,
  show,
} from '../core/validate.js';
import { RetryBudget } from '../retry/budget.js';
import type { HedgeCanceledError } from './errors.js';
import { HedgeCall, type HedgeEvent, type HedgeSettings } from './hedge-call.js';

export type { HedgeEvent, HedgeTrigger } from './hedge-call.js';

/** Options of {@link hedge}. */
export interface HedgeOptions<V = never> {
  /**
   * Total tries, the first included: `attempts: 3` is the call and at most two hedges. Try n sees
   * `context.attempt = n`. With `variants`, it defaults to (and must equal) `variants.length`.
   * @default 2 (or variants.length)
   */
  readonly attempts?: number | undefined;
  /**
   * How long a try may run unsettled before the next one starts. `0` starts every try at once.
   * Set it near the dependency's p95 latency, so that only the slowest calls are hedged.
   * @default 2_000
   */
  readonly delayMs?: number | undefined;
  /**
   * One operation per try, run instead of the operation given to `execute`: try n runs
   * `variants[n - 1]` (the primary, then replicas or other regions). In a pipeline a variant also
   * replaces the policies listed after the hedge, so wrap each variant in the policies it needs.
   */
  readonly variants?: readonly Operation<V>[] | undefined;
  /**
   * Which failures end the whole call at once instead of letting the other tries go on. The default
   * treats the permanent kinds (`invalid`, `unauthorized`, `forbidden`, `not_found`, `conflict`)
   * as fatal: a 400 from one replica would be a 400 from every replica. Any other failure starts
   * the next try without waiting out `delayMs`.
   * @default (error) => classify(error) is invalid, unauthorized, forbidden, not_found or conflict
   */
  readonly isFatal?: ((error: unknown) => boolean) | undefined;
  /**
   * A shared {@link RetryBudget}: every hedge (each try after the first) withdraws one retry; a
   * refused hedge is not started, and no further hedge starts in that call. Each successful call
   * deposits one success.
   */
  readonly budget?: RetryBudget | undefined;
  /** @default systemClock */
  readonly clock?: Clock | undefined;
  /** Called when a hedge starts. */
  readonly onHedge?: Listener<HedgeEvent> | undefined;
}

const hedgeOptionKeys = optionKeys<HedgeOptions>({
  attempts: true,
  delayMs: true,
  variants: true,
  isFatal: true,
  budget: true,
  clock: true,
  onHedge: true,
});

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
} & Policy<V>;

const fatalKinds: ReadonlySet<Kind> = new Set<Kind>([
  'invalid',
  'unauthorized',
  'forbidden',
  'not_found',
  'conflict',
]);

const permanentFailure = (error: unknown): boolean => fatalKinds.has(classify(error));

class Hedge extends BasePolicy {
  private readonly settings: HedgeSettings;
  private readonly hedged = new Listeners<HedgeEvent>();

  constructor(options: HedgeOptions<unknown> | undefined) {
    super();
    const o = optionsObject('hedge options', options, hedgeOptionKeys);
    const variants = o.variants === undefined ? undefined : variantsOption(o.variants);
    let attempts: number;
    if (variants === undefined) attempts = positiveInteger('attempts', o.attempts ?? 2);
    else {
      attempts = positiveInteger('attempts', o.attempts ?? variants.length);
      if (attempts !== variants.length) {
        throw new TypeError(
          `expected "attempts" to equal the number of variants (${variants.length}), got ${show(attempts)}`,
        );
      }
    }
    const delayMs = nonNegative('delayMs', o.delayMs ?? 2_000);
    if (o.budget !== undefined && !(o.budget instanceof RetryBudget)) {
      throw new TypeError('expected "budget" to be a RetryBudget from retryBudget(), got something else');
    }
    const isFatal =
      o.isFatal === undefined ? permanentFailure : isFunction<(e: unknown) => boolean>('isFatal', o.isFatal);
    const clock = o.clock === undefined ? systemClock : isClock<Clock>('clock', o.clock);
    if (o.onHedge !== undefined) this.hedged.add(isFunction('onHedge', o.onHedge));
    this.settings = { attempts, delayMs, variants, budget: o.budget, clock, isFatal, hedged: this.hedged };
  }

  onHedge(listener: Listener<HedgeEvent>): Disposer {
    return this.hedged.add(listener);
  }

  [runStep]<T>(next: Step<T>, context: Context): Promise<Outcome<T>> {
    if (contextAborted(context)) return Promise.resolve(failure(contextAbortReason(context)));
    if (this.settings.attempts === 1) return this.once(next, context);
    return new HedgeCall<T>(this.settings, next, context).run();
  }

  /** `attempts: 1`: a plain call, numbered 1, with no signal or timer of its own. */
  private once<T>(next: Step<T>, context: Context): Promise<Outcome<T>> {
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

function variantsOption(value: unknown): readonly Operation<unknown>[] {
  if (!Array.isArray(value) || value.length === 0) {
    throw new TypeError(`expected "variants" to be a non-empty array of functions, got ${show(value)}`);
  }
  for (let index = 0; index < value.length; index++) isFunction(`variants[${index}]`, value[index]);
  // A copy: changing the caller's array later does not change what the policy runs.
  return Object.freeze([...(value as Operation<unknown>[])]);
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
