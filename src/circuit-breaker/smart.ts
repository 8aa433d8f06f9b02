import type { Clock } from '../core/clock.js';
import type { Context } from '../core/context.js';
import type { Outcome } from '../core/outcome.js';
import { BasePolicy, runStep, type Step } from '../core/policy.js';
import {
  clockField,
  func,
  instanceOf,
  nested,
  optional,
  positiveInt,
  positiveIntOrInfinity,
  positiveNumber,
  readOptions,
  type Schema,
  withDefault,
} from '../core/read-options.js';
import { exponentialJitter, type RetryBackoff } from '../retry/backoff.js';
import { RetryBudget } from '../retry/budget.js';
import { type RetryPolicy, retry } from '../retry/retry.js';
import { type TimeoutPolicy, timeout } from '../timeout/timeout.js';
import { type CircuitBreakerPolicy, circuitBreaker } from './circuit-breaker.js';
import { type CircuitBreakerOptions, circuitBreakerSchema } from './options.js';

/**
 * Options of {@link smartResilience}. Every default is {@link inferredResilient}'s, except
 * `attemptTimeoutMs` (none here, 1 s there).
 */
export interface SmartResilienceOptions {
  /** Total attempts per logical call, the first included. @default 4 */
  readonly maxAttempts?: number | undefined;
  /**
   * Delay before each retry, as `retry({ backoff })` takes it: it may read the failed attempt
   * (`(retry, { error, result, elapsedMs }) => ms`).
   * @default exponentialJitter({ baseMs: 100, maxMs: 2_000 })
   */
  readonly backoff?: RetryBackoff | undefined;
  /** Failed logical calls in a row that open the breaker. @default 5 */
  readonly failureThreshold?: number | undefined;
  /** Open time before half-opening. @default 10_000 */
  readonly resetTimeoutMs?: number | undefined;
  /** The whole logical call's time limit, retries and backoffs included (stretched while failing). @default 3_000 */
  readonly callTimeoutMs?: number | undefined;
  /**
   * Each attempt's time limit, inside the retry: a hung attempt is cut at this limit (its signal
   * aborts, it fails with `TimeoutError`) and retried while the call's time lasts. Rejects at the
   * limit even if the operation ignores its signal, unless `breaker.callTimeoutMode` is
   * `'cooperative'`, which then applies to both limits. @default none (`inferredResilient`: 1_000)
   */
  readonly attemptTimeoutMs?: number | undefined;
  /** A shared retry budget. */
  readonly budget?: RetryBudget | undefined;
  /** @default systemClock */
  readonly clock?: Clock | undefined;
  /** Any other breaker option (failureRate, halfOpenProbes, resetBackoff, onStateChange, ...). */
  readonly breaker?:
    | Omit<CircuitBreakerOptions, 'failureThreshold' | 'resetTimeoutMs' | 'callTimeoutMs' | 'clock'>
    | undefined;
}

// The breaker options `breaker` may carry: all but those smartResilience sets itself.
const {
  failureThreshold: _failureThreshold,
  resetTimeoutMs: _resetTimeoutMs,
  callTimeoutMs: _callTimeoutMs,
  clock: _clock,
  ...breakerSchema
} = circuitBreakerSchema;

const smartSchema = {
  maxAttempts: withDefault(4, positiveIntOrInfinity),
  backoff: withDefault<RetryBackoff>(exponentialJitter({ baseMs: 100, maxMs: 2_000 }), func<RetryBackoff>()),
  failureThreshold: withDefault(5, positiveInt),
  resetTimeoutMs: withDefault(10_000, positiveNumber),
  callTimeoutMs: withDefault(3_000, positiveNumber),
  attemptTimeoutMs: optional(positiveNumber),
  budget: optional(instanceOf(RetryBudget, 'a RetryBudget from retryBudget()')),
  clock: clockField,
  breaker: optional(nested(breakerSchema)),
} satisfies Schema<SmartResilienceOptions>;

/**
 * The kind-driven composite: `breaker(retry(attemptTimeout?(operation)))`. Exposes its parts for
 * telemetry (`breaker.state`, `breaker.onStateChange`, `retry.onRetry`).
 */
export class SmartResiliencePolicy extends BasePolicy {
  /** The outer circuit breaker: one outcome per logical call. */
  readonly breaker: CircuitBreakerPolicy;
  /** The retry inside the breaker. */
  readonly retry: RetryPolicy;
  /** Each attempt's timeout, inside the retry; undefined without `attemptTimeoutMs`. */
  readonly attemptTimeout: TimeoutPolicy | undefined;

  /** Use {@link smartResilience}. */
  constructor(options?: SmartResilienceOptions) {
    super();
    const o = readOptions('smartResilience options', options, smartSchema);
    const { clock } = o;
    this.breaker = circuitBreaker({
      ...o.breaker,
      failureThreshold: o.failureThreshold,
      resetTimeoutMs: o.resetTimeoutMs,
      callTimeoutMs: o.callTimeoutMs,
      clock,
    });
    this.retry = retry({ maxAttempts: o.maxAttempts, backoff: o.backoff, budget: o.budget, clock });
    this.attemptTimeout =
      o.attemptTimeoutMs === undefined
        ? undefined
        : timeout(o.attemptTimeoutMs, { mode: o.breaker?.callTimeoutMode ?? 'aggressive', clock });
  }

  [runStep]<T>(next: Step<T>, context: Context): Promise<Outcome<T>> {
    const attemptTimeout = this.attemptTimeout;
    const attempt: Step<T> =
      attemptTimeout === undefined ? next : (ctx: Context) => attemptTimeout[runStep](next, ctx);
    return this.breaker[runStep]((ctx: Context) => this.retry[runStep](attempt, ctx), context);
  }
}

/**
 * Retry inside a circuit breaker, decided by error kind — `breaker(retry(operation))`, or
 * `breaker(retry(timeout(operation)))` with `attemptTimeoutMs`:
 *
 * - the breaker is OUTSIDE, so it sees one outcome per logical call (after its retries), and its
 *   `callTimeoutMs` bounds the whole call, every attempt and backoff together; an open breaker
 *   fails fast without reaching the retry;
 * - `attemptTimeoutMs` bounds each attempt: a hung attempt is cut and retried;
 * - permanent kinds (`invalid`, `unauthorized`, `forbidden`, `not_found`, `conflict`) fail on the
 *   first attempt, use no retries and never count against the breaker;
 * - `rate_limited` / `unavailable` errors that say how long to wait (`retryAfterMs`,
 *   `Retry-After`) are waited out when that fits the deadline; otherwise the call gives up at once.
 *
 * Throws a `TypeError` naming the option for invalid options (checked by the breaker and retry).
 *
 * @example
 * const inventory = smartResilience({ callTimeoutMs: 2_000 });
 * const stock = await inventory.execute(({ signal }) => inventoryApi.get(sku, { signal }));
 */
export function smartResilience(options?: SmartResilienceOptions): SmartResiliencePolicy {
  return new SmartResiliencePolicy(options);
}

/**
 * Zero-config {@link smartResilience}: 4 attempts (3 retries) with exponential jitter from 100 ms
 * to 2 s, each attempt bounded to 1 s (a hung attempt is cut and retried); the breaker opens after
 * 5 consecutive failed calls and half-opens after 10 s; each call, all attempts together, is
 * bounded to 3 s. Only `clock` (for tests) can be set.
 *
 * @example
 * const resilient = inferredResilient();
 * await resilient.execute(({ signal }) => fetch(url, { signal }).then(check));
 */
export function inferredResilient(options?: { readonly clock?: Clock | undefined }): SmartResiliencePolicy {
  const { clock } = readOptions('inferredResilient options', options, { clock: clockField });
  return new SmartResiliencePolicy({ attemptTimeoutMs: 1_000, clock });
}
