/**
 * The refusals of `optimisticUpdate()`: every attempt conflicted with another writer, or the record
 * to update does not exist. Neither wraps an error of yours: a `load`, `mutate` or `save` that
 * throws ends the call with its own error.
 */
import { defineErrorGuard, RejectedError } from '../core/errors.js';

/**
 * Every one of `maxAttempts` attempts lost its race: each time, another writer saved the record
 * between this call's `load` and its `save` (`save` returned `false`). Nothing of this call was
 * written. Kind `conflict`; `retryAfterMs` is the delay the next retry would have waited, a hint for
 * a caller that retries later (a queue that redelivers, a client told 409). The message never
 * contains the key (it reaches clients); read `key`.
 *
 * @example
 * try {
 *   await accounts.update(accountId);
 * } catch (error) {
 *   if (isOptimisticConflictError(error)) log.warn({ attempts: error.attempts }, 'account too contended');
 *   throw error;
 * }
 */
export class OptimisticConflictError extends RejectedError {
  /** The key passed to `update`. */
  readonly key: unknown;
  /** How many attempts ran, the first included (all conflicted): `maxAttempts`. */
  readonly attempts: number;
  declare readonly retryAfterMs: number;
  constructor(key: unknown, attempts: number, retryAfterMs: number) {
    super(
      `the record was changed by another writer during each of ${attempts} attempt${attempts === 1 ? '' : 's'}`,
      { code: 'ERR_OPTIMISTIC_CONFLICT', kind: 'conflict', retryAfterMs, expose: true },
    );
    this.key = key;
    this.attempts = attempts;
  }
}
/** True for an {@link OptimisticConflictError} from any copy of bulwark. */
export const isOptimisticConflictError = defineErrorGuard<OptimisticConflictError>('ERR_OPTIMISTIC_CONFLICT');

/**
 * `load` found no record for the key (it returned `undefined`), at the first attempt or after a
 * conflict (the record was deleted meanwhile). Nothing was written and `mutate` did not run on a
 * missing record. Kind `not_found` (HTTP 404). The message never contains the key; read `key`.
 *
 * @example
 * try {
 *   await profiles.update(userId);
 * } catch (error) {
 *   if (isOptimisticNotFoundError(error)) return undefined;
 *   throw error;
 * }
 */
export class OptimisticNotFoundError extends RejectedError {
  /** The key passed to `update`. */
  readonly key: unknown;
  /** The attempt whose `load` found nothing (1 unless the record was deleted during the call). */
  readonly attempts: number;
  constructor(key: unknown, attempts: number) {
    super('the record to update does not exist', {
      code: 'ERR_OPTIMISTIC_NOT_FOUND',
      kind: 'not_found',
      expose: true,
    });
    this.key = key;
    this.attempts = attempts;
  }
}
/** True for an {@link OptimisticNotFoundError} from any copy of bulwark. */
export const isOptimisticNotFoundError =
  defineErrorGuard<OptimisticNotFoundError>('ERR_OPTIMISTIC_NOT_FOUND');
