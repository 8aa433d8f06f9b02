/** The refusal of the saga pattern: a mandatory step failed, and what compensation did about it. */
import { classify } from '../core/classify.js';
import { defineErrorGuard, RejectedError } from '../core/errors.js';

/** A compensation that failed (after its policy's retries): the step it was to undo, and why. */
export interface CompensationFailure {
  readonly step: string;
  readonly error: unknown;
}

/**
 * A mandatory step failed (or the caller aborted): every completed step with a `compensate` was
 * compensated, in reverse order, before this was thrown. `step` is the step that failed, `cause`
 * its error (or the caller's abort reason), `compensated` the steps undone (in the order they were
 * undone), `compensationErrors` each compensation that failed for good: none is swallowed, and
 * one failing does not stop the others.
 *
 * Kind: that of `cause` when every compensation succeeded (the saga left nothing behind: a retry
 * of the whole saga may be right for a transient cause); `internal` when a compensation failed
 * (some effect may remain: a person or `recover()` must look at it).
 */
export class SagaFailedError extends RejectedError {
  /** The saga run's id (`run(input, { id })`, or the one generated). */
  readonly sagaId: string;
  /** The step that failed. */
  readonly step: string;
  /** The steps compensated, in the order they were (the reverse of the order they ran). */
  readonly compensated: readonly string[];
  /** The compensations that failed, in the order they were tried. */
  readonly compensationErrors: readonly CompensationFailure[];

  constructor(
    sagaId: string,
    step: string,
    cause: unknown,
    compensated: readonly string[],
    compensationErrors: readonly CompensationFailure[],
  ) {
    const failures = compensationErrors.length;
    super(
      `the saga failed at step "${step}"; ${compensated.length} step(s) compensated` +
        (failures === 0 ? '' : `, ${failures} compensation(s) failed`),
      { code: 'ERR_SAGA_FAILED', kind: failures === 0 ? classify(cause) : 'internal', cause },
    );
    this.sagaId = sagaId;
    this.step = step;
    this.compensated = compensated;
    this.compensationErrors = compensationErrors;
  }
}
/** True for a {@link SagaFailedError} from any copy of bulwark. */
export const isSagaFailedError = defineErrorGuard<SagaFailedError>('ERR_SAGA_FAILED');

/**
 * A durable saga's `run` was given an id the log already holds for this saga (running, or
 * finished and still retained): nothing ran. Kind `conflict`: the run exists; look at it rather
 * than run it again.
 */
export class DuplicateSagaError extends RejectedError {
  /** The id that was taken. */
  readonly sagaId: string;
  constructor(sagaId: string) {
    super(`a saga run with id "${sagaId}" is already in the log`, {
      code: 'ERR_SAGA_DUPLICATE',
      kind: 'conflict',
      expose: true,
    });
    this.sagaId = sagaId;
  }
}
/** True for a {@link DuplicateSagaError} from any copy of bulwark. */
export const isDuplicateSagaError = defineErrorGuard<DuplicateSagaError>('ERR_SAGA_DUPLICATE');

/**
 * A durable saga's runner lost its run: a renewal of its lease was refused (another process
 * claimed the run with `recover()`), failed (the log was unreachable), or came too late, or a log
 * write was refused. The runner went no further and wrote nothing more; it compensated the steps
 * it had completed (so a compensation may run twice: once here, once by the recovery; each has
 * its idempotency key). The `cause` of a `SagaFailedError`. Kind `conflict`.
 */
export class SagaLeaseLostError extends RejectedError {
  /** The run whose lease was lost. */
  readonly sagaId: string;
  constructor(sagaId: string, cause?: unknown) {
    super(`the saga run "${sagaId}" lost its lease on the log`, {
      code: 'ERR_SAGA_LEASE_LOST',
      kind: 'conflict',
      cause,
      expose: true,
    });
    this.sagaId = sagaId;
  }
}
/** True for a {@link SagaLeaseLostError} from any copy of bulwark. */
export const isSagaLeaseLostError = defineErrorGuard<SagaLeaseLostError>('ERR_SAGA_LEASE_LOST');
