/**
 * The options every gated policy takes (`name`, `onSuccess`, `onFailure`, `onRejected`), declared
 * once as schema fields for each policy's options schema to spread.
 */
import type { FailureEvent, PolicyOptions, RejectedEvent, SuccessEvent } from './policy-events.js';
import { listenerField, optional, type Schema } from './read-options.js';
import { show } from './validate.js';

/** A non-empty string (a policy's `name`). */
function nonEmptyString(name: string, value: unknown): string {
  if (typeof value !== 'string' || value === '') {
    throw new TypeError(`expected "${name}" to be a non-empty string, got ${show(value)}`);
  }
  return value;
}

/**
 * The schema fields of {@link PolicyOptions} for a policy refusing for `Reason`: spread them into
 * the policy's schema and pass the options read to the gate's `configure`.
 *
 * @example
 * const schema = { max: required(positiveInt), ...policyFields<'limit-reached'>() } satisfies Schema<Options>;
 */
export function policyFields<Reason extends string>() {
  return {
    name: optional(nonEmptyString),
    onSuccess: listenerField<SuccessEvent>(),
    onFailure: listenerField<FailureEvent>(),
    onRejected: listenerField<RejectedEvent<Reason>>(),
  } satisfies Schema<PolicyOptions<Reason>>;
}
