import type { Clock } from '../core/clock.js';
import type { Context, Operation } from '../core/context.js';
import { GatedPolicy } from '../core/gate.js';
import type { CallNote, Ticket } from '../core/gate-types.js';
import { failure, type Outcome } from '../core/outcome.js';
import { type Policy, type Step, settle } from '../core/policy.js';
import type { PolicyEvents, PolicyOptions } from '../core/policy-events.js';
import { policyFields } from '../core/policy-fields.js';
import { clockField, func, optional, readOptions, type Schema } from '../core/read-options.js';
import { isFunction } from '../core/validate.js';

/** Produces the substitute value from the error and the call's context. */
export type FallbackHandler<F> = (error: unknown, context: Context) => F | Promise<F>;

/** Options of {@link fallback}. */
export interface FallbackOptions extends PolicyOptions {
  /**
   * Which failures get the fallback. Failures after the caller's signal aborted never do: the
   * caller has gone.
   * @default every failure
   */
  readonly when?: ((error: unknown) => boolean) | undefined;
  /** Times the events' `durationMs`. @default systemClock */
  readonly clock?: Clock | undefined;
}

const fallbackSchema = {
  when: optional(func<(error: unknown) => boolean>()),
  clock: clockField,
  ...policyFields<never>(),
} satisfies Schema<FallbackOptions>;

/**
 * A fallback policy: a `Policy<F>`, so `execute` resolves with the operation's value or the
 * handler's (`T | F`), and in `pipeline(...)` the caller sees `F` among the possible values.
 * Create one with {@link fallback}.
 */
export type FallbackPolicy<F> = Policy<F> & PolicyEvents<never>;

class Fallback<F> extends GatedPolicy {
  private readonly when: ((error: unknown) => boolean) | undefined;

  constructor(
    private readonly handler: FallbackHandler<F>,
    options: FallbackOptions | undefined,
  ) {
    super('fallback');
    isFunction('handler', handler);
    const o = readOptions('fallback options', options, fallbackSchema);
    this.when = o.when;
    this.configure(o, o.clock);
  }

  /** The fast path's failure: answered with the handler's value when it qualifies. */
  protected override recover<T>(_operation: Operation<T>, context: Context, error: unknown): Promise<T> {
    return this.answer<T>({ ok: false, error }, context, undefined).then(settle);
  }

  protected override async run<T>(
    next: Step<T>,
    context: Context,
    _ticket: Ticket,
    note: CallNote | undefined,
  ): Promise<Outcome<T>> {
    const outcome = await next(context);
    return outcome.ok ? outcome : this.answer(outcome, context, note);
  }

  /** The substitute for a failed outcome, or the failure itself when it does not qualify. */
  private async answer<T>(
    outcome: Outcome<T> & { ok: false },
    context: Context,
    note: CallNote | undefined,
  ): Promise<Outcome<T>> {
    if (context.signal.aborted) return outcome;
    try {
      if (this.when !== undefined && !this.when(outcome.error)) return outcome;
      // The handler's value stands in for T: in a pipeline the caller typed the call as T | F.
      const value = (await this.handler(outcome.error, context)) as unknown as T;
      if (note !== undefined) note.answered = { error: outcome.error };
      return { ok: true, value };
    } catch (error) {
      if (note !== undefined) note.handled = true;
      return failure(error);
    }
  }
}

/**
 * Replaces a failure with a substitute value: a cached copy, a default, a degraded answer.
 * A `when` predicate narrows which failures qualify; a caller abort never does. If the handler
 * (or `when`) throws, the call rejects with that error.
 *
 * @example
 * const prices = fallback(() => cachedPrices, { when: (e) => classify(e) !== 'invalid' });
 * const list = await prices.execute(() => fetchPrices());
 */
export function fallback<F>(handler: FallbackHandler<F>, options?: FallbackOptions): FallbackPolicy<F> {
  return new Fallback(handler, options);
}
