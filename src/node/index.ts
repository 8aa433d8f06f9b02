/**
 * `bulwark/node`: the Node-only parts of bulwark. `loadShedder()` sheds by priority from live
 * process readings (CPU, event-loop delay and utilization, heap, in-flight).
 */
import {
  type LoadLimits,
  LoadShedder,
  type LoadShedderOptions,
  type SampledSignals,
} from '../admission/load-shedder.js';
import { optionsObject } from '../core/validate.js';
import { type ProcessSignal, type ProcessSignals, processSignals } from './process-signals.js';

export {
  type LoadLimits,
  type LoadPressure,
  type LoadReadings,
  LoadShedder,
  type LoadShedderOptions,
  LoadShedPolicy,
  type LoadSource,
  type LoadThresholds,
  type Release,
  type SampledSignals,
  type SampleFailedEvent,
  type ShedEvent,
  type ShedStateChangeEvent,
} from '../admission/load-shedder.js';
export {
  isLoadShedError,
  type LoadShedDetails,
  LoadShedError,
  type LoadSignal,
  type Priority,
  priorities,
} from '../admission/shed-error.js';
export {
  type ProcessSignal,
  type ProcessSignals,
  type ProcessSignalsOptions,
  processSignals,
} from './process-signals.js';

const sampled: readonly ProcessSignal[] = [
  'cpuPercent',
  'eventLoopDelayMs',
  'eventLoopUtilization',
  'heapUsedRatio',
];

/** A shedder that owns its live readings and stops them when closed. */
class ProcessLoadShedder extends LoadShedder {
  constructor(
    options: LoadShedderOptions,
    private readonly live: ProcessSignals,
  ) {
    super(options);
  }

  override close(): void {
    super.close();
    this.live.close();
  }
}

/**
 * Creates a priority {@link LoadShedder}. Without a `source` it reads this process live (see
 * {@link processSignals}), measuring only the signals that have a limit: CPU % of one core, p99
 * event-loop delay, event-loop utilization and heap used ÷ heap limit, sampled every `intervalMs`;
 * in-flight is the count of calls the shedder itself admitted (pass your own `source` to report a
 * process-wide count; the larger one counts). `close()` stops sampling and the event-loop histogram.
 * CPU and event-loop readings count from the first timed sample: the one taken at construction
 * covers no full interval (it would be the time since boot), so nothing is shed by them before.
 *
 * A priority is shed when any signal reaches its threshold fraction of its limit (defaults
 * `critical: 1, high: 0.92, normal: 0.85, low: 0.7`), and admitted again once every sampled signal
 * is `hysteresis` (default 0.05 of the limit) below that. Refusals are `LoadShedError`s (kind
 * `overloaded`, code `ERR_LOAD_SHED`, `retryAfterMs`). Throws a `TypeError` naming any bad option.
 *
 * @example
 * const shedder = loadShedder({ limits: { eventLoopDelayMs: 200, heapUsedRatio: 0.9, inFlight: 500 } });
 * app.use(loadSheddingMiddleware({ shedder, priority: (req) => (req.url?.startsWith('/checkout') ? 'high' : 'normal') }));
 * // or, around any work:
 * await shedder.policy('low').execute(() => rebuildRecommendations());
 */
export function loadShedder(options: LoadShedderOptions): LoadShedder {
  const o = optionsObject('loadShedder options', options);
  if (o.source !== undefined) return new LoadShedder(options);
  const limits = (typeof o.limits === 'object' && o.limits !== null ? o.limits : {}) as LoadLimits;
  const signals = sampled.filter((name) => limits[name as keyof SampledSignals] !== undefined);
  if (signals.length === 0) return new LoadShedder(options);
  const live = processSignals({ signals });
  try {
    return new ProcessLoadShedder({ ...options, source: live.read }, live);
  } catch (error) {
    live.close();
    throw error;
  }
}
