import { defineErrorGuard, RejectedError } from '../core/errors.js';

/** The breaker states a refusal can come from. */
export type RefusingState = 'open' | 'half-open' | 'isolated';

/**
 * A circuit breaker refused the call without running it: the circuit is open, isolated, or
 * half-open with every probe slot taken. Kind `unavailable`; `retryAfterMs` is the time left until
 * the breaker half-opens (absent when unknown: isolated, or half-open).
 */
export class CircuitOpenError extends RejectedError {
  /** The state that refused the call. */
  readonly state: RefusingState;
  constructor(state: RefusingState, retryAfterMs?: number) {
    super(
      state === 'open'
        ? `circuit open: calls refused for ${Math.ceil(retryAfterMs ?? 0)} ms more`
        : state === 'half-open'
          ? 'circuit half-open: every probe slot is taken'
          : 'circuit isolated: calls refused until reset()',
      { code: 'ERR_CIRCUIT_OPEN', kind: 'unavailable', retryAfterMs, expose: true },
    );
    this.state = state;
  }
}

/** True for a {@link CircuitOpenError} from any copy of bulwark. */
export const isCircuitOpenError = defineErrorGuard<CircuitOpenError>('ERR_CIRCUIT_OPEN');
