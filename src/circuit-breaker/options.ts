import type { Clock } from '../core/clock.js';
import type { Listener } from '../core/events.js';
import type { PolicyOptions, RejectedEvent } from '../core/policy-events.js';
import { policyFields } from '../core/policy-fields.js';
import {
  atLeast,
  boolean,
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
import { type ProbeRule, probeRule } from './half-open.js';
import type { RateRule } from './window.js';
import { type CircuitWindow, circuitWindow, minimumThroughputOf, windowOf } from './window-options.js';

/** The states of a circuit breaker. */
export type CircuitState = 'closed' | 'open' | 'half-open' | 'isolated';

/** How the breaker's `callTimeoutMs` treats a call still running at its limit. */
export type CallTimeoutMode = 'aggressive' | 'cooperative';

/** Trip on the share of failed calls in the sliding window. */
export interface FailureRateOptions {
  /** Share of failed calls (0 < threshold ≤ 1) that opens the circuit, e.g. 0.5. */
  readonly threshold: number;
  /**
   * A sliding time window of this span, kept in 10 buckets: the same as
   * `window: { type: 'time', sizeMs: windowMs }`. Give this or `window`, not both.
   */
  readonly windowMs?: number | undefined;
  /**
   * Fewest calls in the window before a rate is judged at all (at most a count window's size).
   * @default 20, or a smaller count window's size
   */
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
  /** Open when the share of failed calls in the sliding window reaches `threshold`. */
  readonly failureRate?: FailureRateOptions | undefined;
  /**
   * The sliding window of the rate rules and `stats()`: `{ type: 'count', size }` (the last `size`
   * calls, 1 to 100_000) or `{ type: 'time', sizeMs }`. @default `failureRate.windowMs`'s time
   * window; a 10 s time window for a slow-call rule alone; else the last 100 calls (for `stats()`)
   */
  readonly window?: CircuitWindow | undefined;
  /** A call at least this slow counts as slow (for `slowCallRate`), even when it succeeds. */
  readonly slowCallMs?: number | undefined;
  /**
   * Open when the share of slow calls reaches this (0 < rate ≤ 1), judged over the `window` with
   * `failureRate`'s minimum throughput (20 calls without `failureRate`).
   */
  readonly slowCallRate?: number | undefined;
  /** How long it stays open before half-opening. @default 10_000 */
  readonly resetTimeoutMs?: number | undefined;
  /** Each consecutive re-open multiplies the open time by this (≥ 1). @default 1 */
  readonly resetBackoff?: number | undefined;
  /** Ceiling of the open time under `resetBackoff`. @default 16 × resetTimeoutMs */
  readonly maxResetTimeoutMs?: number | undefined;
  /**
   * Concurrent probes admitted while half-open; every other caller is refused at once. With
   * `halfOpenSuccessRate`, the probes of one half-open period in all. @default 1
   */
  readonly halfOpenProbes?: number | undefined;
  /** Probe successes that close it; any probe failure re-opens it. @default 1 */
  readonly successThreshold?: number | undefined;
  /**
   * Decide half-open on a sample instead of the first failure: admit `halfOpenProbes` probes in all
   * (refusing others until the decision), close once their successes reach this share
   * (0 < rate ≤ 1) of `halfOpenProbes`, re-open once failures make that impossible. Not with
   * `successThreshold`. @default none (the first probe failure re-opens)
   */
  readonly halfOpenSuccessRate?: number | undefined;
  /**
   * Time every call so `stats()` reports latency percentiles (two clock reads per call, and the
   * breaker's timed path). @default true with `callTimeoutMs` or a slow-call rule (those calls
   * are timed anyway), else false
   */
  readonly trackLatency?: boolean | undefined;
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
  windowMs: optional(positiveNumber),
  minimumThroughput: optional(positiveInt),
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
  window: optional(circuitWindow),
  slowCallMs: optional(positiveNumber),
  slowCallRate: optional(positiveFraction),
  resetTimeoutMs: withDefault(10_000, positiveNumber),
  resetBackoff: withDefault(1, atLeast(1)),
  maxResetTimeoutMs: optional(positiveNumber),
  halfOpenProbes: withDefault(1, positiveInt),
  successThreshold: optional(positiveInt),
  halfOpenSuccessRate: optional(positiveFraction),
  trackLatency: optional(boolean),
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
  readonly window: CircuitWindow;
  readonly trackLatency: boolean;
  readonly resetTimeoutMs: number;
  readonly resetBackoff: number;
  readonly maxResetTimeoutMs: number;
  readonly probes: ProbeRule;
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
  if ((o.slowCallMs === undefined) !== (o.slowCallRate === undefined)) {
    throw new TypeError('expected "slowCallMs" and "slowCallRate" to be given together');
  }
  const rate = o.failureRate;
  const window = windowOf(o.window, rate, o.slowCallRate !== undefined);
  const minimumThroughput = minimumThroughputOf(rate?.minimumThroughput, window);
  const failureRate = rate === undefined ? undefined : { threshold: rate.threshold, minimumThroughput };
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
    window,
    trackLatency: o.trackLatency ?? (callTimeoutMs !== undefined || slowRate !== undefined),
    resetTimeoutMs,
    resetBackoff: o.resetBackoff,
    maxResetTimeoutMs,
    probes: probeRule(o.halfOpenProbes, o.successThreshold, o.halfOpenSuccessRate),
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
