/**
 * Declared options: each factory states its options once, as a {@link Schema} of typed fields, and
 * {@link readOptions} reads them at construction: every value checked (a `TypeError` naming the
 * option: `expected "maxAttempts" to be a positive integer, got -1`), defaults filled in, unknown
 * keys refused with the nearest known name. Reading happens once per factory call, never per call
 * of the policy.
 */
import { isAbortSignal } from './abort.js';
import { type Clock, systemClock } from './clock.js';
import type { Listener } from './events.js';
import type { Policy } from './policy.js';
import {
  inRange,
  isClock,
  isFunction,
  nonNegative,
  optionsObject,
  positive,
  positiveInteger,
  show,
  unknownKeyError,
} from './validate.js';

/**
 * Checks one given value and returns it (possibly normalised), or throws a `TypeError` that names
 * the option (`name`) and shows the value. Receives `undefined` only for a required field.
 */
export type Check<T> = (name: string, value: unknown) => T;

/** One declared option: how it is read when given and what it is when absent (or `undefined`). */
export interface Field<T> {
  /** Reads the option's value; `value` is `undefined` when the option is absent. */
  readonly read: (name: string, value: unknown) => T;
}

/**
 * The declared options of an options type `O`: one {@link Field} per key, every key listed (declare
 * it with `satisfies Schema<O>`, so the schema cannot drift from the interface).
 */
export type Schema<O> = { readonly [K in keyof O]-?: Field<unknown> };

/** The options {@link readOptions} returns for a schema: each field's value, defaults applied. */
export type ReadOptions<S> = { readonly [K in keyof S]: S[K] extends Field<infer T> ? T : never };

/**
 * Reads an options object against its schema. `input` may be `undefined` (every field absent);
 * anything else but a plain object is a `TypeError` (`expected "retry options" to be an options
 * object, got 5`), and so is a key the schema does not declare (`unknown option "maxAttempt" in
 * retry options; did you mean "maxAttempts"?`). An option set to `undefined` counts as absent.
 * Returns a new plain object holding every declared field (absent optional ones as `undefined`).
 *
 * @example
 * const schema = { max: required(positiveInteger), clock: clockField } satisfies Schema<Options>;
 * const { max, clock } = readOptions('pool options', options, schema);
 */
export function readOptions<S extends Schema<object>>(
  name: string,
  input: object | undefined,
  schema: S,
): ReadOptions<S> {
  return readFields(name, input, schema, '');
}

function readFields<S extends Schema<object>>(
  container: string,
  input: object | undefined,
  schema: S,
  prefix: string,
): ReadOptions<S> {
  const given = optionsObject(container, input) as Record<string, unknown>;
  for (const key of Object.keys(given)) {
    if (!Object.hasOwn(schema, key)) throw unknownKeyError(container, key, Object.keys(schema));
  }
  const result: Record<string, unknown> = {};
  for (const key of Object.keys(schema)) {
    const field = (schema as Record<string, Field<unknown>>)[key]!;
    result[key] = field.read(prefix + key, given[key]);
  }
  return result as ReadOptions<S>;
}

/** A field that must be given: the check sees `undefined` too (and refuses it with the same message). */
export function required<T>(check: Check<T>): Field<T> {
  return { read: check };
}

/** A field that may be absent (then `undefined`); a given value goes through `check`. */
export function optional<T>(check: Check<T>): Field<T | undefined> {
  return { read: (name, value) => (value === undefined ? undefined : check(name, value)) };
}

/** A field that is `fallback` when absent; a given value goes through `check`. */
export function withDefault<T>(fallback: T, check: Check<T>): Field<T> {
  return { read: (name, value) => (value === undefined ? fallback : check(name, value)) };
}

/**
 * An options object of its own, read against `schema`; its fields are named `name.key`. Required,
 * an absent one is refused (`expected "limits" to be an object, got undefined`).
 */
export function nested<S extends Schema<object>>(schema: S): Check<ReadOptions<S>> {
  return (name, value) => {
    if (value === undefined) throw new TypeError(`expected "${name}" to be an object, got undefined`);
    return readFields(name, value as object, schema, `${name}.`);
  };
}

/** A policy: anything with an `execute` method (`retry()`, `timeout()`, a `pipeline`, your own). */
export const policy: Check<Policy<unknown>> = (name, value) => {
  if (typeof (value as Partial<Policy<unknown>> | null)?.execute !== 'function')
    throw new TypeError(`expected "${name}" to be a policy (with execute), got ${show(value)}`);
  return value as Policy<unknown>;
};

/** A string with at least one character (a name). */
export const nonEmptyString: Check<string> = (name, value) => {
  if (typeof value !== 'string' || value === '')
    throw new TypeError(`expected "${name}" to be a non-empty string, got ${show(value)}`);
  return value;
};

/** An integer ≥ 1. */
export const positiveInt: Check<number> = (name, value) => positiveInteger(name, value);

/** An integer ≥ 1 or `Infinity` (no limit). */
export const positiveIntOrInfinity: Check<number> = (name, value) => positiveInteger(name, value, true);

/** An integer ≥ 0 (a bound that may be zero, like a queue's length). */
export const nonNegativeInt: Check<number> = (name, value) => {
  // Number.isInteger is false for anything but a number: no typeof test needed
  if (!Number.isInteger(value) || (value as number) < 0) {
    throw new TypeError(`expected "${name}" to be a non-negative integer, got ${show(value)}`);
  }
  return value as number;
};

/** A finite number ≥ 0: a duration in milliseconds, a ratio, a count that may be fractional. */
export const nonNegativeNumber: Check<number> = (name, value) => nonNegative(name, value);

/** A number ≥ 0, or `Infinity` (a duration that may be "never"). */
export const nonNegativeOrInfinity: Check<number> = (name, value) => nonNegative(name, value, true);

/** A finite number > 0 (a duration that must pass, a rate, a limit). */
export const positiveNumber: Check<number> = (name, value) => positive(name, value);

/** A number > 0, or `Infinity`. */
export const positiveOrInfinity: Check<number> = (name, value) => positive(name, value, true);

/** A fraction: a number from 0 to 1, both included. */
export const fraction: Check<number> = (name, value) => inRange(name, value, 0, 1);

/** A positive fraction: above 0 and at most 1 (a share, a utilization limit). */
export const positiveFraction: Check<number> = (name, value) => {
  if (typeof value !== 'number' || !(value > 0 && value <= 1)) {
    throw new TypeError(`expected "${name}" to be a number above 0 and at most 1, got ${show(value)}`);
  }
  return value;
};

/** A finite number of at least `min` (a growth factor, which has no upper bound). */
export function atLeast(min: number): Check<number> {
  return (name, value) => {
    // Number.isFinite is false for anything but a number: no typeof test needed
    if (!Number.isFinite(value) || (value as number) < min) {
      throw new TypeError(`expected "${name}" to be a finite number of at least ${min}, got ${show(value)}`);
    }
    return value as number;
  };
}

/** One of the listed strings. */
export function oneOf<S extends string>(allowed: readonly S[]): Check<S> {
  const expected = `one of ${allowed.map((a) => `"${a}"`).join(', ')}`;
  return (name, value) => {
    if (!allowed.includes(value as S))
      throw new TypeError(`expected "${name}" to be ${expected}, got ${show(value)}`);
    return value as S;
  };
}

/** A function, typed as `F`. */
export function func<F extends Function>(): Check<F> {
  return (name, value) => isFunction<F>(name, value);
}

/** `true` or `false`. */
export const boolean: Check<boolean> = (name, value) => {
  if (typeof value !== 'boolean')
    throw new TypeError(`expected "${name}" to be a boolean, got ${show(value)}`);
  return value;
};

/** An `AbortSignal` (a `TypeError` otherwise, as every policy's `signal` option). */
export const signal: Check<AbortSignal> = (name, value) => {
  if (isAbortSignal(value)) return value;
  throw new TypeError(`expected "${name}" to be an AbortSignal, got ${show(value)}`);
};

/** An instance of `type` (from this copy of bulwark), described as `description` in messages. */
export function instanceOf<T>(type: abstract new (...args: never[]) => T, description: string): Check<T> {
  return (name, value) => {
    if (!(value instanceof type))
      throw new TypeError(`expected "${name}" to be ${description}, got ${show(value)}`);
    return value;
  };
}

/**
 * A store: an object with each of `methods` (functions) and, when `withDeadline`, a numeric
 * `timeoutMs`; described as `description` in messages (`a lock store`).
 */
export function storeOf<T>(description: string, methods: readonly string[], withDeadline: boolean): Check<T> {
  const wanted = withDeadline ? [...methods, 'timeoutMs'].join(', ') : methods.join(', ');
  return (name, value) => {
    const store = value as Record<string, unknown> | null;
    if (
      typeof store !== 'object' ||
      store === null ||
      methods.some((m) => typeof store[m] !== 'function') ||
      (withDeadline && typeof store.timeoutMs !== 'number')
    )
      throw new TypeError(`expected "${name}" to be ${description} (${wanted}), got ${show(value)}`);
    return value as T;
  };
}

/** The `clock` option of every factory that waits or reads time. @default systemClock */
export const clockField: Field<Clock> = withDefault(systemClock, (name, value) =>
  isClock<Clock>(name, value),
);

/** An optional event listener option (`onRetry`, `onStateChange`, ...): a function when given. */
export function listenerField<E>(): Field<Listener<E> | undefined> {
  return optional(func<Listener<E>>());
}
