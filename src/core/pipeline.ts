import type { Clock } from './clock.js';
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
import { clockField, nonEmptyString, readOptions, type Schema, withDefault } from './read-options.js';
import { type Attributes, telemetry } from './telemetry.js';
import { show } from './validate.js';

/** Options of a pipeline: `pipeline({ name: 'checkout' }, ...policies)`. */
export interface PipelineOptions {
  /**
   * Names the pipeline in telemetry: the `bulwark.policy` of its `bulwark.pipeline.duration`
   * records (one per call through the whole pipeline). A non-empty string.
   * @default 'pipeline'
   */
  readonly name?: string | undefined;
  /** The clock that times each call for telemetry. @default systemClock */
  readonly clock?: Clock | undefined;
}

const pipelineSchema = {
  name: withDefault('pipeline', nonEmptyString),
  clock: clockField,
} satisfies Schema<PipelineOptions>;

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
export function pipeline<P extends Policy<unknown>[]>(...policies: P): Policy<PolicyExtra<P[number]>>;
/**
 * A named pipeline: `options` (a plain object, before the policies) names it in telemetry (see
 * {@link PipelineOptions}); otherwise as {@link pipeline}. An unknown option or a bad value is a
 * `TypeError` naming it.
 *
 * @example
 * const checkout = pipeline({ name: 'checkout' }, timeout(2_000), retry());
 */
export function pipeline<P extends Policy<unknown>[]>(
  options: PipelineOptions,
  ...policies: P
): Policy<PolicyExtra<P[number]>>;
export function pipeline(...args: unknown[]): Policy<unknown> {
  const named = isPlainObject(args[0]);
  const o = readOptions('pipeline options', named ? (args[0] as PipelineOptions) : undefined, pipelineSchema);
  const policies = named ? args.slice(1) : args;
  const offset = named ? 2 : 1;
  const layers = policies.map((policy, index) => {
    if (typeof (policy as Policy<unknown> | null)?.execute !== 'function') {
      throw new TypeError(`expected pipeline argument ${index + offset} to be a policy, got ${show(policy)}`);
    }
    return composable(policy as Policy<unknown>);
  });
  return new Pipeline(layers, o.name, o.clock);
}

/** A plain object without `execute`: the options of a named pipeline, not a policy. */
function isPlainObject(value: unknown): boolean {
  if (typeof value !== 'object' || value === null || 'execute' in value) return false;
  const proto = Object.getPrototypeOf(value);
  return proto === Object.prototype || proto === null;
}

class Pipeline extends BasePolicy {
  /** Its telemetry attributes by outcome, made on first use. */
  private attributes: { readonly success: Attributes; readonly failure: Attributes } | undefined;

  constructor(
    private readonly layers: readonly ComposablePolicy<unknown>[],
    private readonly name: string,
    private readonly clock: Clock,
  ) {
    super();
  }

  [runStep]<T>(next: Step<T>, context: Context): Promise<Outcome<T>> {
    const t = telemetry();
    if (t === undefined) return this.from(0, next, context);
    const startedAt = this.clock.now();
    return this.from(0, next, context).then((outcome) => {
      this.attributes ??= {
        success: { 'bulwark.policy': this.name, 'bulwark.outcome': 'success' },
        failure: { 'bulwark.policy': this.name, 'bulwark.outcome': 'failure' },
      };
      t.pipelineDuration.record(
        (this.clock.now() - startedAt) / 1_000,
        outcome.ok ? this.attributes.success : this.attributes.failure,
      );
      return outcome;
    });
  }

  private from<T>(index: number, next: Step<T>, context: Context): Promise<Outcome<T>> {
    const layer = this.layers[index];
    if (layer === undefined) return next(context);
    return layer[runStep]((ctx: Context) => this.from(index + 1, next, ctx), context);
  }
}
