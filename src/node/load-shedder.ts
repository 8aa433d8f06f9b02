/**
 * The `bulwark/node` load shedder: the same factory and options as the root one, with the live
 * readings of this process as the default `source`.
 */
import { LoadShedder, type OpenSource } from '../admission/load-shedder.js';
import type { LoadShedderOptions } from '../admission/load-shedder-options.js';
import { processSignals } from './process-signals.js';

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
 * `overloaded`, code `ERR_LOAD_SHED`, `retryAfterMs`). Throws a `TypeError` naming any bad option;
 * the live readings are opened only once every option is valid.
 *
 * @example
 * const shedder = loadShedder({ limits: { eventLoopDelayMs: 200, heapUsedRatio: 0.9, inFlight: 500 } });
 * app.use(loadSheddingMiddleware({ shedder, priority: (req) => (req.url?.startsWith('/checkout') ? 'high' : 'normal') }));
 * // or, around any work:
 * await shedder.policy('low').execute(() => rebuildRecommendations());
 */
export function loadShedder(options: LoadShedderOptions): LoadShedder {
  return new LoadShedder(options, openProcessSignals);
}

/** Opens the live readings of the signals that have a limit; the shedder closes them with itself. */
const openProcessSignals: OpenSource = (signals) => processSignals({ signals });
