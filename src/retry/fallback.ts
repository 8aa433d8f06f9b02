import type { Context } from '../core/context.js';
import { failure, type Outcome } from '../core/outcome.js';
import { BasePolicy, type Policy, runStep, type Step } from '../core/policy.js';
import { isFunction, optionKeys, optionsObject } from '../core/validate.js';

/** Produces the substitute value from the error and the call's context. */
export type FallbackHandler<F> = (error: unknown, context: Context) => F | Promise<F>;

/** Options of {@link fallback}. */
export interface FallbackOptions {
  /**
   * Which failures get the fallback. Failures after the caller's signal aborted never do: the
   * caller has gone.
   * @default every failure
   */
  readonly when?: ((error: unknown) => boolean) | undefined;
}

const fallbackOptionKeys = optionKeys<FallbackOptions>({ when: true });

/**
 * A fallback policy: a `Policy<F>`, so `execute` resolves with the operation's value or the
 * handler's (`T | F`), and in `pipeline(...)` the caller sees `F` among the possible values.
 * Create one with {@link fallback}.
 */
export type FallbackPolicy<F> = Policy<F>;

class Fallback<F> extends BasePolicy {
  private readonly when: ((error: unknown) => boolean) | undefined;

  constructor(
    private readonly handler: FallbackHandler<F>,
    options: FallbackOptions | undefined,
  ) {
    super();
    isFunction('handler', handler);
    const o = optionsObject('fallback options', options, fallbackOptionKeys);
    this.when = o.when === undefined ? undefined : isFunction('when', o.when);
  }

  async [runStep]<T>(next: Step<T>, context: Context): Promise<Outcome<T>> {
    const outcome = await next(context);
    if (outcome.ok || context.signal.aborted) return outcome;
    try {
      if (this.when !== undefined && !this.when(outcome.error)) return outcome;
      // The handler's value stands in for T: in a pipeline the caller typed the call as T | F.
      return { ok: true, value: (await this.handler(outcome.error, context)) as unknown as T };
    } catch (error) {
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
