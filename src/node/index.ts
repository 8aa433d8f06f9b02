/**
 * `bulwark/node`: the Node-only parts of bulwark. `loadShedder()` sheds by priority from live
 * process readings (CPU, event-loop delay and utilization, heap, in-flight) by default; it takes
 * the same options as the root `loadShedder()`, whose types are exported from `bulwark`.
 */
export { loadShedder } from './load-shedder.js';
export {
  type ProcessSignal,
  type ProcessSignals,
  type ProcessSignalsOptions,
  processSignals,
} from './process-signals.js';
