/**
 * An attempt's result as data. Policies pass outcomes to each other; only the outermost
 * `execute` turns a failed outcome back into a rejection.
 */
export type Outcome<T> =
  | { readonly ok: true; readonly value: T }
  | { readonly ok: false; readonly error: unknown };

/** Wraps a value as a successful outcome. */
export function success<T>(value: T): Outcome<T> {
  return { ok: true, value };
}

/** Wraps an error as a failed outcome. */
export function failure<T = never>(error: unknown): Outcome<T> {
  return { ok: false, error };
}
