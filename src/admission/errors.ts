/**
 * The refusals of the admission patterns. Both are {@link RejectedError}s of kind `overloaded`
 * (HTTP 503, retried by `retry()` after a backoff), with a stable `code` and a guard that works
 * across duplicate copies of bulwark.
 */
import { defineErrorGuard, RejectedError } from '../core/errors.js';

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
