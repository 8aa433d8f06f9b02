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
  // Number.isInteger is false for anything but a number: no typeof test needed
  if (!(Number.isInteger(value) || (allowInfinity && value === Infinity)) || (value as number) < 1) {
    fail(name, allowInfinity ? 'a positive integer or Infinity' : 'a positive integer', value);
  }
  return value as number;
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

/**
 * A plain options object, or undefined (treated as `{}`). With `known` (from {@link optionKeys}),
 * a key outside it is refused as {@link refuseUnknownKeys} does.
 */
export function optionsObject<O extends object>(
  name: string,
  value: O | undefined,
  known?: ReadonlySet<string>,
): Partial<O> {
  if (value === undefined) return {};
  if (value === null || typeof value !== 'object' || Array.isArray(value))
    fail(name, 'an options object', value);
  if (known !== undefined) refuseUnknownKeys(name, value, known);
  return value;
}

/**
 * The set of option names of the options type `O`. The argument must list every key of `O` and
 * nothing else (a compile error otherwise), so the set cannot drift from the interface.
 *
 * @example const retryKeys = optionKeys<RetryOptions>({ maxAttempts: true, backoff: true, ... });
 */
export function optionKeys<O extends object>(keys: { readonly [K in keyof O]-?: true }): ReadonlySet<string> {
  return new Set(Object.keys(keys));
}

/**
 * Throws a `TypeError` naming the first own key of `options` that is not in `known`, with the
 * closest known name when one is near (`unknown option "maxAttempt" in retry options; did you
 * mean "maxAttempts"?`): a misspelled option is a bug, not a silent default. `undefined` passes.
 */
export function refuseUnknownKeys(
  name: string,
  options: object | undefined,
  known: ReadonlySet<string>,
): void {
  if (options === undefined) return;
  for (const key of Object.keys(options)) {
    if (!known.has(key)) throw unknownKeyError(name, key, known);
  }
}

/**
 * The `TypeError` for an option `key` that `name` (say, "retry options") does not know, naming the
 * nearest of the `known` names when one is near enough to be a typo.
 */
export function unknownKeyError(name: string, key: string, known: Iterable<string>): TypeError {
  const near = closest(key, known);
  return new TypeError(
    `unknown option ${show(key)} in ${name}${near === undefined ? '' : `; did you mean ${show(near)}?`}`,
  );
}

/**
 * The known name nearest to `key`, if it is near enough to be a typo: a few edits away (case
 * ignored, a swap of two letters is one edit), or one name a prefix of the other (`delay` for
 * `delayMs`).
 */
function closest(key: string, known: Iterable<string>): string | undefined {
  const typed = key.toLowerCase();
  const nearEnough = Math.max(1, Math.floor(key.length / 3));
  let best: string | undefined;
  let bestDistance = Infinity;
  for (const candidate of known) {
    const name = candidate.toLowerCase();
    const prefix =
      Math.min(typed.length, name.length) >= 3 && (name.startsWith(typed) || typed.startsWith(name));
    const distance = editDistance(typed, name);
    if ((distance <= nearEnough || prefix) && distance < bestDistance) {
      best = candidate;
      bestDistance = distance;
    }
  }
  return best;
}

/** Edit distance counting insertions, deletions, substitutions and swaps of adjacent letters. */
function editDistance(a: string, b: string): number {
  // rows[i][j]: distance between the first i letters of a and the first j of b
  const rows: number[][] = [Array.from({ length: b.length + 1 }, (_, j) => j)];
  for (let i = 1; i <= a.length; i++) {
    const row = [i];
    for (let j = 1; j <= b.length; j++) {
      const above = rows[i - 1] as number[];
      let d = Math.min(
        (above[j] as number) + 1,
        (row[j - 1] as number) + 1,
        (above[j - 1] as number) + (a[i - 1] === b[j - 1] ? 0 : 1),
      );
      // a swap needs two letters on each side: before that, a[-1] or b[-1] is undefined, no letter
      if (a[i - 1] === b[j - 2] && a[i - 2] === b[j - 1]) {
        d = Math.min(d, ((rows[i - 2] as number[])[j - 2] as number) + 1);
      }
      row.push(d);
    }
    rows.push(row);
  }
  return (rows[a.length] as number[])[b.length] as number;
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

/**
 * A key for a store: a non-empty string of well-formed UTF-16 (no lone surrogate). Redis clients
 * encode strings as UTF-8 and write a lone surrogate as U+FFFD, so `'\uD800'`, `'\uDBFF'` and
 * `'\uFFFD'` would share one key there; refusing them everywhere keeps every store alike.
 */
export function storeKey(name: string, value: unknown): string {
  if (typeof value !== 'string' || value.length === 0) fail(name, 'a non-empty string', value);
  if (!(value as string & { isWellFormed(): boolean }).isWellFormed()) {
    fail(name, 'well-formed UTF-16 (no lone surrogate: Redis would store it as U+FFFD)', value);
  }
  return value;
}

/**
 * A key for a store that keeps it as text (PostgreSQL `text`, and the stores that must behave
 * alike): {@link storeKey}, and no U+0000 (PostgreSQL text cannot hold it).
 */
export function textValue(name: string, value: unknown): string {
  const text = storeKey(name, value);
  if (text.includes('\u0000')) {
    throw new TypeError(
      `expected "${name}" to contain no U+0000 (PostgreSQL text cannot hold it), got ${show(value)}`,
    );
  }
  return text;
}
