import type { Clock } from '../core/clock.js';
import type { Listener } from '../core/events.js';
import type { PolicyOptions, RejectedEvent } from '../core/policy-events.js';
import { policyFields } from '../core/policy-fields.js';
import {
  atLeast,
  clockField,
  func,
  listenerField,
  nested,
  nonNegativeNumber,
  oneOf,
  optional,
  positiveFraction,
  positiveInt,
  positiveNumber,
  readOptions,
  required,
  type Schema,
  withDefault,
} from '../core/read-options.js';
import { show } from '../core/validate.js';
import type { RefusingState } from './errors.js';
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

/** A state change. */
export interface StateChangeEvent {
  readonly from: CircuitState;
  readonly to: CircuitState;
}

/**
 * A call refused without running: `{ policy, reason, error }`, `reason` being the state that
 * refused it and `error` the {@link CircuitOpenError} (with `retryAfterMs` while open).
 */
export type CircuitRejectedEvent = RejectedEvent<RefusingState>;

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
export interface CircuitBreakerOptions extends PolicyOptions<RefusingState> {
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
}

const failureRateSchema = {
  threshold: required(positiveFraction),
  windowMs: required(positiveNumber),
  minimumThroughput: withDefault(20, positiveInt),
} satisfies Schema<FailureRateOptions>;

const states: readonly CircuitState[] = ['closed', 'open', 'half-open', 'isolated'];

const snapshotSchema = {
  state: required(oneOf(states)),
  consecutiveFailures: withDefault(0, nonNegativeNumber),
  // Checked only for an open circuit (see `snapshot`): other states ignore it.
  openUntil: { read: (_name: string, value: unknown) => value },
  reopenCount: withDefault(0, nonNegativeNumber),
} satisfies Schema<CircuitSnapshot>;

/** The declared options of `circuitBreaker` (their keys are the options it accepts). */
export const circuitBreakerSchema = {
  failureThreshold: optional(positiveInt),
  failureRate: optional(nested(failureRateSchema)),
  slowCallMs: optional(positiveNumber),
  slowCallRate: optional(positiveFraction),
  resetTimeoutMs: withDefault(10_000, positiveNumber),
  resetBackoff: withDefault(1, atLeast(1)),
  maxResetTimeoutMs: optional(positiveNumber),
  halfOpenProbes: withDefault(1, positiveInt),
  successThreshold: withDefault(1, positiveInt),
  callTimeoutMs: optional(positiveNumber),
  maxCallTimeoutMs: optional(positiveNumber),
  callTimeoutMode: optional(oneOf<CallTimeoutMode>(['aggressive', 'cooperative'])),
  isFailure: optional(func<(error: unknown) => boolean>()),
  initialState: optional(snapshot),
  clock: clockField,
  onStateChange: listenerField<StateChangeEvent>(),
  ...policyFields<RefusingState>(),
} satisfies Schema<CircuitBreakerOptions>;

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

/**
 * Validates `circuitBreaker` options; throws a TypeError naming the first bad option (or a broken
 * rule between options).
 */
export function resolveOptions(options: CircuitBreakerOptions | undefined): ResolvedOptions {
  const o = readOptions('circuitBreaker options', options, circuitBreakerSchema);
  const rate = o.failureRate;
  const windowMs = rate?.windowMs ?? 10_000;
  const minimumThroughput = rate?.minimumThroughput ?? 20;
  const failureRate = rate === undefined ? undefined : { threshold: rate.threshold, minimumThroughput };
  if ((o.slowCallMs === undefined) !== (o.slowCallRate === undefined)) {
    throw new TypeError('expected "slowCallMs" and "slowCallRate" to be given together');
  }
  const slowRate =
    o.slowCallRate === undefined ? undefined : { threshold: o.slowCallRate, minimumThroughput };
  const failureThreshold =
    o.failureThreshold ?? (failureRate === undefined && slowRate === undefined ? 5 : Infinity);
  const resetTimeoutMs = o.resetTimeoutMs;
  const maxResetTimeoutMs = o.maxResetTimeoutMs ?? 16 * resetTimeoutMs;
  if (maxResetTimeoutMs < resetTimeoutMs) {
    throw new TypeError(
      `expected "maxResetTimeoutMs" (${maxResetTimeoutMs}) to be at least "resetTimeoutMs" (${resetTimeoutMs})`,
    );
  }
  const callTimeoutMs = o.callTimeoutMs;
  for (const name of ['maxCallTimeoutMs', 'callTimeoutMode'] as const) {
    if (o[name] !== undefined && callTimeoutMs === undefined) {
      throw new TypeError(`expected "callTimeoutMs" with "${name}"`);
    }
  }
  // No cap without a call timeout (maxCallTimeoutMs needs callTimeoutMs, checked above).
  const maxCallTimeoutMs = o.maxCallTimeoutMs ?? 3 * (callTimeoutMs ?? Infinity);
  // Stryker disable next-line ConditionalExpression: without callTimeoutMs, maxCallTimeoutMs is Infinity: never below it
  if (callTimeoutMs !== undefined && maxCallTimeoutMs < callTimeoutMs) {
    throw new TypeError(
      `expected "maxCallTimeoutMs" (${maxCallTimeoutMs}) to be at least "callTimeoutMs" (${callTimeoutMs})`,
    );
  }
  return {
    failureThreshold,
    failureRate,
    slowCallMs: o.slowCallMs ?? Infinity,
    slowRate,
    windowMs,
    resetTimeoutMs,
    resetBackoff: o.resetBackoff,
    maxResetTimeoutMs,
    halfOpenProbes: o.halfOpenProbes,
    successThreshold: o.successThreshold,
    callTimeoutMs,
    maxCallTimeoutMs,
    callTimeoutMode: o.callTimeoutMode ?? 'aggressive',
    isFailure: o.isFailure,
    initialState: o.initialState,
    clock: o.clock,
  };
}

/** Reads a saved {@link CircuitSnapshot}; an open one needs a finite `openUntil`. */
function snapshot(name: string, value: unknown): CircuitSnapshot {
  const s = nested(snapshotSchema)(name, value);
  if (s.state === 'open' && !Number.isFinite(s.openUntil)) {
    throw new TypeError(
      `expected "initialState.openUntil" to be a finite number for an open circuit, got ${show(s.openUntil)}`,
    );
  }
  const { state, consecutiveFailures, reopenCount } = s;
  // Stryker disable next-line ConditionalExpression: another state never reads openUntil (opening sets it first)
  return state === 'open'
    ? { state, consecutiveFailures, reopenCount, openUntil: s.openUntil as number }
    : { state, consecutiveFailures, reopenCount };
}
