/**
 * The sampled half of a load shedder: reads its source every interval and decides, per priority
 * and with hysteresis, what the sampled signals shed. The shedder reads its decisions at each
 * admission.
 */
import type { Clock, TimerHandle } from '../core/clock.js';
import { Listeners } from '../core/events.js';
import { show } from '../core/validate.js';
import {
  type LoadSource,
  type Priority,
  priorities,
  type SampledSignal,
  type SampledSignals,
  type SampleFailedEvent,
  type ShedStateChangeEvent,
  sampledSignals,
} from './load-shedder-options.js';

/**
 * Per sampled signal: a rate over the window since the previous sample (true), or a point reading
 * (false). A windowed reading from the sample taken at construction covers no interval yet.
 */
const windowed: readonly boolean[] = sampledSignals.map((name) => name !== 'heapUsedRatio');

const CRITICAL = 0;
const LOW = 3;

/** One reading of a source's result; a throwing getter reads as unknown. */
function read(signals: SampledSignals, name: keyof SampledSignals): unknown {
  try {
    return signals[name];
  } catch {
    // unknown, like a missing reading
  }
  return undefined;
}

/** A reading as a number, or undefined (unknown) for NaN, negative, Infinity or a non-number. */
function validReading(value: unknown): number | undefined {
  return typeof value === 'number' && value >= 0 && value !== Infinity ? value : undefined;
}

/** What a {@link LoadSampler} needs to know, from the shedder's settings. */
export interface SamplerSettings {
  /** Limit of each sampled signal (NaN when off), in {@link sampledSignals} order. */
  readonly limits: readonly number[];
  /** Threshold of each priority, by rank. */
  readonly thresholds: readonly number[];
  readonly hysteresis: number;
  readonly intervalMs: number;
  readonly clock: Clock;
  /** Whether the source's `inFlight` is read (the shedder has an in-flight limit). */
  readonly readsInFlight: boolean;
}

/** Samples a {@link LoadSource} on a timer that does not keep the process alive. */
export class LoadSampler {
  /** Per rank: shed by the sampled signals (with hysteresis). */
  readonly shedBySample: boolean[] = [false, false, false, false];
  /** The last reading of each sampled signal (undefined when unknown), in {@link sampledSignals} order. */
  // Stryker disable next-line ArrayDeclaration: every access is by index, and an absent index reads undefined too
  readonly readings: (number | undefined)[] = [undefined, undefined, undefined, undefined];
  /** The sampled signal furthest over its limit in the last sample, and its ratio. */
  topSignal: SampledSignal | undefined = undefined;
  topRatio = 0;
  /** Clock time of the last sample; undefined before the first or after `close()`. */
  sampledAt: number | undefined = undefined;
  /** The in-flight count the source last reported (0 when unknown or not read). */
  reportedInFlight = 0;
  /** True once closed. */
  stopped = false;
  readonly stateChanged = new Listeners<ShedStateChangeEvent>();
  readonly sampleFailed = new Listeners<SampleFailedEvent>();
  private timer: TimerHandle | undefined = undefined;

  /** `closeSource` closes a source the shedder opened itself. */
  constructor(
    private readonly settings: SamplerSettings,
    private readonly source: LoadSource | undefined,
    private readonly closeSource: (() => void) | undefined,
  ) {}

  /** Takes the first sample (it only opens the windows) and arms the timer; nothing without a source. */
  start(): void {
    if (this.source === undefined) return;
    this.sample(true);
    this.arm();
  }

  /** Stops sampling and forgets every reading; closes a source opened by the shedder. Idempotent. */
  close(): void {
    if (this.stopped) return;
    this.stopped = true;
    if (this.timer !== undefined) {
      this.settings.clock.clearTimer(this.timer);
      this.timer = undefined;
    }
    this.readings.fill(undefined);
    this.reportedInFlight = 0;
    this.shedBySample.fill(false);
    this.topSignal = undefined;
    this.topRatio = 0;
    this.sampledAt = undefined;
    this.closeSource?.();
  }

  private arm(): void {
    const timer = this.settings.clock.setTimer(this.tick, this.settings.intervalMs);
    this.settings.clock.keepAlive?.(timer, false);
    this.timer = timer;
  }

  private readonly tick = (): void => {
    this.timer = undefined;
    // Stryker disable next-line ConditionalExpression: (false) close() clears the pending timer, so no tick runs once stopped; never sampling is killed
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
      // Stryker disable next-line BooleanLiteral: with no signal and ratio 0 nothing stays shed anyway (every threshold exceeds the hysteresis); `reset` says so outright
      this.apply(undefined, 0, true);
      // Stryker disable next-line ConditionalExpression: (true) emitting with no listener does nothing, the guard only saves the event object; never emitting is killed
      if (this.sampleFailed.active) this.sampleFailed.emit({ error });
      return;
    }
    if (this.settings.readsInFlight) this.reportedInFlight = validReading(read(signals, 'inFlight')) ?? 0;
    let top: SampledSignal | undefined;
    let topRatio = 0;
    // Stryker disable next-line EqualityOperator: one more turn finds no limit and no signal name at index 4: it reads signals["undefined"], a key no LoadSource has, into a slot nothing reads
    for (let i = 0; i < sampledSignals.length; i++) {
      const limit = this.settings.limits[i]!;
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
    this.sampledAt = this.settings.clock.now();
    this.topSignal = top;
    this.topRatio = ratio;
    let changed = false;
    const previous = this.stateChanged.active ? this.sampledShedding() : undefined;
    for (let rank = CRITICAL; rank <= LOW; rank++) {
      const threshold = this.settings.thresholds[rank]!;
      const was = this.shedBySample[rank]!;
      // With no signal measured the ratio is 0, below every (positive) threshold.
      const now = reset ? false : was ? ratio >= threshold - this.settings.hysteresis : ratio >= threshold;
      if (now !== was) {
        this.shedBySample[rank] = now;
        changed = true;
      }
    }
    // Stryker disable next-line ConditionalExpression: (previous !== undefined → true) previous is undefined only with no listener, and emitting to none does nothing; the other variants are killed
    if (changed && previous !== undefined) {
      this.stateChanged.emit({ shedding: this.sampledShedding(), previous, signal: top, ratio });
    }
  }

  private sampledShedding(): Priority[] {
    return priorities.filter((_, rank) => this.shedBySample[rank]);
  }
}
