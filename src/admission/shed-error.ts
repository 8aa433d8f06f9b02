/**
 * The refusal of a load shedder: this priority is shed right now because a load signal passed its
 * threshold.
 */
import { defineErrorGuard, RejectedError } from '../core/errors.js';

/** The request priorities a load shedder knows, from most to least important. */
export type Priority = 'critical' | 'high' | 'normal' | 'low';

/** Every priority, most important first. */
export const priorities: readonly Priority[] = ['critical', 'high', 'normal', 'low'];

/** The load signals a shedder can watch. */
export type LoadSignal =
  | 'cpuPercent'
  | 'eventLoopDelayMs'
  | 'eventLoopUtilization'
  | 'heapUsedRatio'
  | 'inFlight';

/** What a {@link LoadShedError} reports about the refusal. */
export interface LoadShedDetails {
  /** The priority that was refused. */
  readonly priority: Priority;
  /** The signal that caused the refusal (the one furthest over its limit). */
  readonly signal: LoadSignal;
  /** That signal's reading, as a fraction of its limit (0.9 = 90 % of the limit). */
  readonly ratio: number;
  /** How long the caller should wait before trying again, in milliseconds. */
  readonly retryAfterMs: number;
}

/**
 * A load shedder refused a call: its priority is shed while the process is under load. Kind
 * `overloaded` (HTTP 503), code `ERR_LOAD_SHED`, and `retryAfterMs`; a retry later may succeed.
 * The operation was never started.
 */
export class LoadShedError extends RejectedError {
  /** The priority that was refused. */
  readonly priority: Priority;
  /** The signal that caused the refusal. */
  readonly signal: LoadSignal;
  /** That signal's reading as a fraction of its limit. */
  readonly ratio: number;
  declare readonly retryAfterMs: number;

  constructor(details: LoadShedDetails) {
    super(
      `load shed: "${details.priority}" priority refused, ${details.signal} at ${Math.round(
        details.ratio * 100,
      )} % of its limit`,
      { code: 'ERR_LOAD_SHED', kind: 'overloaded', retryAfterMs: details.retryAfterMs, expose: true },
    );
    this.priority = details.priority;
    this.signal = details.signal;
    this.ratio = details.ratio;
  }
}

/** True for a {@link LoadShedError} from any copy of bulwark. */
export const isLoadShedError: (error: unknown) => error is LoadShedError =
  defineErrorGuard<LoadShedError>('ERR_LOAD_SHED');
