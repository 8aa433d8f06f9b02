import type { Clock } from '../core/clock.js';
import { systemClock } from '../core/clock.js';
import type { Listener } from '../core/events.js';
import {
  inRange,
  isClock,
  isFunction,
  nonNegative,
  optionsObject,
  positive,
  positiveInteger,
  show,
} from '../core/validate.js';
import type { RateRule } from './window.js';

/** The states of a circuit breaker. */
export type CircuitState = 'closed' | 'open' | 'half-open' | 'isolated';

/** Trip on the share of failed calls in a sliding time window. */
export interface FailureRateOptions {
  /** Share of failed calls (0 < threshold ≤ 1) that opens the circuit, e.g. 0.5. */
  readonly threshold: number;
  /** The sliding window, kept in 10 buckets. */
  readonly windowMs: number;
  /** Fewest calls in the window before the rate is judged at all. @default 20 */
  readonly minimumThroughput?: number;
}

/** A state change. */
export interface StateChangeEvent {
  readonly from: CircuitState;
  readonly to: CircuitState;
}

/** A call refused without running. */
export interface RejectedEvent {
  readonly state: 'open' | 'half-open' | 'isolated';
  readonly retryAfterMs: number | undefined;
}

/** What {@link CircuitBreakerPolicy.toJSON} saves and `initialState` restores. */
export interface CircuitSnapshot {
  readonly state: CircuitState;
  /** Failures since the last success. */
  readonly consecutiveFailures: number;
  /** While open: when it half-opens (absolute time on the clock; epoch ms for `systemClock`). */
  readonly openUntil?: number;
  /** Re-opens since the last close (drives `resetBackoff`). */
  readonly reopenCount: number;
}

/** Options of `circuitBreaker`. */
export interface CircuitBreakerOptions {
  /**
   * Open after this many consecutive failed calls. Without `failureRate` (or a slow-call rule) it
   * defaults to 5; with both, either rule opens it.
   */
  readonly failureThreshold?: number;
  /** Open when the share of failed calls in a sliding time window reaches `threshold`. */
  readonly failureRate?: FailureRateOptions;
  /** A call at least this slow counts as slow (for `slowCallRate`), even when it succeeds. */
  readonly slowCallMs?: number;
  /**
   * Open when the share of slow calls reaches this (0 < rate ≤ 1), judged over `failureRate`'s
   * window and minimum throughput (or a 10 s window and 20 calls without `failureRate`).
   */
  readonly slowCallRate?: number;
  /** How long it stays open before half-opening. @default 10_000 */
  readonly resetTimeoutMs?: number;
  /** Each consecutive re-open multiplies the open time by this (≥ 1). @default 1 */
  readonly resetBackoff?: number;
  /** Ceiling of the open time under `resetBackoff`. @default 16 × resetTimeoutMs */
  readonly maxResetTimeoutMs?: number;
  /** Concurrent probes admitted while half-open; every other caller is refused at once. @default 1 */
  readonly halfOpenProbes?: number;
  /** Probe successes that close it. @default 1 */
  readonly successThreshold?: number;
  /**
   * Each admitted call's time limit; while consecutive failures accumulate it stretches to
   * `callTimeoutMs × (1 + failures / 10)`, capped by `maxCallTimeoutMs`. A caller's earlier
   * deadline always wins. @default none
   */
  readonly callTimeoutMs?: number;
  /** Cap of the stretched call timeout. @default 3 × callTimeoutMs */
  readonly maxCallTimeoutMs?: number;
  /**
   * Which errors count as failures. @default kinds `transient`, `timeout`, `unavailable`,
   * `overloaded`, `internal`; never a caller abort.
   */
  readonly isFailure?: (error: unknown) => boolean;
  /** Restores a state saved with `toJSON()`. */
  readonly initialState?: CircuitSnapshot;
  /** @default systemClock */
  readonly clock?: Clock;
  readonly onStateChange?: Listener<StateChangeEvent>;
  readonly onRejected?: Listener<RejectedEvent>;
}

/** Options after validation and defaults. */
export interface ResolvedOptions {
  readonly failureThreshold: number; // Infinity: rule off
  readonly failureRate: RateRule | undefined;
  readonly slowCallMs: number; // Infinity: rule off
  readonly slowRate: RateRule | undefined;
  readonly windowMs: number;
  readonly resetTimeoutMs: number;
  readonly resetBackoff: number;
  readonly maxResetTimeoutMs: number;
  readonly halfOpenProbes: number;
  readonly successThreshold: number;
  readonly callTimeoutMs: number | undefined;
  readonly maxCallTimeoutMs: number;
  readonly isFailure: ((error: unknown) => boolean) | undefined;
  readonly initialState: CircuitSnapshot | undefined;
  readonly clock: Clock;
}

const states: readonly CircuitState[] = ['closed', 'open', 'half-open', 'isolated'];

/** Validates `circuitBreaker` options; throws a TypeError naming the first bad option. */
export function resolveOptions(options: CircuitBreakerOptions | undefined): ResolvedOptions {
  const o = optionsObject('circuitBreaker options', options);
  let failureRate: RateRule | undefined;
  let windowMs = 10_000;
  let minimumThroughput = 20;
  if (o.failureRate !== undefined) {
    const rate = optionsObject('failureRate', o.failureRate);
    const threshold = inRange('failureRate.threshold', rate.threshold, Number.MIN_VALUE, 1);
    windowMs = positive('failureRate.windowMs', rate.windowMs);
    minimumThroughput = positiveInteger('failureRate.minimumThroughput', rate.minimumThroughput ?? 20);
    failureRate = { threshold, minimumThroughput };
  }
  if ((o.slowCallMs === undefined) !== (o.slowCallRate === undefined)) {
    throw new TypeError('expected "slowCallMs" and "slowCallRate" to be given together');
  }
  const slowRate =
    o.slowCallRate === undefined
      ? undefined
      : { threshold: inRange('slowCallRate', o.slowCallRate, Number.MIN_VALUE, 1), minimumThroughput };
  const slowCallMs = o.slowCallMs === undefined ? Infinity : positive('slowCallMs', o.slowCallMs);
  const failureThreshold =
    o.failureThreshold !== undefined
      ? positiveInteger('failureThreshold', o.failureThreshold)
      : failureRate === undefined && slowRate === undefined
        ? 5
        : Infinity;
  const resetTimeoutMs = positive('resetTimeoutMs', o.resetTimeoutMs ?? 10_000);
  const resetBackoff = inRange('resetBackoff', o.resetBackoff ?? 1, 1, Number.MAX_VALUE);
  const maxResetTimeoutMs = positive('maxResetTimeoutMs', o.maxResetTimeoutMs ?? 16 * resetTimeoutMs);
  if (maxResetTimeoutMs < resetTimeoutMs) {
    throw new TypeError(
      `expected "maxResetTimeoutMs" (${maxResetTimeoutMs}) to be at least "resetTimeoutMs" (${resetTimeoutMs})`,
    );
  }
  const callTimeoutMs =
    o.callTimeoutMs === undefined ? undefined : positive('callTimeoutMs', o.callTimeoutMs);
  if (o.maxCallTimeoutMs !== undefined && callTimeoutMs === undefined) {
    throw new TypeError('expected "callTimeoutMs" with "maxCallTimeoutMs"');
  }
  const maxCallTimeoutMs =
    callTimeoutMs === undefined
      ? Infinity
      : positive('maxCallTimeoutMs', o.maxCallTimeoutMs ?? 3 * callTimeoutMs);
  if (callTimeoutMs !== undefined && maxCallTimeoutMs < callTimeoutMs) {
    throw new TypeError(
      `expected "maxCallTimeoutMs" (${maxCallTimeoutMs}) to be at least "callTimeoutMs" (${callTimeoutMs})`,
    );
  }
  return {
    failureThreshold,
    failureRate,
    slowCallMs,
    slowRate,
    windowMs,
    resetTimeoutMs,
    resetBackoff,
    maxResetTimeoutMs,
    halfOpenProbes: positiveInteger('halfOpenProbes', o.halfOpenProbes ?? 1),
    successThreshold: positiveInteger('successThreshold', o.successThreshold ?? 1),
    callTimeoutMs,
    maxCallTimeoutMs,
    isFailure: o.isFailure === undefined ? undefined : isFunction('isFailure', o.isFailure),
    initialState: o.initialState === undefined ? undefined : snapshot(o.initialState),
    clock: o.clock === undefined ? systemClock : isClock<Clock>('clock', o.clock),
  };
}

function snapshot(value: unknown): CircuitSnapshot {
  const s = optionsObject('initialState', value as CircuitSnapshot);
  if (!states.includes(s.state as CircuitState)) {
    throw new TypeError(
      `expected "initialState.state" to be one of ${states.map((x) => `"${x}"`).join(', ')}, got ${show(s.state)}`,
    );
  }
  const consecutiveFailures = nonNegative('initialState.consecutiveFailures', s.consecutiveFailures ?? 0);
  const reopenCount = nonNegative('initialState.reopenCount', s.reopenCount ?? 0);
  if (s.state === 'open' && (typeof s.openUntil !== 'number' || !Number.isFinite(s.openUntil))) {
    throw new TypeError(
      `expected "initialState.openUntil" to be a finite number for an open circuit, got ${show(s.openUntil)}`,
    );
  }
  return s.state === 'open'
    ? { state: 'open', consecutiveFailures, reopenCount, openUntil: s.openUntil as number }
    : { state: s.state as CircuitState, consecutiveFailures, reopenCount };
}
