import { defineErrorGuard, RejectedError } from '../core/errors.js';

/**
 * The abort reason a hedge gives the tries it no longer needs: another try succeeded first, or
 * failed with an error that ends the call (a permanent kind). Kind `canceled`. Callers never see
 * it as the call's result; an operation sees it as `context.signal.reason`, so its logs can tell
 * "lost the race" apart from a real failure.
 */
export class HedgeCanceledError extends RejectedError {
  /** The try that settled the call (its `context.attempt`). */
  readonly settledBy: number;
  constructor(settledBy: number) {
    super(`hedge: try ${settledBy} settled the call; this try is no longer needed`, {
      code: 'ERR_HEDGE_CANCELED',
      kind: 'canceled',
      expose: true,
    });
    this.settledBy = settledBy;
  }
}

/** True for a {@link HedgeCanceledError} from any copy of bulwark. */
export const isHedgeCanceledError = defineErrorGuard<HedgeCanceledError>('ERR_HEDGE_CANCELED');
