/**
 * What a retry policy is told: its options and events, and the declared schema that reads them
 * once, at construction.
 */
import type { Clock } from '../core/clock.js';
import type { Listener } from '../core/events.js';
import type { PolicyOptions } from '../core/policy-events.js';
import { policyFields } from '../core/policy-fields.js';
import {
  clockField,
  func,
  instanceOf,
  listenerField,
  nonNegativeOrInfinity,
  optional,
  positiveIntOrInfinity,
  type ReadOptions,
  readOptions,
  type Schema,
  withDefault,
} from '../core/read-options.js';
import { type AttemptFailure, exponentialJitter, type RetryBackoff } from './backoff.js';
import { RetryBudget } from './budget.js';
import type { GiveUpReason } from './errors.js';

/** Options of {@link retry}, {@link retryIf} and {@link retryAll}. */
export interface RetryOptions extends PolicyOptions<never> {
  /**
   * Total attempts, the first included: `maxAttempts: 3` means one call and at most two retries.
   * (cockatiel's `maxAttempts` counts retries only; ours does not.) `Infinity` needs a finite
   * `maxElapsedMs`.
   * @default 3
   */
  readonly maxAttempts?: number | undefined;
  /**
   * Delay before retry n, told the failed attempt (`context`: its error or refused result, and
   * the milliseconds since the first attempt began). NaN or a negative delay means no wait;
   * `Infinity` or a non-number fails the call with a `TypeError`.
   * @default exponentialJitter({ baseMs: 100, maxMs: 10_000 })
   */
  readonly backoff?: RetryBackoff | undefined;
  /**
   * Retries on a value: an attempt that resolves with a value for which `handleResult(value,
   * attempt)` returns true counts as failed and is retried like a retryable error (same backoff,
   * `Retry-After` read from the value, budget, deadline, `maxElapsedMs` and `maxAttempts`). When
   * the retries run out the call resolves with the last value, as cockatiel and Polly do (never a
   * `RetriesExhaustedError`). A `handleResult` that throws ends the call with its error.
   * @default none: every value is accepted
   */
  readonly handleResult?: ResultPredicate | undefined;
  /** Stop retrying once the next attempt would start later than this after the first began. @default Infinity */
  readonly maxElapsedMs?: number | undefined;
  /**
   * The longest wait a failure may ask for (its `retryAfterMs` or HTTP `Retry-After`) that the
   * policy still waits out. A failure asking for more is not retried: the call fails at once with
   * that error, unwrapped, so the caller still sees its `retryAfterMs` (`onGiveUp` reason
   * `'retry-after'`). `Infinity` waits whatever is asked (the deadline and `maxElapsedMs` still apply).
   * @default 60_000
   */
  readonly maxRetryAfterMs?: number | undefined;
  /**
   * A shared {@link RetryBudget}; a refused retry ends the call at once with the original error
   * (or the refused value).
   */
  readonly budget?: RetryBudget | undefined;
  /** @default systemClock */
  readonly clock?: Clock | undefined;
  /** Called before each backoff sleep. */
  readonly onRetry?: Listener<RetryEvent> | undefined;
  /** Called when a retryable failure is not retried (attempts, time, deadline or budget spent). */
  readonly onGiveUp?: Listener<GiveUpEvent> | undefined;
}

/**
 * Emitted before each retry: the attempt that failed, how long the policy waits, and what the
 * attempt gave: its `error`, or (with `handleResult`) the refused `result`; `'result' in event`
 * tells them apart.
 */
export type RetryEvent = {
  /** The attempt that just failed (1 = the first call). */
  readonly attempt: number;
  /** How long the policy will sleep before the next attempt. */
  readonly delayMs: number;
} & AttemptFailure;

/**
 * Emitted when the policy stops retrying a failure it would otherwise retry: how many attempts ran,
 * why it stopped, and what the last attempt gave: its `error`, or the refused `result` (which the
 * call then resolves with); `'result' in event` tells them apart.
 */
export type GiveUpEvent = {
  /** Attempts made, the first included. */
  readonly attempts: number;
  /**
   * Why: `attempts`, `elapsed`, `deadline`, `budget` (the shared budget refused) or `retry-after`
   * (the failure asked for a longer wait than `maxRetryAfterMs`).
   */
  readonly reason: GiveUpReason | DeclineReason;
} & AttemptFailure;

/** Why a retry was declined, the failure returned unwrapped: the retry never happened. */
export type DeclineReason = 'budget' | 'retry-after';

/** Decides whether an error is worth another attempt. */
export type RetryPredicate = (error: unknown, attempt: number) => boolean;

/**
 * Decides whether a value an attempt resolved with is a failure worth another attempt (`true`), or
 * the call's answer (`false`). It sees any value: narrow it (`value instanceof Response && ...`).
 */
export type ResultPredicate = (value: unknown, attempt: number) => boolean;

const retrySchema = {
  maxAttempts: withDefault(3, positiveIntOrInfinity),
  backoff: withDefault<RetryBackoff>(exponentialJitter({ baseMs: 100, maxMs: 10_000 }), func<RetryBackoff>()),
  handleResult: optional(func<ResultPredicate>()),
  maxElapsedMs: withDefault(Infinity, nonNegativeOrInfinity),
  maxRetryAfterMs: withDefault(60_000, nonNegativeOrInfinity),
  budget: optional(instanceOf(RetryBudget, 'a RetryBudget from retryBudget()')),
  clock: clockField,
  onRetry: listenerField<RetryEvent>(),
  onGiveUp: listenerField<GiveUpEvent>(),
  ...policyFields<never>(),
} satisfies Schema<RetryOptions>;

/** Retry options, checked and with their defaults. */
export type RetrySettings = ReadOptions<typeof retrySchema>;

/**
 * Reads `retry` options; a `TypeError` names the first bad one (or `maxAttempts: Infinity` without
 * a finite `maxElapsedMs`).
 */
export function readRetryOptions(options: RetryOptions | undefined): RetrySettings {
  const o = readOptions('retry options', options, retrySchema);
  if (o.maxAttempts === Infinity && o.maxElapsedMs === Infinity) {
    throw new TypeError('expected "maxElapsedMs" to be finite when "maxAttempts" is Infinity, got Infinity');
  }
  return o;
}
