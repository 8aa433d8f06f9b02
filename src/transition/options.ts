/** The options of `transitionGuard()`: types, defaults, and the checks of a definition. */
import {
  type Check,
  nonEmptyString,
  readOptions,
  required,
  type Schema,
  withDefault,
} from '../core/read-options.js';
import { show } from '../core/validate.js';

/**
 * A definition: each state mapped to the states it may move to. Every target must itself be a
 * state (a key); a state that maps to `[]` is final. Typed, a target that is no key is a compile
 * error as well as a `TypeError`.
 *
 * @example
 * const order: TransitionMap<'pending' | 'paid' | 'cancelled'> = {
 *   pending: ['paid', 'cancelled'],
 *   paid: [],
 *   cancelled: [],
 * };
 */
export type TransitionMap<S extends string> = { readonly [K in S]: readonly NoInfer<S>[] };

/** Options of `transitionGuard()`. */
export interface TransitionGuardOptions<S extends string = string, F extends string = string> {
  /** The entity's property that holds its state (`'status'`): a non-empty string. */
  readonly field: F;
  /** Each state and the states it may move to (see {@link TransitionMap}). */
  readonly transitions: TransitionMap<S>;
  /** Names the guard (`guard.name`). @default 'transition-guard' */
  readonly name?: string | undefined;
}

/** A checked definition: each state's targets, frozen, in the order given. */
export type Definition = ReadonlyMap<string, readonly string[]>;

/** A plain object (`{}` or `Object.create(null)`), not an array, a Map or a class instance. */
function isPlainObject(value: unknown): value is Record<string, unknown> {
  if (typeof value !== 'object' || value === null) return false;
  const prototype = Object.getPrototypeOf(value);
  return prototype === Object.prototype || prototype === null;
}

/**
 * Reads a definition: a plain object of at least one state, each mapping to an array of distinct
 * states that are keys of the object. A `TypeError` names the first fault.
 */
const definition: Check<Definition> = (name, value) => {
  if (!isPlainObject(value)) {
    throw new TypeError(
      `expected "${name}" to be an object mapping each state to the states it may move to, got ${show(value)}`,
    );
  }
  const states = Object.keys(value);
  if (states.length === 0) throw new TypeError(`expected "${name}" to define at least one state, got {}`);
  const result = new Map<string, readonly string[]>();
  for (const state of states) {
    const targets = value[state];
    const at = `${name}.${state}`;
    if (!Array.isArray(targets))
      throw new TypeError(`expected "${at}" to be an array of states, got ${show(targets)}`);
    const seen = new Set<string>();
    for (const [index, target] of (targets as unknown[]).entries()) {
      if (typeof target !== 'string')
        throw new TypeError(`expected "${at}[${index}]" to be a state (a string), got ${show(target)}`);
      if (!Object.hasOwn(value, target))
        throw new TypeError(
          `"${at}" lists ${show(target)}, which is not a state: every target must be a key of "${name}"`,
        );
      if (seen.has(target)) throw new TypeError(`"${at}" lists ${show(target)} twice`);
      seen.add(target);
    }
    result.set(state, Object.freeze([...seen]));
  }
  return result;
};

const schema = {
  field: required(nonEmptyString),
  transitions: required(definition),
  name: withDefault('transition-guard', nonEmptyString),
} satisfies Schema<TransitionGuardOptions>;

/** Reads and checks `options`; a `TypeError` names a bad, missing or unknown option. */
export function readTransitionGuardOptions(options: TransitionGuardOptions | undefined) {
  return readOptions('transitionGuard options', options, schema);
}
