import type { Context } from './context.js';
import type { Outcome } from './outcome.js';
import {
  BasePolicy,
  type ComposablePolicy,
  composable,
  type Policy,
  type PolicyExtra,
  runStep,
  type Step,
} from './policy.js';
import { show } from './validate.js';

/**
 * Composes policies into one. The first argument is the outermost: in
 * `pipeline(timeout(1000), retry())` the timeout bounds all attempts together, while in
 * `pipeline(retry(), timeout(1000))` each attempt gets its own 1000 ms. An inner policy sees the
 * outer policies' deadline and signal. With no arguments it runs the operation as is.
 *
 * The result is a `Policy<Extra>` whose `Extra` is the union of its policies' extras: with a
 * `fallback(() => null)` anywhere inside, `execute` resolves with `T | null`.
 *
 * Throws a `TypeError` at once when an argument is not a policy.
 *
 * @example
 * const resilient = pipeline(fallback(() => null), timeout(2_000), retry({ maxAttempts: 3 }));
 * const user = await resilient.execute(({ signal }) => fetchUser(id, { signal })); // User | null
 */
export function pipeline<P extends Policy<unknown>[]>(...policies: P): Policy<PolicyExtra<P[number]>> {
  const layers = policies.map((policy, index) => {
    if (typeof (policy as Policy<unknown> | null)?.execute !== 'function') {
      throw new TypeError(`expected pipeline argument ${index + 1} to be a policy, got ${show(policy)}`);
    }
    return composable(policy);
  });
  return new Pipeline(layers);
}

class Pipeline extends BasePolicy {
  constructor(private readonly layers: readonly ComposablePolicy<unknown>[]) {
    super();
  }

  [runStep]<T>(next: Step<T>, context: Context): Promise<Outcome<T>> {
    return this.from(0, next, context);
  }

  private from<T>(index: number, next: Step<T>, context: Context): Promise<Outcome<T>> {
    const layer = this.layers[index];
    if (layer === undefined) return next(context);
    return layer[runStep]((ctx: Context) => this.from(index + 1, next, ctx), context);
  }
}
