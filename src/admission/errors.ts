/**
 * The refusals of the admission patterns (concurrency limit, bulkhead, load shedder). Each is a
 * {@link RejectedError} of kind `overloaded` (HTTP 503, retried by `retry()` after a backoff), with
 * a stable `code` and a guard that works across duplicate copies of bulwark.
 */
import { defineErrorGuard, RejectedError } from '../core/errors.js';
import type { LoadSignal, Priority } from './load-shedder-options.js';

/**
 * A {@link concurrencyLimit} refused a call because `max` calls were already in flight. Kind
 * `overloaded`, code `ERR_CONCURRENCY_LIMIT`. The operation never ran. There is no
 * `retryAfterMs`: a slot frees whenever some call ends, which the limit cannot predict.
 */
export class ConcurrencyLimitError extends RejectedError {
  /** The limit that was reached. */
  readonly limit: number;

  /** @param limit the limiter's `max`. */
  constructor(limit: number) {
    super(`concurrency limit reached: ${limit} call${limit === 1 ? '' : 's'} already in flight`, {
      code: 'ERR_CONCURRENCY_LIMIT',
      kind: 'overloaded',
      expose: true,
    });
    this.limit = limit;
  }
}

/** True for a {@link ConcurrencyLimitError} from any copy of bulwark. */
export const isConcurrencyLimitError = defineErrorGuard<ConcurrencyLimitError>('ERR_CONCURRENCY_LIMIT');

/**
 * Why a {@link bulkhead} refused a call: `queue-full` (every slot busy and `maxQueue` callers
 * already waiting; refused at once) or `queue-timeout` (the caller waited `queueTimeoutMs` in the
 * queue without getting a slot).
 */
export type BulkheadRejection = 'queue-full' | 'queue-timeout';

/** What a {@link BulkheadFullError} reports about the bulkhead that refused. */
export interface BulkheadLimits {
  readonly maxConcurrent: number;
  readonly maxQueue: number;
  /** `Infinity` when the bulkhead has no queue timeout. */
  readonly queueTimeoutMs: number;
}

/**
 * A {@link bulkhead} refused a call: its queue was full, or the caller's `queueTimeoutMs` passed
 * while it waited (see {@link BulkheadFullError.reason}). Kind `overloaded`, code
 * `ERR_BULKHEAD_FULL` in both cases, so one `isBulkheadFullError` check covers "the bulkhead
 * turned me away" (as resilience4j's `BulkheadFullException` does for a wait timeout). The
 * operation never ran and never held a slot. It is not a `TimeoutError`: the operation did not
 * time out, it never started. No `retryAfterMs`: when a slot frees is not predictable.
 */
export class BulkheadFullError extends RejectedError {
  /** `queue-full` (refused at once) or `queue-timeout` (waited `queueTimeoutMs`, got no slot). */
  readonly reason: BulkheadRejection;
  readonly maxConcurrent: number;
  readonly maxQueue: number;
  /** `Infinity` when the bulkhead has no queue timeout. */
  readonly queueTimeoutMs: number;

  constructor(reason: BulkheadRejection, limits: BulkheadLimits) {
    super(
      reason === 'queue-full'
        ? `bulkhead full: ${limits.maxConcurrent} in flight and ${limits.maxQueue} queued`
        : `bulkhead queue timeout: no slot free after waiting ${limits.queueTimeoutMs} ms`,
      { code: 'ERR_BULKHEAD_FULL', kind: 'overloaded', expose: true },
    );
    this.reason = reason;
    this.maxConcurrent = limits.maxConcurrent;
    this.maxQueue = limits.maxQueue;
    this.queueTimeoutMs = limits.queueTimeoutMs;
  }
}

/** True for a {@link BulkheadFullError} (either reason) from any copy of bulwark. */
export const isBulkheadFullError = defineErrorGuard<BulkheadFullError>('ERR_BULKHEAD_FULL');

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
