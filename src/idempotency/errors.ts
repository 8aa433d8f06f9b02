/**
 * The refusals of the idempotency pattern, and the stored failure a replay rethrows.
 */
import { defineErrorGuard, isResilienceError, RejectedError, ResilienceError } from '../core/errors.js';

const storedBrand = Symbol.for('bulwark.StoredFailureError');

import type { Kind } from '../core/kind.js';

/**
 * The key was used before for another request (another fingerprint): the handler did not run and
 * nothing was replayed. Kind `conflict`; the HTTP middleware answers 422. The message never
 * contains the key (it reaches clients); read `key`.
 */
export class IdempotencyConflictError extends RejectedError {
  /** The key that was reused. */
  readonly key: string;
  constructor(key: string) {
    super('this idempotency key was already used for a different request', {
      code: 'ERR_IDEMPOTENCY_CONFLICT',
      kind: 'conflict',
      expose: true,
    });
    this.key = key;
  }
}
/** True for an {@link IdempotencyConflictError} from any copy of bulwark. */
export const isIdempotencyConflictError =
  defineErrorGuard<IdempotencyConflictError>('ERR_IDEMPOTENCY_CONFLICT');

/**
 * Another request with the same key and fingerprint is still being handled: with `wait: false` at
 * once, otherwise after waiting `maxWaitMs`. Kind `conflict`; `retryAfterMs` says when its lease
 * ends at the latest. The HTTP middleware answers 409 with `Retry-After`.
 */
export class IdempotencyInProgressError extends RejectedError {
  /** The key in progress. */
  readonly key: string;
  declare readonly retryAfterMs: number;
  constructor(key: string, retryAfterMs: number) {
    super('a request with this idempotency key is still in progress', {
      code: 'ERR_IDEMPOTENCY_IN_PROGRESS',
      kind: 'conflict',
      retryAfterMs,
      expose: true,
    });
    this.key = key;
  }
}
/** True for an {@link IdempotencyInProgressError} from any copy of bulwark. */
export const isIdempotencyInProgressError = defineErrorGuard<IdempotencyInProgressError>(
  'ERR_IDEMPOTENCY_IN_PROGRESS',
);

/**
 * The caller no longer owns the key: a lease renewal failed, came too late, or found the key taken
 * over, or `complete` was refused. The handler's signal was aborted with this error, and the call
 * rejects with it even if the handler resolved (its result was not stored: another request may be
 * running the same work). Kind `conflict`.
 */
export class LeaseLostError extends RejectedError {
  /** The key whose lease was lost. */
  readonly key: string;
  constructor(key: string, cause?: unknown) {
    super('the idempotency lease was lost before the result was stored', {
      code: 'ERR_LEASE_LOST',
      kind: 'conflict',
      cause,
      expose: true,
    });
    this.key = key;
  }
}
/** True for a {@link LeaseLostError} from any copy of bulwark. */
export const isLeaseLostError = defineErrorGuard<LeaseLostError>('ERR_LEASE_LOST');

/** What a stored failure keeps of the original error. */
export interface StoredFailure {
  readonly name: string;
  readonly message: string;
  readonly kind: Kind;
  readonly code?: string | undefined;
  readonly status?: number | undefined;
}

/**
 * A replayed failure: the first request with this key failed with a permanent kind that
 * `storeErrors` chose to keep as the final outcome, and every replay rejects with this. It carries
 * the original's `kind`, `name` (as `originalName`), `code` and HTTP `status` when it had them; its
 * message is shown to clients only if the original's was.
 */
export class StoredFailureError extends ResilienceError {
  /** The original error's `name`. */
  readonly originalName: string;
  /** The original error's HTTP status, when it had one. */
  readonly status: number | undefined;
  constructor(failure: StoredFailure, expose: boolean) {
    super(failure.message, { code: failure.code ?? 'ERR_STORED_FAILURE', kind: failure.kind, expose });
    this.originalName = failure.name;
    this.status = failure.status;
  }
}
Object.defineProperty(StoredFailureError.prototype, storedBrand, { value: true });
/** True for a {@link StoredFailureError} from any copy of bulwark (whatever the original's code). */
export function isStoredFailureError(error: unknown): error is StoredFailureError {
  return isResilienceError(error) && (error as { [storedBrand]?: true })[storedBrand] === true;
}
