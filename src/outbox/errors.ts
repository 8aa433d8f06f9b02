/** The refusals of the outbox pattern. */
import { defineErrorGuard, RejectedError } from '../core/errors.js';

/**
 * A publisher confirmed only part of a batch: `failures` maps each event id that failed to its
 * error; every other event of the batch was confirmed. The relay marks the confirmed ones
 * delivered and schedules the failed ones again. Kind `transient`; `cause` is the first
 * failure's error.
 */
export class OutboxPublishError extends RejectedError {
  /** Event id → why it failed. */
  readonly failures: ReadonlyMap<string, unknown>;
  constructor(failures: ReadonlyMap<string, unknown>) {
    const first = failures.values().next().value;
    super(`${failures.size} event(s) of the batch were not confirmed`, {
      code: 'ERR_OUTBOX_PUBLISH',
      kind: 'transient',
      cause: first,
    });
    this.failures = failures;
  }
}
/** True for an {@link OutboxPublishError} from any copy of bulwark. */
export const isOutboxPublishError = defineErrorGuard<OutboxPublishError>('ERR_OUTBOX_PUBLISH');
