/**
 * Checks of the values the PostgreSQL stores write as `text` or `bigint`, before anything is sent:
 * a value PostgreSQL cannot hold is a `TypeError` naming it, never a store failure.
 */
import { StoreUnavailableError } from '../../core/errors.js';
import { show } from '../../core/validate.js';

/**
 * A `bigint` column as `pg` and PGlite return it cast to text (`fence::text`), as a number: exact,
 * because it must be a safe integer (a fence, µs since the epoch, is about 2^51 today). Anything
 * else is a store failure: a value the client cannot represent exactly is never rounded.
 */
export function safeInteger(what: string, text: unknown): number {
  const value = typeof text === 'string' && /^-?\d+$/.test(text) ? Number(text) : Number.NaN;
  if (!Number.isSafeInteger(value)) {
    throw new StoreUnavailableError(`${what}: expected a safe integer from the database, got ${show(text)}`);
  }
  return value;
}
