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
