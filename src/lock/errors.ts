/**
 * The refusals of the lock pattern: not acquired in time, lost while held, and a write with a
 * stale fence. Three classes, so that "somebody else holds it" is never confused with "we held it
 * and lost it" (node-redlock's single error made that guesswork).
 */
import { defineErrorGuard, RejectedError } from '../core/errors.js';

/**
 * The lock could not be acquired within `waitMs`: another owner held it all along. `fn` did not
 * run. Kind `conflict`; `retryAfterMs` is a hint of when to try again (the holder's lease may
 * still be renewed). The message never contains the key; read `key`.
 */
export class LockNotAcquiredError extends RejectedError {
  /** The key that stayed held (for `withLocks`, the first one that did). */
  readonly key: string;
  declare readonly retryAfterMs: number;
  constructor(key: string, waitedMs: number, retryAfterMs: number) {
    super(`the lock was not acquired within ${waitedMs} ms: another owner holds it`, {
      code: 'ERR_LOCK_NOT_ACQUIRED',
      kind: 'conflict',
      retryAfterMs,
      expose: true,
    });
    this.key = key;
  }
}
/** True for a {@link LockNotAcquiredError} from any copy of bulwark. */
export const isLockNotAcquiredError = defineErrorGuard<LockNotAcquiredError>('ERR_LOCK_NOT_ACQUIRED');

/**
 * The lock was held and lost while `fn` ran: a renewal was refused (the lease had expired and was
 * taken over), failed (store down: `cause`), or could not be confirmed before the lease would end.
 * `fn`'s signal was aborted with this error at that moment, and the call rejects with it even if
 * `fn` resolved: another owner may be running the same critical section. Kind `conflict`.
 */
export class LockLostError extends RejectedError {
  /** The key whose lease was lost. */
  readonly key: string;
  constructor(key: string, cause?: unknown) {
    super('the lock was lost before the work finished', {
      code: 'ERR_LOCK_LOST',
      kind: 'conflict',
      cause,
      expose: true,
    });
    this.key = key;
  }
}
/** True for a {@link LockLostError} from any copy of bulwark. */
export const isLockLostError = defineErrorGuard<LockLostError>('ERR_LOCK_LOST');

/**
 * A fenced write was refused: a writer with a higher fence has already written to the resource,
 * so this one's lock was lost (it paused past its lease, or its renewal failed) and its write
 * would overwrite newer data. Nothing was written. Kind `conflict`: do not retry with the same
 * fence; acquire the lock again.
 */
export class StaleFenceError extends RejectedError {
  /** The resource written to. */
  readonly resource: string;
  /** The fence that was refused. */
  readonly fence: number;
  /** The highest fence that has written to the resource. */
  readonly highest: number;
  constructor(resource: string, fence: number, highest: number) {
    super(`the write's fence ${fence} is lower than the highest seen, ${highest}: its lock was lost`, {
      code: 'ERR_STALE_FENCE',
      kind: 'conflict',
      expose: true,
    });
    this.resource = resource;
    this.fence = fence;
    this.highest = highest;
  }
}
/** True for a {@link StaleFenceError} from any copy of bulwark. */
export const isStaleFenceError = defineErrorGuard<StaleFenceError>('ERR_STALE_FENCE');
