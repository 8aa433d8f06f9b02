/**
 * Values written to a store as JSON (a durable saga's inputs and outputs, an outbox event's
 * payload, an inbox result): refused unless they come back as they went in, so that whoever reads
 * them (`recover()` in another process, a consumer) sees what the writer saw.
 */
import { show } from './validate.js';

/** Why `value` does not survive JSON, or undefined when it does. */
function problem(value: unknown, path: string, seen: Set<object>): string | undefined {
  switch (typeof value) {
    case 'string':
    case 'boolean':
      return undefined;
    case 'number':
      return Number.isFinite(value) ? undefined : `${path} is ${value} (JSON has no such number)`;
    case 'object': {
      if (value === null) return undefined;
      if (seen.has(value)) return `${path} refers back to itself`;
      const prototype = Object.getPrototypeOf(value);
      const isArray = Array.isArray(value);
      if (!isArray && prototype !== Object.prototype && prototype !== null)
        return `${path} is a ${(prototype as { constructor?: { name?: string } }).constructor?.name ?? 'class instance'}, not a plain object or array`;
      seen.add(value);
      const entries = Object.entries(value);
      if (isArray && entries.length !== value.length) return `${path} has holes`;
      for (const [key, item] of entries) {
        if (item === undefined && !isArray) continue; // dropped by JSON, and read back as undefined
        const found = problem(item, isArray ? `${path}[${key}]` : `${path}.${key}`, seen);
        if (found !== undefined) return found;
      }
      if (Object.getOwnPropertySymbols(value).length > 0) return `${path} has symbol keys`;
      seen.delete(value);
      return undefined;
    }
    default:
      return `${path} is ${show(value)}`;
  }
}

/**
 * `value` as JSON text, or undefined for `undefined` (a step that returns nothing). Throws a
 * `TypeError` naming `what` and the first part that JSON would not give back as it is: a function,
 * symbol, bigint, `undefined` in an array, a non-finite number, a class instance (a `Date`, a
 * `Map`), a cycle.
 */
export function toJson(what: string, value: unknown): string | undefined {
  if (value === undefined) return undefined;
  const found = problem(value, what, new Set());
  if (found !== undefined) throw new TypeError(`expected ${what} to be JSON-serialisable: ${found}`);
  return JSON.stringify(value);
}

/** JSON text from the log as a value (`undefined` for none). */
export function fromJson(text: string | undefined): unknown {
  return text === undefined ? undefined : JSON.parse(text);
}
