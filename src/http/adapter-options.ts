/**
 * Option reading for the HTTP adapters: every adapter declares its options as a read-options
 * `Schema` and reads them here, so they fail alike.
 */
import { type ReadOptions, readOptions, type Schema } from '../core/read-options.js';

/**
 * Reads an adapter's options against `schema`. Unlike a policy's options, an adapter's are
 * required (each has a required field): a missing options object is a `TypeError` naming it
 * (`expected "rateLimitMiddleware options" to be an options object, got undefined`), and so are a
 * non-object, a key the schema does not declare (with the nearest known name) and a bad value.
 */
export function readAdapterOptions<S extends Schema<object>>(
  what: string,
  options: object | undefined,
  schema: S,
): ReadOptions<S> {
  if (options === undefined) throw new TypeError(`expected "${what}" to be an options object, got undefined`);
  return readOptions(what, options, schema);
}
