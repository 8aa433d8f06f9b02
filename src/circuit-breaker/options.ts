import type { Clock } from '../core/clock.js';
import { systemClock } from '../core/clock.js';
import type { Listener } from '../core/events.js';
import {
  inRange,
  isClock,
  isFunction,
  nonNegative,
  oneOf,
  optionKeys,
  optionsObject,
  positive,
  positiveInteger,
  show,
} from '../core/validate.js';
import type { RateRule } from './window.js';

/** The states of a circuit breaker. */
export type CircuitState = 'closed' | 'open' | 'half-open' | 'isolated';

/** How the breaker's `callTimeoutMs` treats a call still running at its limit. */
export type CallTimeoutMode = 'aggressive' | 'cooperative';

/** Trip on the share of failed calls in a sliding time window. */
export interface FailureRateOptions {
  /** Share of failed calls (0 < threshold ≤ 1) that opens the circuit, e.g. 0.5. */
  readonly threshold: number;
  /** The sliding window, kept in 10 buckets. */
  readonly windowMs: number;
  /** Fewest calls in the window before the rate is judged at all. @default 20 */
  readonly minimumThroughput?: number | undefined;
}

const failureRateOptionKeys = optionKeys<FailureRateOptions>({
  threshold: true,
  windowMs: true,
  minimumThroughput: true,
});

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
  readonly openUntil?: number | undefined;
  /** Re-opens since the last close (drives `resetBackoff`). */
  readonly reopenCount: number;
}

/** Options of `circuitBreaker`. */
export interface CircuitBreakerOptions {
  /**
   * Open after this many consecutive failed calls. Without `failureRate` (or a slow-call rule) it
   * defaults to 5; with both, either rule opens it.
   */
  readonly failureThreshold?: number | undefined;
  /** Open when the share of failed calls in a sliding time window reaches `threshold`. */
  readonly failureRate?: FailureRateOptions | undefined;
  /** A call at least this slow counts as slow (for `slowCallRate`), even when it succeeds. */
  readonly slowCallMs?: number | undefined;
  /**
   * Open when the share of slow calls reaches this (0 < rate ≤ 1), judged over `failureRate`'s
   * window and minimum throughput (or a 10 s window and 20 calls without `failureRate`).
   */
  readonly slowCallRate?: number | undefined;
  /** How long it stays open before half-opening. @default 10_000 */
  readonly resetTimeoutMs?: number | undefined;
  /** Each consecutive re-open multiplies the open time by this (≥ 1). @default 1 */
  readonly resetBackoff?: number | undefined;
  /** Ceiling of the open time under `resetBackoff`. @default 16 × resetTimeoutMs */
  readonly maxResetTimeoutMs?: number | undefined;
  /** Concurrent probes admitted while half-open; every other caller is refused at once. @default 1 */
  readonly halfOpenProbes?: number | undefined;
  /** Probe successes that close it. @default 1 */
  readonly successThreshold?: number | undefined;
  /**
   * Each admitted call's time limit; while consecutive failures accumulate it stretches to
   * `callTimeoutMs × (1 + failures / 10)`, capped by `maxCallTimeoutMs`. A caller's earlier
   * deadline always wins. A call past it fails with `TimeoutError` and is a timeout failure,
   * whatever the operation returns later (see `callTimeoutMode`). @default none
   */
  readonly callTimeoutMs?: number | undefined;
  /** Cap of the stretched call timeout. @default 3 × callTimeoutMs */
  readonly maxCallTimeoutMs?: number | undefined;
  /**
   * `'aggressive'`: at the limit the call's signal aborts and the call rejects with `TimeoutError`
   * at once, even if the operation ignores its signal (as opossum does). `'cooperative'`: the
   * signal aborts and the breaker waits for the operation to settle, then rejects with
   * `TimeoutError` all the same (a late failure is its `cause`, a late value is dropped), so no
   * work outlives the call. Needs `callTimeoutMs`. @default 'aggressive'
   */
  readonly callTimeoutMode?: CallTimeoutMode | undefined;
  /**
   * Which errors count as failures. @default kinds `transient`, `timeout`, `unavailable`,
   * `overloaded`, `internal`; never a caller abort.
   */
  readonly isFailure?: ((error: unknown) => boolean) | undefined;
  /** Restores a state saved with `toJSON()`. */
  readonly initialState?: CircuitSnapshot | undefined;
  /** @default systemClock */
  readonly clock?: Clock | undefined;
  readonly onStateChange?: Listener<StateChangeEvent> | undefined;
  readonly onRejected?: Listener<RejectedEvent> | undefined;
}

/** The option names `circuitBreaker` accepts (any other is refused). */
export const circuitBreakerOptionKeys: ReadonlySet<string> = optionKeys<CircuitBreakerOptions>({
  failureThreshold: true,
  failureRate: true,
  slowCallMs: true,
  slowCallRate: true,
  resetTimeoutMs: true,
  resetBackoff: true,
  maxResetTimeoutMs: true,
  halfOpenProbes: true,
  successThreshold: true,
  callTimeoutMs: true,
  maxCallTimeoutMs: true,
  callTimeoutMode: true,
  isFailure: true,
  initialState: true,
  clock: true,
  onStateChange: true,
  onRejected: true,
});

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
  readonly callTimeoutMode: CallTimeoutMode;
  readonly isFailure: ((error: unknown) => boolean) | undefined;
  readonly initialState: CircuitSnapshot | undefined;
  readonly clock: Clock;
}

const states: readonly CircuitState[] = ['closed', 'open', 'half-open', 'isolated'];

/** Validates `circuitBreaker` options; throws a TypeError naming the first bad option. */
export function resolveOptions(options: CircuitBreakerOptions | undefined): ResolvedOptions {
  const o = optionsObject('circuitBreaker options', options, circuitBreakerOptionKeys);
  let failureRate: RateRule | undefined;
  let windowMs = 10_000;
  let minimumThroughput = 20;
  if (o.failureRate !== undefined) {
    const rate = optionsObject('failureRate', o.failureRate, failureRateOptionKeys);
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
  for (const name of ['maxCallTimeoutMs', 'callTimeoutMode'] as const) {
    if (o[name] !== undefined && callTimeoutMs === undefined) {
      throw new TypeError(`expected "callTimeoutMs" with "${name}"`);
    }
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
    callTimeoutMode: oneOf<CallTimeoutMode>('callTimeoutMode', o.callTimeoutMode ?? 'aggressive', [
      'aggressive',
      'cooperative',
    ]),
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
