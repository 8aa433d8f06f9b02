/**
 * The live load readings of this Node process: the default source of `loadShedder()` from
 * `bulwark/node`. Node-only (perf_hooks, v8, process).
 */
import {
  type EventLoopUtilization,
  type IntervalHistogram,
  monitorEventLoopDelay,
  performance,
} from 'node:perf_hooks';
import { getHeapStatistics } from 'node:v8';
import type { SampledSignals } from '../admission/load-shedder-options.js';
import { positiveInt, readOptions, type Schema, withDefault } from '../core/read-options.js';
import { show } from '../core/validate.js';

/** A sampled signal {@link processSignals} can read. */
export type ProcessSignal = keyof SampledSignals;

const allSignals: readonly ProcessSignal[] = [
  'cpuPercent',
  'eventLoopDelayMs',
  'eventLoopUtilization',
  'heapUsedRatio',
];

/** Options of {@link processSignals}. */
export interface ProcessSignalsOptions {
  /** Which signals to measure; the others are reported as unknown and cost nothing. @default all four */
  readonly signals?: readonly ProcessSignal[] | undefined;
  /**
   * Sampling resolution of the event-loop delay histogram (`monitorEventLoopDelay`), in
   * milliseconds. @default 10
   */
  readonly resolutionMs?: number | undefined;
}

/** A list of signals this module can read. */
function signalList(name: string, value: unknown): readonly ProcessSignal[] {
  if (!Array.isArray(value) || value.some((s) => !allSignals.includes(s))) {
    throw new TypeError(
      `expected "${name}" to be an array of ${allSignals.map((s) => `"${s}"`).join(', ')}, got ${show(value)}`,
    );
  }
  return value;
}

const processSignalsSchema = {
  signals: withDefault(allSignals, signalList),
  resolutionMs: withDefault(10, positiveInt),
} satisfies Schema<ProcessSignalsOptions>;

/** Live readings of this process; {@link ProcessSignals.read} returns the values since the previous read. */
export interface ProcessSignals {
  /**
   * The readings over the time since the previous `read` (or since creation):
   * - `cpuPercent`: process CPU time (user + system, all threads) ÷ wall time × 100, so 100 is one
   *   core fully busy and values above 100 mean several threads were busy;
   * - `eventLoopDelayMs`: the p99 of `monitorEventLoopDelay` over about the last two reads: two
   *   histograms take turns, each reset every other read, because a reset drops the delay that
   *   straddles it (Node records nothing for the first tick after a reset, so a block starting
   *   right after one would otherwise go unseen); unknown when the histogram recorded nothing;
   * - `eventLoopUtilization`: `performance.eventLoopUtilization()` between the two reads;
   * - `heapUsedRatio`: V8 `used_heap_size ÷ heap_size_limit`, now.
   * A reading that cannot be computed yet (no time passed) is `undefined`.
   */
  read(): SampledSignals;
  /** Stops the event-loop delay histograms. Calling it again does nothing. */
  close(): void;
}

/**
 * Starts measuring this process's load. Pass `read` as a load shedder's `source`, or let
 * `loadShedder()` from `bulwark/node` do it (it measures only the signals that have a limit and
 * closes the readings with the shedder). Throws a `TypeError` for a bad option.
 *
 * @example
 * const signals = processSignals();
 * setInterval(() => console.log(signals.read()), 1_000).unref();
 */
export function processSignals(options?: ProcessSignalsOptions): ProcessSignals {
  const { signals, resolutionMs } = readOptions('processSignals options', options, processSignalsSchema);
  return new LiveSignals(new Set(signals), resolutionMs);
}

class LiveSignals implements ProcessSignals {
  private readonly cpu: boolean;
  private readonly heap: boolean;
  /** Two staggered histograms (see `read`); undefined when the delay is not measured. */
  private readonly histograms: readonly [IntervalHistogram, IntervalHistogram] | undefined;
  private turn: 0 | 1 = 0;
  private lastElu: EventLoopUtilization | undefined;
  private lastCpu: NodeJS.CpuUsage | undefined;
  private lastAt: number;
  private closed = false;

  constructor(wanted: ReadonlySet<ProcessSignal>, resolutionMs: number) {
    this.cpu = wanted.has('cpuPercent');
    this.heap = wanted.has('heapUsedRatio');
    // Wall time for the CPU ratio: the process's real elapsed time, not an injectable clock,
    // because CPU time is real too.
    this.lastAt = performance.now();
    if (this.cpu) this.lastCpu = process.cpuUsage();
    if (wanted.has('eventLoopUtilization')) this.lastElu = performance.eventLoopUtilization();
    if (wanted.has('eventLoopDelayMs')) {
      // The histograms' timers do not keep the process alive.
      this.histograms = [
        monitorEventLoopDelay({ resolution: resolutionMs }),
        monitorEventLoopDelay({ resolution: resolutionMs }),
      ];
      this.histograms[0].enable();
      this.histograms[1].enable();
    }
  }

  readonly read = (): SampledSignals => {
    const now = performance.now();
    const elapsedMs = now - this.lastAt;
    this.lastAt = now;
    let cpuPercent: number | undefined;
    if (this.lastCpu !== undefined) {
      const used = process.cpuUsage(this.lastCpu);
      this.lastCpu = process.cpuUsage();
      if (elapsedMs > 0) cpuPercent = ((used.user + used.system) / 1000 / elapsedMs) * 100;
    }
    let eventLoopDelayMs: number | undefined;
    if (this.histograms !== undefined && !this.closed) {
      // Read the one reset two reads ago; the other keeps covering the gap this reset opens.
      const histogram = this.histograms[this.turn];
      this.turn = this.turn === 0 ? 1 : 0;
      if (histogram.count > 0) eventLoopDelayMs = histogram.percentile(99) / 1e6;
      histogram.reset();
    }
    let eventLoopUtilization: number | undefined;
    if (this.lastElu !== undefined) {
      const current = performance.eventLoopUtilization();
      const delta = performance.eventLoopUtilization(current, this.lastElu);
      this.lastElu = current;
      if (delta.idle + delta.active > 0) eventLoopUtilization = delta.utilization;
    }
    let heapUsedRatio: number | undefined;
    if (this.heap) {
      const stats = getHeapStatistics();
      if (stats.heap_size_limit > 0) heapUsedRatio = stats.used_heap_size / stats.heap_size_limit;
    }
    return { cpuPercent, eventLoopDelayMs, eventLoopUtilization, heapUsedRatio };
  };

  close(): void {
    if (this.closed) return;
    this.closed = true;
    this.histograms?.[0].disable();
    this.histograms?.[1].disable();
  }
}
