/**
 * What a hedging policy is told, and the declared schema that reads it once, at construction.
 */
import type { Clock } from '../core/clock.js';
import type { Operation } from '../core/context.js';
import type { Listener } from '../core/events.js';
import type { PolicyOptions } from '../core/policy-events.js';
import { policyFields } from '../core/policy-fields.js';
import {
  clockField,
  func,
  instanceOf,
  listenerField,
  nonNegativeNumber,
  optional,
  positiveInt,
  type ReadOptions,
  readOptions,
  type Schema,
  withDefault,
} from '../core/read-options.js';
import { isFunction, show } from '../core/validate.js';
import { RetryBudget } from '../retry/budget.js';
import type { HedgeEvent } from './hedge-call.js';

/** Options of {@link hedge}. */
export interface HedgeOptions<V = never> extends PolicyOptions<never> {
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

/** A non-empty array of operations, copied (changing the caller's array later changes nothing). */
function variantsOption(_name: string, value: unknown): readonly Operation<unknown>[] {
  if (!Array.isArray(value) || value.length === 0) {
    throw new TypeError(`expected "variants" to be a non-empty array of functions, got ${show(value)}`);
  }
  for (let index = 0; index < value.length; index++) isFunction(`variants[${index}]`, value[index]);
  // A copy: changing the caller's array later does not change what the policy runs.
  return Object.freeze([...(value as Operation<unknown>[])]);
}

const hedgeSchema = {
  attempts: optional(positiveInt),
  delayMs: withDefault(2_000, nonNegativeNumber),
  variants: optional(variantsOption),
  isFatal: optional(func<(error: unknown) => boolean>()),
  budget: optional(instanceOf(RetryBudget, 'a RetryBudget from retryBudget()')),
  clock: clockField,
  onHedge: listenerField<HedgeEvent>(),
  ...policyFields<never>(),
} satisfies Schema<HedgeOptions>;

/** Hedge options, checked, with `attempts` settled against `variants`. */
export type HedgeOptionsRead = Omit<ReadOptions<typeof hedgeSchema>, 'attempts'> & {
  readonly attempts: number;
};

/**
 * Reads `hedge` options; a `TypeError` names the first bad one (or `attempts` that differs from
 * the number of `variants`).
 */
export function readHedgeOptions(options: HedgeOptions<unknown> | undefined): HedgeOptionsRead {
  const o = readOptions('hedge options', options, hedgeSchema);
  const attempts = o.attempts ?? o.variants?.length ?? 2;
  if (o.variants !== undefined && attempts !== o.variants.length) {
    throw new TypeError(
      `expected "attempts" to equal the number of variants (${o.variants.length}), got ${show(attempts)}`,
    );
  }
  return { ...o, attempts };
}
