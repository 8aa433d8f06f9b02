/**
 * Option validation shared by every factory. Each check throws a `TypeError` that names the
 * option and shows the bad value: `expected "maxAttempts" to be a positive integer, got -1`.
 */

/** Formats a value for an error message. */
export function show(value: unknown): string {
  if (typeof value === 'string') return JSON.stringify(value);
  if (typeof value === 'bigint') return `${value}n`;
  if (typeof value === 'function') return 'a function';
  if (Array.isArray(value)) return 'an array';
  if (value !== null && typeof value === 'object') return 'an object';
  return String(value);
}

function fail(name: string, expected: string, value: unknown): never {
  throw new TypeError(`expected "${name}" to be ${expected}, got ${show(value)}`);
}

/** A number ≥ 0, finite unless `allowInfinity`. */
export function nonNegative(name: string, value: unknown, allowInfinity = false): number {
  if (
    typeof value !== 'number' ||
    Number.isNaN(value) ||
    value < 0 ||
    (!allowInfinity && value === Infinity)
  ) {
    fail(name, allowInfinity ? 'a non-negative number' : 'a non-negative finite number', value);
  }
  return value;
}

/** A number > 0, finite unless `allowInfinity`. */
export function positive(name: string, value: unknown, allowInfinity = false): number {
  if (
    typeof value !== 'number' ||
    Number.isNaN(value) ||
    value <= 0 ||
    (!allowInfinity && value === Infinity)
  ) {
    fail(name, allowInfinity ? 'a positive number' : 'a positive finite number', value);
  }
  return value;
}

/** An integer ≥ 1, or `Infinity` when `allowInfinity`. */
export function positiveInteger(name: string, value: unknown, allowInfinity = false): number {
  if (
    typeof value !== 'number' ||
    !(Number.isInteger(value) || (allowInfinity && value === Infinity)) ||
    value < 1
  ) {
    fail(name, allowInfinity ? 'a positive integer or Infinity' : 'a positive integer', value);
  }
  return value;
}

/** A number in [min, max]. */
export function inRange(name: string, value: unknown, min: number, max: number): number {
  if (typeof value !== 'number' || Number.isNaN(value) || value < min || value > max) {
    fail(name, `a number from ${min} to ${max}`, value);
  }
  return value;
}

/** A function. */
export function isFunction<F extends Function>(name: string, value: unknown): F {
  if (typeof value !== 'function') fail(name, 'a function', value);
  return value as F;
}

/** One of the listed strings. */
export function oneOf<S extends string>(name: string, value: unknown, allowed: readonly S[]): S {
  if (!allowed.includes(value as S)) fail(name, `one of ${allowed.map((a) => `"${a}"`).join(', ')}`, value);
  return value as S;
}

/** A plain options object, or undefined (treated as `{}`). */
export function optionsObject<O extends object>(name: string, value: O | undefined): Partial<O> {
  if (value === undefined) return {};
  if (value === null || typeof value !== 'object' || Array.isArray(value))
    fail(name, 'an options object', value);
  return value;
}

/** An object providing `now`, `sleep`, `setTimer` and `clearTimer`. */
export function isClock<C>(name: string, value: unknown): C {
  const c = value as Record<string, unknown> | null;
  if (
    c === null ||
    typeof c !== 'object' ||
    typeof c.now !== 'function' ||
    typeof c.sleep !== 'function' ||
    typeof c.setTimer !== 'function' ||
    typeof c.clearTimer !== 'function'
  ) {
    fail(name, 'a Clock (now, sleep, setTimer, clearTimer)', value);
  }
  return value as C;
}
