/**
 * The refusal of the transition guard: a handler moved an entity's state along a transition its
 * definition does not allow. The entity was put back as it was before the handler ran.
 */
import { defineErrorGuard, RejectedError } from '../core/errors.js';
import { show } from '../core/validate.js';

/**
 * A handler run by `transitionGuard(...).run(entity, handler)` left `entity[field]` at a state its
 * definition does not allow from the state it started in (or at a value that is no state at all).
 * Every property of the entity was restored before this error was thrown: nothing is half-applied.
 * Kind `conflict` (HTTP 409): the request is at odds with the entity's current state; retrying it
 * unchanged fails the same way.
 *
 * The message names the field and both states: `"status" may not move from "shipped" to
 * "pending"`. It is exposed to clients (`expose`) only when `to` is a state of the definition, so
 * a value the handler took from a request never reaches a response body; read `to` for it.
 *
 * @example
 * try {
 *   await orders.run(order, (o) => applyCommand(o, command));
 * } catch (error) {
 *   if (isInvalidTransitionError(error)) log.warn({ from: error.from, to: error.to }, 'refused');
 *   throw error;
 * }
 */
export class InvalidTransitionError extends RejectedError {
  /** The guarded field (`'status'`). */
  readonly field: string;
  /** The state the entity was in, and is in again. */
  readonly from: string;
  /** The value the handler left in the field: a state, or anything else it wrote (even `undefined`). */
  readonly to: unknown;
  constructor(field: string, from: string, to: unknown, options: { readonly expose?: boolean } = {}) {
    super(`${show(field)} may not move from ${show(from)} to ${show(to)}`, {
      code: 'ERR_INVALID_TRANSITION',
      kind: 'conflict',
      expose: options.expose === true,
    });
    this.field = field;
    this.from = from;
    this.to = to;
  }
}
/**
 * True for an {@link InvalidTransitionError} from any copy of bulwark (it checks a registered brand
 * and the code, not `instanceof`). Never throws.
 *
 * @example
 * if (isInvalidTransitionError(error)) return reply.status(409).send({ from: error.from });
 */
export const isInvalidTransitionError = defineErrorGuard<InvalidTransitionError>('ERR_INVALID_TRANSITION');
