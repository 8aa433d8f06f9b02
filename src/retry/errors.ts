/**
 * The refusal of a retry policy: it stopped trying before a success.
 */
import { defineErrorGuard, RejectedError } from '../core/errors.js';
import type { Kind } from '../core/kind.js';

/** Why a retry policy stopped trying. */
export type GiveUpReason = 'attempts' | 'elapsed' | 'deadline';

/**
 * A retry policy stopped before success. `cause` is the last attempt's error and `kind` is that
 * error's kind, so callers (and an outer breaker) see what actually failed.
 */
export class RetriesExhaustedError extends RejectedError {
  /** How many attempts ran, the first included. */
  readonly attempts: number;
  /** Why it stopped: no attempts left, `maxElapsedMs` spent, or the deadline cannot fit another try. */
  readonly reason: GiveUpReason;
  constructor(attempts: number, reason: GiveUpReason, lastError: unknown, kind: Kind) {
    const why =
      reason === 'attempts'
        ? `gave up after ${attempts} attempt${attempts === 1 ? '' : 's'}`
        : reason === 'elapsed'
          ? `gave up after ${attempts} attempt${attempts === 1 ? '' : 's'}: maxElapsedMs spent`
          : `gave up after ${attempts} attempt${attempts === 1 ? '' : 's'}: the deadline cannot fit another attempt`;
    const last = lastError instanceof Error ? lastError.message : String(lastError);
    super(`${why}; last error: ${last}`, { code: 'ERR_RETRIES_EXHAUSTED', kind, cause: lastError });
    this.attempts = attempts;
    this.reason = reason;
  }
}
/** True for a {@link RetriesExhaustedError} from any copy of bulwark. */
export const isRetriesExhaustedError = defineErrorGuard<RetriesExhaustedError>('ERR_RETRIES_EXHAUSTED');
