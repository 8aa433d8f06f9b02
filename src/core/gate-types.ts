/**
 * The gate's vocabulary: what a policy's `admit` answers (a {@link Ticket}, a {@link Refusal}, a
 * {@link ParkedCall} or a promise of a decision), how it later decides a parked call
 * ({@link Resume}), and the {@link CallNote} its `run` fills in. Internal to bulwark.
 */
import type { Context } from './context.js';

/** A call the policy turned away: the event's `reason` and the error the call fails with. */
export class Refusal<Reason extends string = string> {
  constructor(
    readonly reason: Reason,
    readonly error: unknown,
  ) {}
}

/**
 * What admission hands to {@link GatedPolicy.settle} for an admitted call: a plain number, so
 * admission allocates nothing (the breaker packs its state generation and "is a probe" into it).
 */
export type Ticket = number;

/**
 * A call that waits for its admission without a promise of its own (a place in a queue): `admit`
 * returns the policy's waiter object, the gate parks the call on it (these fields are the gate's,
 * written after `admit` returns, like a `LinkedQueue` owns its nodes' links), and the policy later
 * hands it its decision, synchronously, through the {@link Resume} from
 * {@link GatedPolicy.resume}. The caller's promise is the only one the wait costs.
 */
export interface ParkedCall {
  /** The gate's: what runs once admitted (the operation on the fast path, else the step). */
  parkedWork: unknown;
  /** The gate's: the call's context. */
  parkedContext: Context | undefined;
  /** The gate's: settles the caller's promise (with the value, or with an outcome on the step path). */
  resolveParked: ((value: unknown) => void) | undefined;
  /** The gate's: rejects the caller's promise on the fast path; `undefined` on the step path. */
  rejectParked: ((error: unknown) => void) | undefined;
  /** The gate's: when the call arrived, on the policy's clock (0 when nobody observes durations). */
  parkedAt: number;
}

/**
 * How a policy decides a {@link ParkedCall}, each exactly once, whenever it likes: the call runs
 * inside `admit` (in this turn), leaves refused (`onRejected`) or fails with `error` (its caller
 * aborted). A call whose signal aborted before its turn came is not run: its ticket is given back.
 */
export interface Resume<Reason extends string> {
  admit(call: ParkedCall, ticket: Ticket): void;
  refuse(call: ParkedCall, refusal: Refusal<Reason>): void;
  fail(call: ParkedCall, error: unknown): void;
}

/**
 * Admitted (a {@link Ticket}), refused, parked until the policy decides ({@link ParkedCall}), or
 * decided later by a promise (a remote store).
 */
export type Admission<Reason extends string> =
  | Ticket
  | Refusal<Reason>
  | ParkedCall
  | Promise<Ticket | Refusal<Reason>>;

/**
 * Passed to {@link GatedPolicy.run} only while someone listens to `onFailure`, for `run` to say
 * what the policy did with the call's failure.
 */
export interface CallNote {
  /** Set when the policy acted on the failure (retried it, timed the call out, hedged it). */
  handled: boolean;
  /**
   * Set when the policy answered a failure with a substitute value (fallback): the call resolves,
   * and is reported as this failure, handled.
   */
  answered: { readonly error: unknown } | undefined;
}
