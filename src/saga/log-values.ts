/**
 * The argument checks every saga log makes before it does anything (see `store.ts`, "Values"):
 * shared by the memory log and the remote ones, so that each refuses the same calls with the same
 * `TypeError`.
 */
import { show, textValue } from '../core/validate.js';
import { leaseMs } from '../lock/memory-store.js';
import type { SagaChange, SagaLease } from './store.js';

const statuses = new Set<string>(['compensating', 'completed', 'compensated', 'attention']);
const states = new Set<string>(['running', 'done', 'failed', 'skipped', 'compensating', 'compensated']);

/** Checks a lease: an object whose name, id and owner are text values and whose `leaseMs` is a lease. */
export function checkLease(lease: SagaLease): void {
  if (lease === null || typeof lease !== 'object')
    throw new TypeError(`expected "lease" to be an object, got ${show(lease)}`);
  textValue('name', lease.name);
  textValue('id', lease.id);
  textValue('owner', lease.owner);
  leaseMs('leaseMs', lease.leaseMs);
}

/**
 * `value` as an input or output: a string (JSON text) of well-formed UTF-16 without U+0000, which
 * every log stores and returns as it is (what `JSON.stringify` gives always is: it escapes U+0000
 * and lone surrogates). Throws a `TypeError` naming `name` otherwise.
 */
export function jsonText(name: string, value: unknown): string {
  if (
    typeof value !== 'string' ||
    value.includes('\u0000') ||
    !(value as string & { isWellFormed(): boolean }).isWellFormed()
  )
    throw new TypeError(
      `expected "${name}" to be JSON text (well-formed, without U+0000), got ${show(value)}`,
    );
  return value;
}

/**
 * Checks a change: a status a run can move to, or a step (a text value) with its position (an
 * integer from 0 to 2^31 − 1), a step state and, if given, its output ({@link jsonText}).
 */
export function checkChange(change: SagaChange): void {
  if (change === null || typeof change !== 'object')
    throw new TypeError(`expected "change" to be an object, got ${show(change)}`);
  if ('status' in change) {
    if (!statuses.has(change.status as string))
      throw new TypeError(`expected "status" to be a status a run can move to, got ${show(change.status)}`);
    return;
  }
  textValue('step', change.step);
  if (!Number.isInteger(change.position) || change.position < 0 || change.position >= 2 ** 31)
    throw new TypeError(
      `expected "position" to be an integer from 0 to 2^31 - 1, got ${show(change.position)}`,
    );
  if (!states.has(change.state as string))
    throw new TypeError(`expected "state" to be a step state, got ${show(change.state)}`);
  if (change.output !== undefined) jsonText('output', change.output);
}
