/**
 * The record `idempotency()` stores as a key's outcome: `{"v": value}` for a result (`{}` for
 * `undefined`), or `{"e": failure}` for a failure `storeErrors` kept, in the stored JSON form of
 * json-codec.ts (bytes survive).
 */
import type { Kind } from '../core/kind.js';
import { type StoredFailure, StoredFailureError } from './errors.js';
import { parseStoredJson, storedJson } from './json-codec.js';

interface StoredRecord {
  readonly v?: unknown;
  readonly e?: StoredFailure & { readonly expose: boolean };
}

/** The record of a result. Throws a `TypeError` when `value` is not JSON. */
export function valueRecord(value: unknown): string {
  // Stryker disable next-line ConditionalExpression: (false) { v: undefined } is written as {} too (an undefined property is left out); the branch only says so
  return storedJson(value === undefined ? {} : { v: value });
}

/** The record of a kept failure: what `StoredFailureError` replays of `error`. */
export function failureRecord(error: unknown, kind: Kind): string {
  const e = (typeof error === 'object' && error !== null ? error : {}) as Record<string, unknown>;
  const status =
    typeof e.status === 'number' ? e.status : typeof e.statusCode === 'number' ? e.statusCode : undefined;
  const failure: StoredRecord['e'] = {
    name: typeof e.name === 'string' ? e.name : 'Error',
    message: typeof e.message === 'string' ? e.message : String(error),
    kind,
    // An undefined field is left out of the stored JSON.
    code: typeof e.code === 'string' ? e.code : undefined,
    status,
    expose: e.expose === true,
  };
  return storedJson({ e: failure });
}

/** The value a record holds; throws the `StoredFailureError` of a kept failure. */
export function readRecord(record: string): unknown {
  const stored = parseStoredJson(record) as StoredRecord;
  if (stored.e !== undefined) throw new StoredFailureError(stored.e, stored.e.expose);
  return stored.v;
}
