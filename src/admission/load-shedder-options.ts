/**
 * What a load shedder is told: the priorities it admits, the signals it watches and their limits,
 * the thresholds, its source of readings and its events, with the declared schema that reads and
 * checks them once at construction.
 */
import type { Clock } from '../core/clock.js';
import type { Listener } from '../core/events.js';
import type { PolicyOptions } from '../core/policy-events.js';
import { policyFields } from '../core/policy-fields.js';
import {
  clockField,
  fraction,
  func,
  listenerField,
  nested,
  nonNegativeNumber,
  optional,
  positiveFraction,
  positiveInt,
  positiveNumber,
  positiveOrInfinity,
  type ReadOptions,
  readOptions,
  required,
  type Schema,
  withDefault,
} from '../core/read-options.js';
import { show } from '../core/validate.js';

/** The request priorities a load shedder knows, from most to least important. */
export type Priority = 'critical' | 'high' | 'normal' | 'low';

/** Every priority, most important first. */
export const priorities: readonly Priority[] = ['critical', 'high', 'normal', 'low'];

/**
 * The rank of a priority (0 = critical … 3 = low), the shedder's index for it; throws a TypeError
 * for anything else.
 */
export function rankOf(priority: unknown): number {
  switch (priority) {
    case 'critical':
      return 0;
    case 'high':
      return 1;
    case 'normal':
      return 2;
    case 'low':
      return 3;
  }
  throw new TypeError(
    `expected "priority" to be one of "critical", "high", "normal", "low", got ${show(priority)}`,
  );
}

/** The load signals a shedder can watch: the keys of {@link LoadLimits}. */
export type LoadSignal = keyof LoadLimits;

/** The sampled signals (all but in-flight), in the order the shedder keeps their readings. */
export const sampledSignals = [
  'cpuPercent',
  'eventLoopDelayMs',
  'eventLoopUtilization',
  'heapUsedRatio',
] as const;

/** A signal read from the {@link LoadSource} every interval. */
export type SampledSignal = (typeof sampledSignals)[number];

/**
 * The hard limit of each load signal. A signal without a limit is not watched. At the hard limit
 * even `critical` work is shed (with the default thresholds).
 */
export interface LoadLimits {
  /**
   * Process CPU time as a percentage of one core over the last interval (100 = one core fully
   * busy; it can exceed 100 when GC and worker threads run in parallel). Sampled.
   */
  readonly cpuPercent?: number | undefined;
  /** The p99 event-loop delay over the last interval, in milliseconds. Sampled. */
  readonly eventLoopDelayMs?: number | undefined;
  /** Event-loop utilization over the last interval, in (0, 1]. Sampled. */
  readonly eventLoopUtilization?: number | undefined;
  /** V8 heap used ÷ heap size limit, in (0, 1]. Sampled. */
  readonly heapUsedRatio?: number | undefined;
  /**
   * Calls in flight (a positive integer): the larger of the calls admitted by this shedder and not
   * yet finished (counted live, at each admission) and the `inFlight` its `source` last reported
   * (say, a process-wide count of requests). Checked at each admission, with no hysteresis.
   */
  readonly inFlight?: number | undefined;
}

/**
 * The sampled signals a {@link LoadSource} reports. A missing or invalid value (NaN, negative,
 * Infinity, not a number) means "unknown", and an unknown signal sheds nothing.
 */
export interface SampledSignals {
  /** CPU % of one core over the window since the previous call. Windowed. */
  readonly cpuPercent?: number | undefined;
  /** p99 event-loop delay over the window since the previous call, in ms. Windowed. */
  readonly eventLoopDelayMs?: number | undefined;
  /** Event-loop utilization over the window since the previous call, in [0, 1]. Windowed. */
  readonly eventLoopUtilization?: number | undefined;
  /** Heap used ÷ heap limit, now. A point reading. */
  readonly heapUsedRatio?: number | undefined;
  /**
   * Calls in flight now, counted by the service (say, every request of the process, while the
   * shedder counts only what it admitted). A point reading, read only when `limits.inFlight` is
   * set: the shedder uses the larger of it and its own count until the next sample.
   */
  readonly inFlight?: number | undefined;
}

/**
 * Returns the current readings; called once at construction and then every `intervalMs`.
 *
 * **Windows.** A windowed signal reports the time since the previous call. The call at construction
 * only opens the first window: its windowed readings cover no full interval (a live source would
 * report the time since it was created, or since boot), so the shedder treats them as unknown and
 * they shed nothing; they count from the first timed sample, one `intervalMs` later. Point readings
 * (`heapUsedRatio`, `inFlight`) count at once.
 */
export type LoadSource = () => SampledSignals;

/** Fraction of each signal's limit at which a priority is shed. */
export type LoadThresholds = Readonly<Record<Priority, number>>;

/** Why a load shedder refused a call (the `reason` of its `onRejected` events). */
export type LoadShedRejection = 'shed';

/**
 * Options of `loadShedder()` (the same from `bulwark` and from `bulwark/node`). Besides its own,
 * the options every policy takes: `name` (default `'load-shedder'`) names the shedder and is the
 * `policy` of its events and of its policies' events; `onSuccess` and `onFailure` hear every call
 * run through its policies; `onRejected` hears every refusal (through `admit`, its policies or the
 * HTTP adapters), `reason: 'shed'`, with the {@link LoadShedError} as `error`.
 */
export interface LoadShedderOptions extends PolicyOptions<LoadShedRejection> {
  /** The hard limit of each signal; an absent limit turns that signal off. At least one is required. */
  readonly limits: LoadLimits;
  /**
   * The fraction of each limit at which a priority is shed; must be ordered
   * `critical ≥ high ≥ normal ≥ low`. `Infinity` never sheds that priority. Missing entries keep
   * their default.
   * @default { critical: 1, high: 0.92, normal: 0.85, low: 0.7 }
   */
  readonly thresholds?: { readonly [P in Priority]?: number | undefined } | undefined;
  /**
   * How far (as a fraction of the limit) every sampled signal must fall below a priority's
   * threshold before that priority is admitted again, so shedding does not flap. Must be less than
   * `thresholds.low`.
   * @default 0.05
   */
  readonly hysteresis?: number | undefined;
  /**
   * The readings of the sampled signals (see {@link LoadSource}). Required when a sampled signal
   * has a limit (the `bulwark/node` factory defaults it to the live process readings); optional
   * with only `limits.inFlight`, to report a process-wide in-flight count.
   */
  readonly source?: LoadSource | undefined;
  /** How often `source` is sampled. The timer does not keep the process alive. @default 1_000 */
  readonly intervalMs?: number | undefined;
  /** The `retryAfterMs` of each {@link LoadShedError}. @default max(1_000, intervalMs) */
  readonly retryAfterMs?: number | undefined;
  /** @default systemClock */
  readonly clock?: Clock | undefined;
  /** Called when a sample changes which priorities are shed. */
  readonly onStateChange?: Listener<ShedStateChangeEvent> | undefined;
  /** Called when `source` throws or returns something that is not an object. */
  readonly onSampleFailed?: Listener<SampleFailedEvent> | undefined;
}

/** Emitted when a sample changes the set of priorities shed by the sampled signals. */
export interface ShedStateChangeEvent {
  /** Priorities shed from now on (by sampled signals), most important first. */
  readonly shedding: readonly Priority[];
  /** Priorities shed before this sample. */
  readonly previous: readonly Priority[];
  /** The sampled signal furthest over its limit, if any was measured. */
  readonly signal: LoadSignal | undefined;
  /** Its reading as a fraction of its limit (0 when nothing was measured). */
  readonly ratio: number;
}

/** Emitted when a sample could not be taken. */
export interface SampleFailedEvent {
  /** What `source` threw (or a TypeError describing its bad return value). */
  readonly error: unknown;
}

const limitsSchema = {
  cpuPercent: optional(positiveNumber),
  eventLoopDelayMs: optional(positiveNumber),
  eventLoopUtilization: optional(positiveFraction),
  heapUsedRatio: optional(positiveFraction),
  inFlight: optional(positiveInt),
} satisfies Schema<LoadLimits>;

const thresholdsSchema = {
  critical: optional(positiveOrInfinity),
  high: optional(positiveOrInfinity),
  normal: optional(positiveOrInfinity),
  low: optional(positiveOrInfinity),
} satisfies Schema<LoadThresholds>;

const loadShedderSchema = {
  limits: required(nested(limitsSchema)),
  thresholds: optional(nested(thresholdsSchema)),
  hysteresis: withDefault(0.05, fraction),
  source: optional(func<LoadSource>()),
  intervalMs: withDefault(1_000, positiveNumber),
  retryAfterMs: optional(nonNegativeNumber),
  clock: clockField,
  onStateChange: listenerField<ShedStateChangeEvent>(),
  onSampleFailed: listenerField<SampleFailedEvent>(),
  ...policyFields<LoadShedRejection>(),
} satisfies Schema<LoadShedderOptions>;

const defaultThresholds: LoadThresholds = { critical: 1, high: 0.92, normal: 0.85, low: 0.7 };

/** The options of a load shedder, checked, with defaults and the cross-field rules applied. */
export interface LoadShedderSettings
  extends Omit<ReadOptions<typeof loadShedderSchema>, 'limits' | 'thresholds' | 'retryAfterMs'> {
  /** Limit of each sampled signal (NaN when off), in {@link sampledSignals} order. */
  readonly limits: readonly number[];
  /** Whether any sampled signal has a limit (then a source is needed). */
  readonly sampled: boolean;
  /** The in-flight limit; Infinity when off. */
  readonly inFlightLimit: number;
  /** Threshold of each priority, by rank. */
  readonly thresholds: readonly number[];
  readonly retryAfterMs: number;
}

/**
 * Reads `loadShedder` options: a `TypeError` names the first bad option (or a broken rule between
 * them: no limit at all, thresholds out of order, hysteresis not below `thresholds.low`).
 */
export function readLoadShedderOptions(options: LoadShedderOptions): LoadShedderSettings {
  const o = readOptions('loadShedder options', options, loadShedderSchema);
  const limits = sampledSignals.map((name) => o.limits[name] ?? Number.NaN);
  const sampled = limits.some((limit) => !Number.isNaN(limit));
  const inFlightLimit = o.limits.inFlight ?? Infinity;
  if (!sampled && inFlightLimit === Infinity) {
    throw new TypeError(
      `expected "limits" to set at least one of ${[...sampledSignals, 'inFlight'].join(', ')}, got none`,
    );
  }
  const thresholds = priorities.map((p) => o.thresholds?.[p] ?? defaultThresholds[p]);
  // Stryker disable next-line EqualityOperator: one more turn compares undefined (past the last threshold), which is never greater
  for (let r = 1; r < thresholds.length; r++) {
    if (thresholds[r]! > thresholds[r - 1]!) {
      throw new TypeError(
        `expected "thresholds" to be ordered critical ≥ high ≥ normal ≥ low, got ${priorities
          .map((p, i) => `${p}: ${thresholds[i]}`)
          .join(', ')}`,
      );
    }
  }
  const low = thresholds[thresholds.length - 1]!;
  if (o.hysteresis >= low) {
    throw new TypeError(`expected "hysteresis" to be less than thresholds.low (${low}), got ${o.hysteresis}`);
  }
  return {
    ...o,
    limits,
    sampled,
    inFlightLimit,
    thresholds,
    retryAfterMs: o.retryAfterMs ?? Math.max(1_000, o.intervalMs),
  };
}
