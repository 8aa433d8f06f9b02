/**
 * Priority load shedding: refuse the least important work first when the process is under load.
 * Web-standard core: the readings come from a `source` (bulwark/node supplies the live Node one),
 * time and timers from a `Clock`.
 */
import { type Disposer, type Listener, Listeners } from '../core/events.js';
import type { FailureEvent, PolicyEvents, RejectedEvent, SuccessEvent } from '../core/policy-events.js';
import { countEvent } from '../core/telemetry.js';
import { LoadShedError } from './errors.js';
import { LoadSampler } from './load-sampler.js';
import { LoadShedPolicy, leave, loadShedderName, type ShedGate, tryEnter } from './load-shed-policy.js';
import {
  type LoadShedderOptions,
  type LoadShedRejection,
  type LoadSignal,
  type LoadSource,
  type Priority,
  priorities,
  rankOf,
  readLoadShedderOptions,
  type SampledSignal,
  type SampledSignals,
  type SampleFailedEvent,
  type ShedStateChangeEvent,
  sampledSignals,
} from './load-shedder-options.js';

/**
 * A source of readings the shedder opens itself when none is given, for the sampled signals that
 * have a limit, and closes with the shedder (`bulwark/node` passes the live process readings).
 */
export type OpenSource = (signals: readonly SampledSignal[]) => { readonly read: LoadSource; close(): void };

/** Readings known to the shedder: the last sample, plus the live in-flight count. */
export interface LoadReadings extends SampledSignals {
  /** Calls in flight as the in-flight limit sees them: the larger of its own and its source's count. */
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

/**
 * A priority load shedder, made by {@link loadShedder} (from `bulwark` with your own `source`, or
 * from `bulwark/node` with the live process readings by default).
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
 * **Events.** Its `name` (default `'load-shedder'`) is the `policy` of its and its policies' events:
 * `onRejected` (`reason: 'shed'`, `error` the {@link LoadShedError}) for every refusal, `admit` and
 * HTTP included; `onSuccess`/`onFailure` for calls run through its policies; `onStateChange`, `onSampleFailed`.
 *
 * **Failure behaviour.** A refusal is a {@link LoadShedError} (kind `overloaded`, code
 * `ERR_LOAD_SHED`, `retryAfterMs`), thrown by `admit` or returned by the policy's `execute` before
 * the operation starts. A source that throws (or returns a non-object) fails open: the sampled
 * readings are cleared and nothing is shed by them until a good sample, and `onSampleFailed`
 * fires. An invalid single reading (NaN, negative, not a number) counts as unknown. After
 * `close()` sampling stops and only the in-flight limit applies.
 *
 * @example
 * const shedder = loadShedder({ limits: { cpuPercent: 90, inFlight: 200 }, source: () => ({ cpuPercent: readCpu() }) });
 * await shedder.policy('low').execute(() => reindex());
 */
export class LoadShedder implements ShedGate, PolicyEvents<LoadShedRejection> {
  /** The name its events carry, and the events of its policies (the `name` option). */
  readonly name: string;
  private readonly retryAfterMs: number;
  private readonly inFlightLimit: number;
  /** In-flight count at which each rank is refused: ⌊threshold × limit⌋ (Infinity when off). */
  private readonly inFlightCeiling: readonly number[];
  private readonly sampler: LoadSampler;
  /** Calls admitted by this shedder and not yet finished. */
  private count = 0;
  /** The policy of each priority, by rank. */
  private readonly policies: readonly LoadShedPolicy[];
  private readonly refused = new Listeners<RejectedEvent<LoadShedRejection>>();

  /**
   * Validates every option (a `TypeError` names the bad one), takes a first sample at once (its
   * windowed readings only open the first window; see {@link LoadSource}), and, when there is a
   * `source`, samples it every `intervalMs` on a timer that does not keep the process alive.
   * Without a `source`, `openSource` (when given) opens one for the sampled signals with a limit.
   */
  constructor(options: LoadShedderOptions, openSource?: OpenSource) {
    const o = readLoadShedderOptions(options);
    this.inFlightLimit = o.inFlightLimit;
    // The most calls of each priority that may be in flight after admission; the epsilon keeps
    // 0.29 × 100 from flooring to 28.
    this.inFlightCeiling = o.thresholds.map((t) => Math.floor(t * this.inFlightLimit + 1e-9));
    this.retryAfterMs = o.retryAfterMs;
    this.name = o.name ?? loadShedderName;
    const events = { name: this.name, onSuccess: o.onSuccess, onFailure: o.onFailure };
    this.policies = priorities.map((_, rank) => new LoadShedPolicy(this, rank, events, o.clock));
    let source = o.source;
    let closeSource: (() => void) | undefined;
    if (source === undefined && o.sampled) {
      if (openSource === undefined) {
        throw new TypeError(
          'expected "source" to be a function (a sampled signal has a limit; use loadShedder() from bulwark/node for live readings), got undefined',
        );
      }
      const opened = openSource(sampledSignals.filter((_, i) => !Number.isNaN(o.limits[i])));
      source = opened.read;
      closeSource = () => opened.close();
    }
    this.sampler = new LoadSampler(
      { ...o, readsInFlight: o.inFlightLimit !== Infinity },
      source,
      closeSource,
    );
    if (o.onRejected !== undefined) this.refused.add(o.onRejected);
    if (o.onStateChange !== undefined) this.sampler.stateChanged.add(o.onStateChange);
    if (o.onSampleFailed !== undefined) this.sampler.sampleFailed.add(o.onSampleFailed);
    this.sampler.start();
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
    if (refusal !== undefined) {
      countEvent('shed', 'load-shedder', this.name, refusal); // a policy's refusal: by its gate
      throw refusal;
    }
    let released = false;
    return () => {
      if (released) return;
      released = true;
      this.count--;
    };
  }

  /**
   * Whether a call of `priority` would be refused now (nothing counted or emitted: to skip optional
   * work early). Throws a `TypeError` for an unknown priority.
   */
  isShedding(priority: Priority): boolean {
    return this.wouldRefuse(rankOf(priority));
  }

  /**
   * A {@link Policy} that admits each call at `priority` or rejects it with a {@link LoadShedError}
   * without starting the operation. Admitted calls count as in flight until they settle, however
   * they end. The same instance for the same priority; a `TypeError` for an unknown priority.
   *
   * @example
   * const checkout = pipeline(shedder.policy('high'), timeout(2_000));
   * await checkout.execute(({ signal }) => pay(order, { signal }));
   */
  policy(priority: Priority): LoadShedPolicy {
    return this.policies[rankOf(priority)]!;
  }

  /** True once {@link LoadShedder.close} was called. */
  get closed(): boolean {
    return this.sampler.stopped;
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
    const sampler = this.sampler;
    const readings: Record<string, number | undefined> = { inFlight };
    // Stryker disable next-line EqualityOperator: one more turn reads the sampler's index 4, which holds no reading
    for (let i = 0; i < sampledSignals.length; i++) {
      const value = sampler.readings[i];
      if (value !== undefined) readings[sampledSignals[i]!] = value;
    }
    let ratio = sampler.topRatio;
    let signal: LoadSignal | undefined = sampler.topSignal;
    if (inFlight / this.inFlightLimit > ratio) {
      ratio = inFlight / this.inFlightLimit;
      signal = 'inFlight';
    }
    const shedding = priorities.filter((_, rank) => this.wouldRefuse(rank));
    return {
      readings: readings as unknown as LoadReadings,
      ratio,
      signal,
      shedding,
      sampledAt: sampler.sampledAt,
    };
  }

  /** Subscribes to every refusal (`admit`, policies, HTTP adapters); returns a disposer. */
  onRejected(listener: Listener<RejectedEvent<LoadShedRejection>>): Disposer {
    return this.refused.add(listener);
  }

  /** Subscribes to the calls its policies ran that resolved, at every priority; returns a disposer. */
  onSuccess(listener: Listener<SuccessEvent>): Disposer {
    return this.subscribeAll((policy) => policy.onSuccess(listener));
  }

  /** Subscribes to the calls its policies ran that failed, at every priority; returns a disposer. */
  onFailure(listener: Listener<FailureEvent>): Disposer {
    return this.subscribeAll((policy) => policy.onFailure(listener));
  }

  /** Subscribes to changes of the priorities shed by sampled signals; returns a disposer. */
  onStateChange(listener: Listener<ShedStateChangeEvent>): Disposer {
    return this.sampler.stateChanged.add(listener);
  }

  /** Subscribes to failed samples; returns a disposer. */
  onSampleFailed(listener: Listener<SampleFailedEvent>): Disposer {
    return this.sampler.sampleFailed.add(listener);
  }

  /**
   * Stops sampling and forgets the sampled readings (the reported in-flight count included), so
   * from now on only the in-flight limit, on this shedder's own count, refuses calls. Calls in
   * flight are unaffected. Calling it again does nothing.
   */
  close(): void {
    this.sampler.close();
  }

  /** Admits (counting one in flight) and returns undefined, or returns the refusal. */
  [tryEnter](rank: number): LoadShedError | undefined {
    const sampler = this.sampler;
    if (sampler.shedBySample[rank]) return this.refuse(rank, sampler.topSignal!, sampler.topRatio);
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
    return this.sampler.shedBySample[rank]! || this.inFlightNow() >= this.inFlightCeiling[rank]!;
  }

  /** What the in-flight limit counts: the larger of this shedder's own count and the reported one. */
  private inFlightNow(): number {
    return Math.max(this.count, this.sampler.reportedInFlight);
  }

  private refuse(rank: number, signal: LoadSignal, ratio: number): LoadShedError {
    const priority = priorities[rank]!;
    const error = new LoadShedError({ priority, signal, ratio, retryAfterMs: this.retryAfterMs });
    // Stryker disable next-line ConditionalExpression: (true) emitting with no listener does nothing, the guard only saves the event object; never emitting is killed
    if (this.refused.active) this.refused.emit({ policy: this.name, reason: 'shed', error });
    return error;
  }

  /** Subscribes on the policy of every priority; the disposer unsubscribes from all of them. */
  private subscribeAll(subscribe: (policy: LoadShedPolicy) => Disposer): Disposer {
    const disposers = this.policies.map(subscribe);
    return () => {
      for (const dispose of disposers) dispose();
    };
  }
}

/**
 * Creates a priority {@link LoadShedder} on web-standard APIs only. A sampled signal's limit
 * (CPU, event-loop delay or utilization, heap) needs a `source` of readings; with only
 * `limits.inFlight` none is needed (a source may still report a process-wide in-flight count).
 * `loadShedder` from `bulwark/node` takes the same options and defaults `source` to the live
 * readings of the process.
 *
 * Throws a `TypeError` naming any bad option (`expected "limits.cpuPercent" to be a positive
 * finite number, got 0`), an unknown one, or a missing `source`.
 *
 * @example
 * const shedder = loadShedder({ limits: { cpuPercent: 90, inFlight: 200 }, source: () => ({ cpuPercent: readCpu() }) });
 * const release = shedder.admit('normal');
 * try { await handle(request); } finally { release(); }
 */
export function loadShedder(options: LoadShedderOptions): LoadShedder {
  return new LoadShedder(options);
}
