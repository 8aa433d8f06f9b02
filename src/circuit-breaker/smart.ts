import type { Clock } from '../core/clock.js';
import type { Context } from '../core/context.js';
import type { Outcome } from '../core/outcome.js';
import { BasePolicy, runStep, type Step } from '../core/policy.js';
import { optionsObject } from '../core/validate.js';
import { type Backoff, exponentialJitter } from '../retry/backoff.js';
import type { RetryBudget } from '../retry/budget.js';
import { type RetryPolicy, retry } from '../retry/retry.js';
import { type CircuitBreakerPolicy, circuitBreaker } from './circuit-breaker.js';
import type { CircuitBreakerOptions } from './options.js';

/** Options of {@link smartResilience}. Every default is {@link inferredResilient}'s. */
export interface SmartResilienceOptions {
  /** Total attempts per logical call, the first included. @default 4 */
  readonly maxAttempts?: number;
  /** @default exponentialJitter({ baseMs: 100, maxMs: 2_000 }) */
  readonly backoff?: Backoff;
  /** Failed logical calls in a row that open the breaker. @default 5 */
  readonly failureThreshold?: number;
  /** Open time before half-opening. @default 10_000 */
  readonly resetTimeoutMs?: number;
  /** The whole logical call's time limit, retries and backoffs included (stretched while failing). @default 3_000 */
  readonly callTimeoutMs?: number;
  /** A shared retry budget. */
  readonly budget?: RetryBudget;
  /** @default systemClock */
  readonly clock?: Clock;
  /** Any other breaker option (failureRate, halfOpenProbes, resetBackoff, onStateChange, ...). */
  readonly breaker?: Omit<
    CircuitBreakerOptions,
    'failureThreshold' | 'resetTimeoutMs' | 'callTimeoutMs' | 'clock'
  >;
}

/**
 * The kind-driven composite: `breaker(retry(operation))`. Exposes its parts for telemetry
 * (`breaker.state`, `breaker.onStateChange`, `retry.onRetry`).
 */
export class SmartResiliencePolicy extends BasePolicy {
  /** The outer circuit breaker: one outcome per logical call. */
  readonly breaker: CircuitBreakerPolicy;
  /** The inner retry. */
  readonly retry: RetryPolicy;

  /** Use {@link smartResilience}. */
  constructor(options?: SmartResilienceOptions) {
    super();
    const o = optionsObject('smartResilience options', options);
    const clock = o.clock;
    this.breaker = circuitBreaker({
      ...optionsObject('breaker', o.breaker),
      failureThreshold: o.failureThreshold ?? 5,
      resetTimeoutMs: o.resetTimeoutMs ?? 10_000,
      callTimeoutMs: o.callTimeoutMs ?? 3_000,
      ...(clock === undefined ? {} : { clock }),
    });
    this.retry = retry({
      maxAttempts: o.maxAttempts ?? 4,
      backoff: o.backoff ?? exponentialJitter({ baseMs: 100, maxMs: 2_000 }),
      ...(o.budget === undefined ? {} : { budget: o.budget }),
      ...(clock === undefined ? {} : { clock }),
    });
  }

  [runStep]<T>(next: Step<T>, context: Context): Promise<Outcome<T>> {
    return this.breaker[runStep]((ctx: Context) => this.retry[runStep](next, ctx), context);
  }
}

/**
 * Retry inside a circuit breaker, decided by error kind — `breaker(retry(operation))`:
 *
 * - the breaker is OUTSIDE, so it sees one outcome per logical call (after its retries), and its
 *   `callTimeoutMs` bounds the whole call, backoffs included; an open breaker fails fast without
 *   reaching the retry;
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
 * to 2 s; the breaker opens after 5 consecutive failed calls and half-opens after 10 s; each call
 * is bounded to 3 s. Only `clock` (for tests) can be set.
 *
 * @example
 * const resilient = inferredResilient();
 * await resilient.execute(({ signal }) => fetch(url, { signal }).then(check));
 */
export function inferredResilient(options?: { readonly clock?: Clock }): SmartResiliencePolicy {
  const o = optionsObject('inferredResilient options', options);
  return new SmartResiliencePolicy(o.clock === undefined ? undefined : { clock: o.clock });
}
