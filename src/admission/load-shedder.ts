/**
 * Priority load shedding: refuse the least important work first when the process is under load.
 * Web-standard core: the readings come from an injected `source` (bulwark/node supplies the live
 * Node one), time and timers from a `Clock`.
 */
import { type Clock, systemClock, type TimerHandle } from '../core/clock.js';
import type { Context, Operation } from '../core/context.js';
import { type Disposer, type Listener, Listeners } from '../core/events.js';
import { failure, type Outcome } from '../core/outcome.js';
import { BasePolicy, type ExecuteOptions, isThenable, openEdge, runStep, type Step } from '../core/policy.js';
import {
  inRange,
  isClock,
  isFunction,
  nonNegative,
  optionKeys,
  optionsObject,
  positive,
  positiveInteger,
  show,
} from '../core/validate.js';
import { LoadShedError, type LoadSignal, type Priority, priorities } from './shed-error.js';

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

/** Options of {@link LoadShedder} (and of `loadShedder()` from `bulwark/node`). */
export interface LoadShedderOptions {
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
  /** Called for every refused call. */
  readonly onShed?: Listener<ShedEvent> | undefined;
  /** Called when a sample changes which priorities are shed. */
  readonly onStateChange?: Listener<ShedStateChangeEvent> | undefined;
  /** Called when `source` throws or returns something that is not an object. */
  readonly onSampleFailed?: Listener<SampleFailedEvent> | undefined;
}

const loadShedderOptionKeys = optionKeys<LoadShedderOptions>({
  limits: true,
  thresholds: true,
  hysteresis: true,
  source: true,
  intervalMs: true,
  retryAfterMs: true,
  clock: true,
  onShed: true,
  onStateChange: true,
  onSampleFailed: true,
});

/** Emitted for every refused call. */
export interface ShedEvent {
  /** The refused priority. */
  readonly priority: Priority;
  /** The signal responsible. */
  readonly signal: LoadSignal;
  /** That signal's reading as a fraction of its limit. */
  readonly ratio: number;
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

/** Readings known to the shedder: the last sample, plus the live in-flight count. */
export interface LoadReadings extends SampledSignals {
  /**
   * Calls in flight as the in-flight limit sees them: the larger of this shedder's own count and
   * the count its source last reported.
   */
  readonly inFlight: number;
}

/** A snapshot of the load as the shedder sees it. */
export interface LoadPressure {
  /** The last sampled readings (absent when unknown) and the in-flight count. */
  readonly readings: LoadReadings;
  /** The highest reading as a fraction of its limit, over the watched signals; 0 when none is known. */
  readonly ratio: number;
  /** The signal with that ratio, or undefined when none is known. */
  readonly signal: LoadSignal | undefined;
  /** Priorities refused right now, most important first. */
  readonly shedding: readonly Priority[];
  /** Clock time of the last sample; undefined before the first or after `close()`. */
  readonly sampledAt: number | undefined;
}

/** Ends one admission from {@link LoadShedder.admit}. Calling it more than once is harmless. */
export type Release = () => void;

const defaultThresholds: LoadThresholds = { critical: 1, high: 0.92, normal: 0.85, low: 0.7 };

/** The sampled signals, in the order readings are kept. */
const sampledSignals = ['cpuPercent', 'eventLoopDelayMs', 'eventLoopUtilization', 'heapUsedRatio'] as const;
type SampledSignal = (typeof sampledSignals)[number];
/**
 * Per sampled signal: a rate over the window since the previous sample (true), or a point reading
 * (false). A windowed reading from the sample taken at construction covers no interval yet.
 */
const windowed: readonly boolean[] = sampledSignals.map((name) => name !== 'heapUsedRatio');
const limitKeys: readonly string[] = [...sampledSignals, 'inFlight'];
const knownLimits: ReadonlySet<string> = new Set(limitKeys);
const knownPriorities: ReadonlySet<string> = new Set(priorities);

const CRITICAL = 0;
const LOW = 3;

/** The rank of a priority (0 = critical … 3 = low); throws a TypeError for anything else. */
function rankOf(priority: unknown): number {
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

function validLimit(name: SampledSignal | 'inFlight', value: unknown): number {
  const key = `limits.${name}`;
  switch (name) {
    case 'inFlight':
      return positiveInteger(key, value);
    case 'eventLoopUtilization':
    case 'heapUsedRatio':
      if (typeof value !== 'number' || !(value > 0 && value <= 1)) {
        throw new TypeError(`expected "${key}" to be a number above 0 and at most 1, got ${show(value)}`);
      }
      return value;
    default:
      return positive(key, value);
  }
}

function validThresholds(value: unknown): number[] {
  const given = optionsObject<Partial<LoadThresholds>>(
    'thresholds',
    value as Partial<LoadThresholds>,
    knownPriorities,
  );
  const result = priorities.map((p) => {
    const t = given[p];
    return t === undefined ? defaultThresholds[p] : positive(`thresholds.${p}`, t, true);
  });
  for (let r = 1; r < result.length; r++) {
    if (result[r]! > result[r - 1]!) {
      throw new TypeError(
        `expected "thresholds" to be ordered critical ≥ high ≥ normal ≥ low, got ${priorities
          .map((p, i) => `${p}: ${result[i]}`)
          .join(', ')}`,
      );
    }
  }
  return result;
}

/** One reading of a source's result; a throwing getter reads as unknown. */
function read(signals: SampledSignals, name: keyof SampledSignals): unknown {
  try {
    return signals[name];
  } catch {
    return undefined;
  }
}

/** A reading as a number, or undefined (unknown) for NaN, negative, Infinity or a non-number. */
function validReading(value: unknown): number | undefined {
  return typeof value === 'number' && value >= 0 && value !== Infinity ? value : undefined;
}

/** Symbols of the hooks the shedder's policy uses; not part of the public API. */
const tryEnter: unique symbol = Symbol('tryEnter');
const leave: unique symbol = Symbol('leave');

/**
 * A priority load shedder. Create one with `loadShedder()` from `bulwark/node` (live process
 * readings) or `new LoadShedder({ ..., source })` with your own readings.
 *
 * **The rule.** A priority is shed when any watched signal reaches its threshold fraction of that
 * signal's limit (`reading ≥ threshold × limit`), so `low` goes first and `critical` only at the
 * hard limit. Sampled signals are read every `intervalMs`; once shed, a priority is admitted again
 * only after *every* sampled signal has fallen below `(threshold − hysteresis) × limit`. In-flight
 * is checked at each admission with no hysteresis, on the larger of this shedder's own live count
 * and the `inFlight` the source last reported (a process-wide count a service may feed).
 *
 * **The first interval.** The sample taken at construction only opens the window of the windowed
 * signals (CPU, event-loop delay and utilization): those readings cover no full interval yet, so
 * they are unknown and shed nothing, `critical` included, until the first timed sample one
 * `intervalMs` later. Point readings (`heapUsedRatio`, a reported `inFlight`) count at once.
 *
 * **Failure behaviour.** A refusal is a {@link LoadShedError} (kind `overloaded`, code
 * `ERR_LOAD_SHED`, `retryAfterMs`), thrown by `admit` or returned by the policy's `execute` before
 * the operation starts. A source that throws (or returns a non-object) fails open: the sampled
 * readings are cleared and nothing is shed by them until a good sample, and `onSampleFailed`
 * fires. An invalid single reading (NaN, negative, not a number) counts as unknown. After
 * `close()` sampling stops and only the in-flight limit applies.
 *
 * @example
 * // Your own readings (another runtime, or a test with FakeClock):
 * const shedder = new LoadShedder({
 *   limits: { cpuPercent: 90, inFlight: 200 },
 *   source: () => ({ cpuPercent: readCpu() }),
 * });
 * await shedder.policy('low').execute(() => reindex());
 */
export class LoadShedder {
  private readonly thresholds: number[];
  private readonly hysteresis: number;
  private readonly source: LoadSource | undefined;
  private readonly intervalMs: number;
  private readonly retryAfterMs: number;
  private readonly clock: Clock;
  /** Limit of each sampled signal (NaN when off), in {@link sampledSignals} order. */
  private readonly limits: number[];
  private readonly inFlightLimit: number;
  /** In-flight count at which each rank is refused: ⌊threshold × limit⌋ (Infinity when off). */
  private readonly inFlightCeiling: number[];
  private readonly readings: (number | undefined)[] = [undefined, undefined, undefined, undefined];
  /** Per rank: shed by the sampled signals (with hysteresis). */
  private readonly shedBySample: boolean[] = [false, false, false, false];
  private topSignal: SampledSignal | undefined = undefined;
  private topRatio = 0;
  private sampledAt: number | undefined = undefined;
  private timer: TimerHandle | undefined = undefined;
  private stopped = false;
  /** Calls admitted by this shedder and not yet finished. */
  private count = 0;
  /** The in-flight count the source last reported (0 when unknown or not watched). */
  private reportedInFlight = 0;
  private readonly policies: (LoadShedPolicy | undefined)[] = [undefined, undefined, undefined, undefined];
  private readonly shed = new Listeners<ShedEvent>();
  private readonly stateChanged = new Listeners<ShedStateChangeEvent>();
  private readonly sampleFailed = new Listeners<SampleFailedEvent>();

  /**
   * Validates every option (a `TypeError` names the bad one), takes a first sample at once (its
   * windowed readings only open the first window; see {@link LoadSource}), and, when there is a
   * `source`, samples it every `intervalMs` on a timer that does not keep the process alive.
   */
  constructor(options: LoadShedderOptions) {
    const o = optionsObject('loadShedder options', options, loadShedderOptionKeys);
    if (o.limits === undefined) throw new TypeError('expected "limits" to be an object, got undefined');
    const limits = optionsObject<LoadLimits>('limits', o.limits, knownLimits);
    this.limits = sampledSignals.map((name) =>
      limits[name] === undefined ? Number.NaN : validLimit(name, limits[name]),
    );
    this.inFlightLimit = limits.inFlight === undefined ? Infinity : validLimit('inFlight', limits.inFlight);
    const sampledLimit = this.limits.some((limit) => !Number.isNaN(limit));
    if (!sampledLimit && this.inFlightLimit === Infinity) {
      throw new TypeError(`expected "limits" to set at least one of ${limitKeys.join(', ')}, got none`);
    }
    this.thresholds = validThresholds(o.thresholds);
    this.hysteresis = inRange('hysteresis', o.hysteresis ?? 0.05, 0, 1);
    if (this.hysteresis >= this.thresholds[LOW]!) {
      throw new TypeError(
        `expected "hysteresis" to be less than thresholds.low (${this.thresholds[LOW]}), got ${this.hysteresis}`,
      );
    }
    // The most calls of each priority that may be in flight after admission; the epsilon keeps
    // 0.29 × 100 from flooring to 28.
    this.inFlightCeiling = this.thresholds.map((t) => Math.floor(t * this.inFlightLimit + 1e-9));
    this.intervalMs = positive('intervalMs', o.intervalMs ?? 1_000);
    this.retryAfterMs = nonNegative('retryAfterMs', o.retryAfterMs ?? Math.max(1_000, this.intervalMs));
    this.clock = o.clock === undefined ? systemClock : isClock<Clock>('clock', o.clock);
    if (o.source !== undefined) this.source = isFunction<LoadSource>('source', o.source);
    else if (sampledLimit) {
      throw new TypeError(
        'expected "source" to be a function (a sampled signal has a limit; use loadShedder() from bulwark/node for live readings), got undefined',
      );
    }
    if (o.onShed !== undefined) this.shed.add(isFunction('onShed', o.onShed));
    if (o.onStateChange !== undefined) this.stateChanged.add(isFunction('onStateChange', o.onStateChange));
    if (o.onSampleFailed !== undefined) this.sampleFailed.add(isFunction('onSampleFailed', o.onSampleFailed));
    if (this.source !== undefined) {
      this.sample(true);
      this.arm();
    }
  }

  /**
   * Admits one call of `priority` or throws a {@link LoadShedError}. An admitted call counts as in
   * flight until the returned {@link Release} is called; call it exactly when the work ends
   * (`try { … } finally { release(); }`), or prefer {@link LoadShedder.policy}, which cannot leak.
   * A second call of the same release does nothing. Throws a `TypeError` for an unknown priority.
   *
   * @example
   * const release = shedder.admit('normal');
   * try { await handle(request); } finally { release(); }
   */
  admit(priority: Priority): Release {
    const refusal = this[tryEnter](rankOf(priority));
    if (refusal !== undefined) throw refusal;
    let released = false;
    return () => {
      if (released) return;
      released = true;
      this.count--;
    };
  }

  /**
   * Whether a call of `priority` would be refused right now. Counts nothing and emits nothing: use
   * it to skip optional work early. Throws a `TypeError` for an unknown priority.
   */
  isShedding(priority: Priority): boolean {
    return this.wouldRefuse(rankOf(priority));
  }

  /**
   * A {@link Policy} that admits each call at `priority` or rejects it with a {@link LoadShedError}
   * without starting the operation. Admitted calls count as in flight until they settle, however
   * they end. The same instance is returned for the same priority. Throws a `TypeError` for an
   * unknown priority.
   *
   * @example
   * const checkout = pipeline(shedder.policy('high'), timeout(2_000));
   * await checkout.execute(({ signal }) => pay(order, { signal }));
   */
  policy(priority: Priority): LoadShedPolicy {
    const rank = rankOf(priority);
    let policy = this.policies[rank];
    if (policy === undefined) {
      policy = new LoadShedPolicy(this, rank);
      this.policies[rank] = policy;
    }
    return policy;
  }

  /** True once {@link LoadShedder.close} was called. */
  get closed(): boolean {
    return this.stopped;
  }

  /**
   * Calls admitted by this shedder (through `admit`, `policy` or the HTTP adapters) and not yet
   * finished: its own count, without what the source reports (see `pressure.readings.inFlight`).
   */
  get inFlight(): number {
    return this.count;
  }

  /** A fresh snapshot of the readings, the highest ratio and the priorities shed now. */
  get pressure(): LoadPressure {
    const inFlight = this.inFlightNow();
    const readings: Record<string, number | undefined> = { inFlight };
    for (let i = 0; i < sampledSignals.length; i++) {
      const value = this.readings[i];
      if (value !== undefined) readings[sampledSignals[i]!] = value;
    }
    let ratio = this.topRatio;
    let signal: LoadSignal | undefined = this.topSignal;
    if (this.inFlightLimit !== Infinity && inFlight / this.inFlightLimit > ratio) {
      ratio = inFlight / this.inFlightLimit;
      signal = 'inFlight';
    }
    const shedding = priorities.filter((_, rank) => this.wouldRefuse(rank));
    return {
      readings: readings as unknown as LoadReadings,
      ratio,
      signal,
      shedding,
      sampledAt: this.sampledAt,
    };
  }

  /** Subscribes to refusals; returns a disposer. */
  onShed(listener: Listener<ShedEvent>): Disposer {
    return this.shed.add(listener);
  }

  /** Subscribes to changes of the priorities shed by sampled signals; returns a disposer. */
  onStateChange(listener: Listener<ShedStateChangeEvent>): Disposer {
    return this.stateChanged.add(listener);
  }

  /** Subscribes to failed samples; returns a disposer. */
  onSampleFailed(listener: Listener<SampleFailedEvent>): Disposer {
    return this.sampleFailed.add(listener);
  }

  /**
   * Stops sampling and forgets the sampled readings (the reported in-flight count included), so
   * from now on only the in-flight limit, on this shedder's own count, refuses calls. Calls in
   * flight are unaffected. Calling it again does nothing.
   */
  close(): void {
    if (this.stopped) return;
    this.stopped = true;
    if (this.timer !== undefined) {
      this.clock.clearTimer(this.timer);
      this.timer = undefined;
    }
    this.readings.fill(undefined);
    this.reportedInFlight = 0;
    this.shedBySample.fill(false);
    this.topSignal = undefined;
    this.topRatio = 0;
    this.sampledAt = undefined;
  }

  /** Admits (counting one in flight) and returns undefined, or returns the refusal. */
  [tryEnter](rank: number): LoadShedError | undefined {
    if (this.shedBySample[rank]) return this.refuse(rank, this.topSignal!, this.topRatio);
    const inFlight = this.inFlightNow();
    if (inFlight >= this.inFlightCeiling[rank]!) {
      return this.refuse(rank, 'inFlight', inFlight / this.inFlightLimit);
    }
    this.count++;
    return undefined;
  }

  /** Ends one admission of the policy. */
  [leave](): void {
    this.count--;
  }

  private wouldRefuse(rank: number): boolean {
    return this.shedBySample[rank]! || this.inFlightNow() >= this.inFlightCeiling[rank]!;
  }

  /** What the in-flight limit counts: the larger of this shedder's own count and the reported one. */
  private inFlightNow(): number {
    return Math.max(this.count, this.reportedInFlight);
  }

  private refuse(rank: number, signal: LoadSignal, ratio: number): LoadShedError {
    const priority = priorities[rank]!;
    if (this.shed.active) this.shed.emit({ priority, signal, ratio });
    return new LoadShedError({ priority, signal, ratio, retryAfterMs: this.retryAfterMs });
  }

  private arm(): void {
    const timer = this.clock.setTimer(this.tick, this.intervalMs);
    this.clock.keepAlive?.(timer, false);
    this.timer = timer;
  }

  private readonly tick = (): void => {
    this.timer = undefined;
    if (this.stopped) return;
    this.sample(false);
    if (!this.stopped) this.arm();
  };

  /**
   * Reads the source and updates the per-priority decisions. The `first` sample (at construction)
   * only opens the window of the windowed signals: their readings cover no full interval yet (a
   * live source would report the time since it was created, or since boot), so they are unknown.
   */
  private sample(first: boolean): void {
    let signals: SampledSignals;
    try {
      signals = this.source!();
      if (signals === null || typeof signals !== 'object') {
        throw new TypeError(`expected the load source to return an object, got ${show(signals)}`);
      }
    } catch (error) {
      // Blind: fail open rather than keep shedding on stale readings.
      this.readings.fill(undefined);
      this.reportedInFlight = 0;
      this.apply(undefined, 0, true);
      if (this.sampleFailed.active) this.sampleFailed.emit({ error });
      return;
    }
    if (this.inFlightLimit !== Infinity) this.reportedInFlight = validReading(read(signals, 'inFlight')) ?? 0;
    let top: SampledSignal | undefined;
    let topRatio = 0;
    for (let i = 0; i < sampledSignals.length; i++) {
      const limit = this.limits[i]!;
      if (Number.isNaN(limit)) continue;
      if (first && windowed[i]) {
        this.readings[i] = undefined;
        continue;
      }
      const name = sampledSignals[i]!;
      const value = validReading(read(signals, name));
      this.readings[i] = value;
      if (value === undefined) continue;
      const ratio = value / limit;
      if (top === undefined || ratio > topRatio) {
        top = name;
        topRatio = ratio;
      }
    }
    this.apply(top, topRatio, false);
  }

  /** Applies one sample's highest ratio to every priority, with hysteresis (or none when `reset`). */
  private apply(top: SampledSignal | undefined, ratio: number, reset: boolean): void {
    this.sampledAt = this.clock.now();
    this.topSignal = top;
    this.topRatio = ratio;
    let changed = false;
    const previous = this.stateChanged.active ? this.sampledShedding() : undefined;
    for (let rank = CRITICAL; rank <= LOW; rank++) {
      const threshold = this.thresholds[rank]!;
      const was = this.shedBySample[rank]!;
      const now = reset
        ? false
        : was
          ? ratio >= threshold - this.hysteresis
          : top !== undefined && ratio >= threshold;
      if (now !== was) {
        this.shedBySample[rank] = now;
        changed = true;
      }
    }
    if (changed && previous !== undefined) {
      this.stateChanged.emit({ shedding: this.sampledShedding(), previous, signal: top, ratio });
    }
  }

  private sampledShedding(): Priority[] {
    return priorities.filter((_, rank) => this.shedBySample[rank]);
  }
}

/**
 * The policy returned by {@link LoadShedder.policy}: admits or refuses each call at one priority
 * and tracks admitted calls as in flight until they settle.
 */
export class LoadShedPolicy extends BasePolicy {
  private readonly done: <T>(outcome: Outcome<T>) => Outcome<T>;
  private readonly doneValue: <T>(value: T) => T;
  private readonly doneError: (error: unknown) => never;

  /** Use {@link LoadShedder.policy}. */
  constructor(
    private readonly shedder: LoadShedder,
    private readonly rank: number,
  ) {
    super();
    // One set of handlers per policy, not per call.
    this.done = <T>(outcome: Outcome<T>): Outcome<T> => {
      shedder[leave]();
      return outcome;
    };
    this.doneValue = <T>(value: T): T => {
      shedder[leave]();
      return value;
    };
    this.doneError = (error: unknown): never => {
      shedder[leave]();
      throw error;
    };
  }

  /** The priority this policy admits at. */
  get priority(): Priority {
    return priorities[this.rank]!;
  }

  /**
   * Admits and runs `operation`, or rejects with a {@link LoadShedError} without calling it. An
   * already-aborted `signal` rejects with its reason first. The admitted call counts as in flight
   * until it settles. (Outside a pipeline: no outcome objects, one promise.)
   */
  override execute<T>(operation: Operation<T>, options?: ExecuteOptions): Promise<T> {
    const context = openEdge(operation, options);
    if (context instanceof Promise) return context;
    const refusal = this.shedder[tryEnter](this.rank);
    if (refusal !== undefined) return Promise.reject(refusal);
    let result: T | PromiseLike<T>;
    try {
      result = operation(context);
    } catch (error) {
      this.shedder[leave]();
      return Promise.reject(error);
    }
    if (!isThenable<T>(result)) {
      this.shedder[leave]();
      return Promise.resolve(result);
    }
    return Promise.resolve(result).then(this.doneValue as (value: T) => T, this.doneError);
  }

  [runStep]<T>(next: Step<T>, context: Context): Promise<Outcome<T>> {
    const refusal = this.shedder[tryEnter](this.rank);
    if (refusal !== undefined) return Promise.resolve(failure(refusal));
    let outcome: Promise<Outcome<T>>;
    try {
      outcome = next(context);
    } catch (error) {
      this.shedder[leave]();
      return Promise.resolve(failure(error));
    }
    return outcome.then(this.done, (error: unknown) => this.done(failure<T>(error)));
  }
}
