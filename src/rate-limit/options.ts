/**
 * The options of a rate limiter: those of `rateLimiter()` (its rule, see rule.ts, its store and how
 * it behaves when the store fails, read once at construction), and the keys `wait()` and `policy()`
 * accept.
 */

import type { Clock } from '../core/clock.js';
import { policyFields } from '../core/policy-fields.js';
import {
  boolean,
  clockField,
  nonNegativeOrInfinity,
  oneOf,
  optional,
  positiveInt,
  positiveIntOrInfinity,
  type ReadOptions,
  readOptions,
  type Schema,
  signal,
  withDefault,
} from '../core/read-options.js';
import { positive, show } from '../core/validate.js';
import type { RateLimitRejection } from './errors.js';
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
  /**
   * Most callers of `wait()` (and of `policy(key, { wait: true })`) queued on one key at once, the
   * one being served included: one more is refused at once with a `RateLimitedError` whose `reason`
   * is `queue-full`. A positive integer, or `Infinity`: the queue is then bounded only by time (a
   * waiter whose turn comes after its `maxWaitMs` is refused at once).
   * @default Infinity
   */
  readonly maxQueue?: number | undefined;
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

const waitSchema = {
  cost: optional(positiveInt),
  signal: optional(signal),
  maxWaitMs: optional(nonNegativeOrInfinity),
} satisfies Schema<RateLimitWaitOptions>;

/** `wait()` options read, the cost checked against `burst`; `maxWaitMs` undefined when absent. */
export function readWaitOptions(options: RateLimitWaitOptions | undefined, burst: number) {
  const o = readOptions('wait options', options, waitSchema);
  return { ...o, cost: o.cost === undefined ? 1 : costOf(o.cost, burst) };
}

const policySchema = {
  cost: optional(positiveInt),
  wait: withDefault(false, boolean),
  maxWaitMs: optional(nonNegativeOrInfinity),
  ...policyFields<RateLimitRejection>(),
} satisfies Schema<RateLimitPolicyOptions>;

/** `policy()` options read, the cost checked against `burst`. */
export function readPolicyOptions(options: RateLimitPolicyOptions | undefined, burst: number) {
  const o = readOptions('policy options', options, policySchema);
  return { ...o, cost: o.cost === undefined ? 1 : costOf(o.cost, burst) };
}

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
  maxQueue: withDefault(Infinity, positiveIntOrInfinity),
} satisfies Schema<RateLimiterOptions>;

/** Reads `rateLimiter` options; a `TypeError` names the first bad one. */
export function readRateLimiterOptions(options: RateLimiterOptions): ReadOptions<typeof rateLimiterSchema> {
  return readOptions('rateLimiter options', options, rateLimiterSchema);
}

/**
 * A `cost` of `take`, `wait` or `policy` under a rule of `burst`: a positive integer up to `burst`
 * (a larger cost could never be allowed). Throws a `TypeError` naming `cost` otherwise.
 */
export function costOf(cost: unknown, burst: number): number {
  // Stryker disable next-line EqualityOperator: (cost <= 1) no caller passes cost 1 here (each skips the check for it), so 1 is never refused
  if (!Number.isInteger(cost) || (cost as number) < 1) {
    throw new TypeError(`expected "cost" to be a positive integer, got ${show(cost)}`);
  }
  if ((cost as number) > burst) {
    throw new TypeError(
      `expected "cost" to be at most "burst" (${burst}): a larger cost could never be allowed, got ${cost}`,
    );
  }
  return cost as number;
}

/** The `units` of `penalty()` and `reward()`: a positive integer up to 2^53 − 1. */
export function quotaUnits(units: unknown): number {
  if (!Number.isSafeInteger(units) || (units as number) < 1) {
    throw new TypeError(`expected "units" to be a positive integer up to 2^53 − 1, got ${show(units)}`);
  }
  return units as number;
}

/** The longest `block()`: 1e12 ms, about 31.7 years (a block ends; "forever" is a deny list). */
export const MAX_BLOCK_MS = 1e12;

/** The `ms` of `block()`: a positive finite number up to {@link MAX_BLOCK_MS}. */
export function blockMs(ms: unknown): number {
  if (positive('ms', ms) > MAX_BLOCK_MS) {
    throw new TypeError(`expected "ms" to be at most 1e12 (about 31.7 years), got ${show(ms)}`);
  }
  return ms as number;
}
