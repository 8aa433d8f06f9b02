/**
 * The options of a rate limiter: those of `rateLimiter()` (its rule, see rule.ts, its store and how
 * it behaves when the store fails, read once at construction), and the keys `wait()` and `policy()`
 * accept.
 */

import type { Clock } from '../core/clock.js';
import { policyOptionKeys } from '../core/policy-events.js';
import {
  clockField,
  oneOf,
  optional,
  positiveInt,
  type ReadOptions,
  readOptions,
  type Schema,
  withDefault,
} from '../core/read-options.js';
import { optionKeys, show } from '../core/validate.js';
import type { RateLimitPolicyOptions } from './rate-limit-policy.js';
import { type RateLimitRuleOptions, ruleSchema } from './rule.js';
import type { RateLimitStore } from './store.js';

/** What a limiter does when its store fails or misses its deadline (the `storeFailure` option). */
export type StoreFailureMode = 'fail-open' | 'fail-closed' | 'local';

/** Options of `rateLimiter()`. */
export interface RateLimiterOptions extends RateLimitRuleOptions {
  /**
   * Where per-key state lives and decisions are made. A store shared by several limiters needs
   * distinct limiter `name`s.
   * @default a new in-memory store (`memoryRateLimitStore({ maxKeys, clock })`)
   */
  readonly store?: RateLimitStore | undefined;
  /**
   * Bound of every per-key map the limiter keeps: the default in-memory store, the local memory of
   * blocked keys and the `local` fallback. Least recently used keys are evicted first; an evicted key
   * restarts at full capacity. A bound, not an allocation: the maps grow with the keys actually used,
   * so any positive integer works (`2 ** 32` included); anything else is a `TypeError`.
   * @default 10_000
   */
  readonly maxKeys?: number | undefined;
  /** Time for the in-memory store, waits and the blocked-key memory. @default systemClock */
  readonly clock?: Clock | undefined;
  /**
   * When the store fails (a Redis error, or no answer within its deadline):
   * - `fail-closed`: `take`/`wait` reject and `policy` throws the `StoreUnavailableError` (kind
   *   `unavailable`, HTTP 503): nothing is admitted that the shared limit did not admit, and the
   *   failure is visible.
   * - `fail-open`: admit, with `fallback: 'fail-open'` on the result.
   * - `local`: decide with an in-memory limiter at `1 / instances` of the rule, kept warm with this
   *   process's admitted traffic while the store works; results carry `fallback: 'local'`.
   *
   * Either way the failure is never reported as a refusal, and `onStoreError` listeners hear of it.
   * Irrelevant for the in-memory store, which cannot fail.
   * @default 'fail-closed'
   */
  readonly storeFailure?: StoreFailureMode | undefined;
  /** How many processes share the limit: the `local` fallback admits `1 / instances` of it. @default 1 */
  readonly instances?: number | undefined;
}

/** Options of `limiter.wait()`. */
export interface RateLimitWaitOptions {
  /** Units to take. @default 1 */
  readonly cost?: number | undefined;
  /** Gives up waiting: the wait rejects with `signal.reason`. */
  readonly signal?: AbortSignal | undefined;
  /**
   * Longest to wait. When this waiter's turn (estimated from its queue position: the units queued
   * ahead plus its own cost, at the rule's rate) comes later than this, `wait` rejects at once with a
   * `RateLimitedError` rather than sleeping in vain; one that leaves at this limit gets the estimate
   * as `retryAfterMs` (≥ 1). Judged from when the store was asked, in whole ms, so on a remote store
   * the wait may end up to one round trip later.
   * @default the longest an uncontended key can need: burst × periodMs / limit (token bucket, GCRA),
   * periodMs + periodMs / buckets (sliding window)
   */
  readonly maxWaitMs?: number | undefined;
}

/** The keys `wait()` accepts. */
export const waitOptionKeys = optionKeys<RateLimitWaitOptions>({
  // Stryker disable next-line BooleanLiteral: optionKeys reads only the keys; the value is the type's required `true`
  cost: true,
  // Stryker disable next-line BooleanLiteral: optionKeys reads only the keys; the value is the type's required `true`
  signal: true,
  // Stryker disable next-line BooleanLiteral: optionKeys reads only the keys; the value is the type's required `true`
  maxWaitMs: true,
});
/** The keys `policy()` accepts. */
export const rateLimitPolicyOptionKeys = optionKeys<RateLimitPolicyOptions>({
  // Stryker disable next-line BooleanLiteral: optionKeys reads only the keys; the value is the type's required `true`
  cost: true,
  // Stryker disable next-line BooleanLiteral: optionKeys reads only the keys; the value is the type's required `true`
  wait: true,
  // Stryker disable next-line BooleanLiteral: optionKeys reads only the keys; the value is the type's required `true`
  maxWaitMs: true,
  ...policyOptionKeys,
});

/** Any object with `take`, `peek` and `reset`. */
function rateLimitStore(name: string, value: unknown): RateLimitStore {
  const store = value as Partial<RateLimitStore> | null;
  if (
    store === null ||
    typeof store !== 'object' ||
    typeof store.take !== 'function' ||
    typeof store.peek !== 'function' ||
    typeof store.reset !== 'function'
  ) {
    throw new TypeError(`expected "${name}" to be a RateLimitStore (take, peek, reset), got ${show(value)}`);
  }
  return value as RateLimitStore;
}

const rateLimiterSchema = {
  ...ruleSchema,
  store: optional(rateLimitStore),
  maxKeys: withDefault(10_000, positiveInt),
  clock: clockField,
  storeFailure: withDefault<StoreFailureMode>('fail-closed', oneOf(['fail-open', 'fail-closed', 'local'])),
  instances: withDefault(1, positiveInt),
} satisfies Schema<RateLimiterOptions>;

/** Reads `rateLimiter` options; a `TypeError` names the first bad one. */
export function readRateLimiterOptions(options: RateLimiterOptions): ReadOptions<typeof rateLimiterSchema> {
  return readOptions('rateLimiter options', options, rateLimiterSchema);
}
