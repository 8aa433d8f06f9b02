/**
 * A limiter's rule options (declared for `readOptions`) made into a {@link RateLimitRule}, and the
 * rule of the local fallback used while a shared store is down.
 */
import {
  oneOf,
  optional,
  positiveInt,
  positiveNumber,
  type ReadOptions,
  readOptions,
  required,
  type Schema,
  withDefault,
} from '../core/read-options.js';
import { show } from '../core/validate.js';
import type { RateLimitAlgorithm, RateLimitRule } from './store.js';

/** The rule options of `rateLimiter()`. */
export interface RateLimitRuleOptions {
  /** @default 'gcra' */
  readonly algorithm?: RateLimitAlgorithm | undefined;
  /** Units admitted per `periodMs` on average: a positive integer. Required. */
  readonly limit: number;
  /** The period of `limit` in milliseconds: a positive finite number. Required. */
  readonly periodMs: number;
  /**
   * The most units admitted at once (the bucket's capacity): a positive integer. For
   * `sliding-window` it is `limit` and may only be omitted or equal to it.
   * @default limit
   */
  readonly burst?: number | undefined;
  /**
   * `sliding-window` only: sub-windows per window, from 1 to 1000. More is more exact (quota comes
   * back at most `periodMs / buckets` late) and costs memory (`buckets + 1` numbers per key).
   * @default 10
   */
  readonly buckets?: number | undefined;
  /**
   * The limiter's name: its namespace in a shared store and its policy name in `RateLimit-Policy`
   * headers. 1–64 characters from `A–Z a–z 0–9 _ . : -`. Limiters sharing a store need distinct names.
   * @default 'default'
   */
  readonly name?: string | undefined;
}

const algorithms: readonly RateLimitAlgorithm[] = ['token-bucket', 'gcra', 'sliding-window'];
const namePattern = /^[A-Za-z0-9_.:-]{1,64}$/;

/** A limiter name: 1–64 characters from `A–Z a–z 0–9 _ . : -`. */
function limiterName(name: string, value: unknown): string {
  if (typeof value !== 'string' || !namePattern.test(value)) {
    throw new TypeError(
      `expected "${name}" to be 1–64 characters from A–Z a–z 0–9 _ . : -, got ${show(value)}`,
    );
  }
  return value;
}

/** The declared rule options, for the limiter's schema to spread. */
export const ruleSchema = {
  algorithm: withDefault<RateLimitAlgorithm>('gcra', oneOf(algorithms)),
  limit: required(positiveInt),
  periodMs: required(positiveNumber),
  burst: optional(positiveInt),
  buckets: optional(positiveInt),
  name: withDefault('default', limiterName),
} satisfies Schema<RateLimitRuleOptions>;

/** Reads rule options into a {@link RateLimitRule}; throws a `TypeError` naming the first bad option. */
export function ruleOf(options: RateLimitRuleOptions): RateLimitRule {
  return ruleFrom(readOptions('rule options', options, ruleSchema));
}

/**
 * Builds the rule from options already read against {@link ruleSchema} (other keys are ignored),
 * checking the rules between them; throws a `TypeError` naming the option that breaks one.
 */
export function ruleFrom(options: ReadOptions<typeof ruleSchema>): RateLimitRule {
  const { algorithm, limit, periodMs, name } = options;
  let burst: number;
  let buckets = 1;
  if (algorithm === 'sliding-window') {
    if (options.burst !== undefined && options.burst !== limit) {
      throw new TypeError(
        `expected "burst" to be omitted or equal to "limit" (${limit}) for the sliding-window algorithm, got ${show(options.burst)}`,
      );
    }
    burst = limit;
    buckets = options.buckets ?? 10;
    if (buckets > 1000)
      throw new TypeError(`expected "buckets" to be an integer from 1 to 1000, got ${buckets}`);
  } else {
    burst = options.burst ?? limit;
    if (options.buckets !== undefined) {
      throw new TypeError(
        `expected "buckets" to be omitted for the ${algorithm} algorithm (it applies to sliding-window), got ${show(options.buckets)}`,
      );
    }
  }
  if (burst * periodMs > Number.MAX_SAFE_INTEGER) {
    throw new TypeError(
      `expected "burst" × "periodMs" to be at most 2^53 − 1 (for exact arithmetic), got ${burst} × ${periodMs}`,
    );
  }
  return Object.freeze({ name, algorithm, limit, periodMs, burst, buckets });
}

/**
 * The rule of the local fallback of one of `instances` processes: the same algorithm at
 * `1 / instances` of the rate. Token bucket and GCRA keep `limit` and stretch the period (exact
 * rate) with a burst of `max(1, floor(burst / instances))`; the sliding window keeps the period
 * with a limit of `max(1, floor(limit / instances))`.
 */
export function localRuleOf(rule: RateLimitRule, instances: number): RateLimitRule {
  if (instances === 1) return rule;
  if (rule.algorithm === 'sliding-window') {
    const limit = Math.max(1, Math.floor(rule.limit / instances));
    return Object.freeze({ ...rule, limit, burst: limit });
  }
  return Object.freeze({
    ...rule,
    periodMs: rule.periodMs * instances,
    burst: Math.max(1, Math.floor(rule.burst / instances)),
  });
}

/** True when two rules decide alike (same algorithm and parameters). */
export function sameRule(a: RateLimitRule, b: RateLimitRule): boolean {
  return (
    // Stryker disable next-line ConditionalExpression: (false) the same rule object has equal fields
    a === b ||
    (a.algorithm === b.algorithm &&
      a.limit === b.limit &&
      a.periodMs === b.periodMs &&
      a.burst === b.burst &&
      a.buckets === b.buckets)
  );
}
