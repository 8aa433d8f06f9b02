/** The options of `postgresStores`: types, defaults and validation. */
import type { Clock } from '../../core/clock.js';
import {
  boolean,
  clockField,
  positiveNumber,
  readOptions,
  type Schema,
  withDefault,
} from '../../core/read-options.js';
import { DEFAULT_POSTGRES_TIMEOUT_MS } from './deadline.js';
import { schemaName } from './identifiers.js';

/**
 * Options of `postgresStores`. Each is checked at once: a bad value or an unknown key is a `TypeError`
 * naming the option.
 *
 * @example
 * const stores = postgresStores(pool, { schema: 'shop', timeoutMs: 500, listen: false });
 */
export interface PostgresStoresOptions {
  /**
   * The schema the stores' tables live in; `migrate()` creates it when missing. Quoted in every
   * statement, so any name PostgreSQL takes works (1 to 63 bytes, not starting with `pg_`).
   * @default 'bulwark'
   */
  readonly schema?: string | undefined;
  /**
   * Deadline of each store call in milliseconds, the wait for a pooled connection included: past it
   * the call fails with `StoreUnavailableError`. On `pg` the statement is cancelled and its
   * connection destroyed; on PGlite only the wait ends (an embedded statement cannot be cancelled).
   * @default 1000
   */
  readonly timeoutMs?: number | undefined;
  /**
   * Whether `watch` (wake-ups on completion and release) listens for notifications: on `pg` on one
   * dedicated connection, opened on first use; on PGlite with its `listen()`. Set `false` behind
   * PgBouncer's transaction pooling (LISTEN does not work there): no connection is opened and the
   * stores have no `watch` (waiters poll).
   * @default true
   */
  readonly listen?: boolean | undefined;
  /** Clock of the deadline and reaper timers (decisions use the database's `clock_timestamp()`). @default systemClock */
  readonly clock?: Clock | undefined;
}

const schema = {
  schema: withDefault('bulwark', schemaName),
  timeoutMs: withDefault(DEFAULT_POSTGRES_TIMEOUT_MS, positiveNumber),
  listen: withDefault(true, boolean),
  clock: clockField,
} satisfies Schema<PostgresStoresOptions>;

/** Reads and checks `options` (a `TypeError` naming the option; unknown keys refused). */
export function readPostgresStoresOptions(options: PostgresStoresOptions | undefined) {
  return readOptions('postgresStores options', options, schema);
}
