/**
 * `versionedRows(db, { table, columns })`: the `load` and `save` of `optimisticUpdate()` for rows
 * of a table of your own that carry a version column. One statement each: `load` selects the
 * columns and the version of one row; `save` is the compare-and-set
 *
 * ```sql
 * UPDATE <table> SET <c1> = $3, <c2> = $4, <version> = <version> + 1
 *   WHERE <id> = $1 AND <version> = $2 RETURNING 1
 * ```
 *
 * which writes only while the version is still the one loaded (under READ COMMITTED a concurrent
 * update of the row makes it wait, then re-check the version on the committed row). Identifiers are
 * quoted, values are parameters.
 */
import type { Clock } from '../../core/clock.js';
import {
  clockField,
  optional,
  positiveNumber,
  readOptions,
  required,
  type Schema,
  withDefault,
} from '../../core/read-options.js';
import { show } from '../../core/validate.js';
import type { Versioned } from '../../optimistic/options.js';
import type { PostgresDatabase } from './database.js';
import { DEFAULT_POSTGRES_TIMEOUT_MS } from './deadline.js';
import { quoteIdent } from './identifiers.js';
import { openDatabase } from './open-database.js';
import { safeInteger } from './values.js';

/**
 * Options of {@link versionedRows}. Each is checked at once: a bad value or an unknown key is a
 * `TypeError` naming the option. Names are quoted in every statement, so any name PostgreSQL takes
 * works, case included (`'userId'` is the column `"userId"`, not `userid`).
 *
 * @example
 * const rows = versionedRows<Account>(pool, { schema: 'shop', table: 'accounts', columns: ['balance'] });
 */
export interface VersionedRowsOptions<T> {
  /** The table. */
  readonly table: string;
  /** The table's schema. @default none: the connection's `search_path` finds the table */
  readonly schema?: string | undefined;
  /** The columns that make the value: `load` selects them, `save` writes them all. */
  readonly columns: readonly NoInfer<keyof T & string>[];
  /** The column the key is matched against: unique (the primary key). @default 'id' */
  readonly id?: string | undefined;
  /** The version column, of an integer type, `NOT NULL`. @default 'version' */
  readonly version?: string | undefined;
  /**
   * Deadline of each statement in milliseconds, the wait for a pooled connection included: past it
   * the call fails with `StoreUnavailableError` (on `pg` the statement is cancelled).
   * @default 1000
   */
  readonly timeoutMs?: number | undefined;
  /** Clock of the deadline timers. @default systemClock */
  readonly clock?: Clock | undefined;
}

/** The key of a row: the value of its `id` column. */
export type RowKey = string | number;

/**
 * The `load` and `save` of `optimisticUpdate()` for one table, from {@link versionedRows}: a plain
 * object with these two functions only, so it can be spread into the options
 * (`optimisticUpdate({ ...rows, mutate })`).
 */
export interface VersionedRows<T, K extends RowKey = string> {
  /**
   * One `SELECT`: the row whose `id` is `key` as `{ value, version }` (`value` holds the
   * `columns`, as the driver returns them), or `undefined` when there is none. Rejects with
   * `StoreUnavailableError` when the database fails or misses the deadline (or the version is not
   * an integer the client holds exactly: a NULL, a value past 2^53); a `TypeError` for a bad key.
   */
  readonly load: (key: K) => Promise<Versioned<T, number> | undefined>;
  /**
   * One `UPDATE`: writes `record.value`'s columns and advances the version by one, only if the
   * row's version is still `record.version`. Resolves `true` when it wrote, `false` when the version
   * had changed or the row is gone. Rejects with `StoreUnavailableError` when the database fails or
   * misses the deadline (the write may then have happened: see docs/optimistic-update.md); a
   * `TypeError` for a bad key, a column missing from the value (`undefined`; write `null` for NULL),
   * or an `id` that matched several rows (the write happened: make `id` unique).
   */
  readonly save: (key: K, record: Versioned<T, number>) => Promise<boolean>;
}

/** PostgreSQL keeps the first 63 bytes of an identifier and drops the rest: refuse longer names. */
const MAX_IDENTIFIER_BYTES = 63;

/** A table, schema or column name: 1 to 63 UTF-8 bytes, without U+0000 (it is quoted). */
function identifier(name: string, value: unknown): string {
  if (
    typeof value !== 'string' ||
    value.length === 0 ||
    value.includes('\u0000') ||
    new TextEncoder().encode(value).length > MAX_IDENTIFIER_BYTES
  ) {
    throw new TypeError(
      `expected "${name}" to be a name of 1 to 63 bytes without U+0000, got ${show(value)}`,
    );
  }
  return value;
}

/** A non-empty array of names. */
function names(name: string, value: unknown): readonly string[] {
  if (!Array.isArray(value) || value.length === 0) {
    throw new TypeError(`expected "${name}" to be a non-empty array of column names, got ${show(value)}`);
  }
  return value.map((column: unknown) => identifier(`${name}[]`, column));
}

const schema = {
  table: required(identifier),
  schema: optional(identifier),
  columns: required(names),
  id: withDefault('id', identifier),
  version: withDefault('version', identifier),
  timeoutMs: withDefault(DEFAULT_POSTGRES_TIMEOUT_MS, positiveNumber),
  clock: clockField,
} satisfies Schema<VersionedRowsOptions<object>>;

/** Reads `options`; the names of `columns`, `id`, `version` (and the version's alias) must all differ. */
function readVersionedRowsOptions(options: VersionedRowsOptions<never>, alias: string) {
  const o = readOptions('versionedRows options', options, schema);
  if (o.id === o.version) {
    throw new TypeError(`expected "id" and "version" to be different columns, got ${show(o.id)} for both`);
  }
  const seen = new Set<string>([o.id, o.version, alias]);
  for (const column of o.columns) {
    if (seen.has(column)) {
      throw new TypeError(
        `expected "columns" to name each value column once, and neither "id" nor "version", got ${show(column)} again`,
      );
    }
    seen.add(column);
  }
  return o;
}

/** The statements of one table. */
interface RowSql {
  readonly load: string;
  readonly save: string;
}

/** The version's alias in `load`'s rows, apart from any column name (checked). */
const VERSION_ALIAS = 'bulwark$version';

function rowSql(table: string, id: string, version: string, columns: readonly string[]): RowSql {
  const v = quoteIdent(version);
  const selected = columns.map(quoteIdent).join(', ');
  const sets = columns.map((c, i) => `${quoteIdent(c)} = $${i + 3}`).join(', ');
  return {
    load: `SELECT ${selected}, ${v}::text AS ${quoteIdent(VERSION_ALIAS)} FROM ${table} WHERE ${quoteIdent(id)} = $1`,
    save: `UPDATE ${table} SET ${sets}, ${v} = ${v} + 1 WHERE ${quoteIdent(id)} = $1 AND ${v} = $2 RETURNING 1 AS saved`,
  };
}

/** A key PostgreSQL can take as a parameter: a string without U+0000, or a finite number. */
function rowKey(key: unknown): RowKey {
  if ((typeof key === 'string' && !key.includes('\u0000')) || Number.isFinite(key)) return key as RowKey;
  throw new TypeError(`expected "key" to be a string without U+0000 or a finite number, got ${show(key)}`);
}

/**
 * The `load` and `save` of `optimisticUpdate()` over rows of your own table with an integer
 * version column, on a `pg` Pool or a PGlite instance (what `postgresStores` takes). `load` is one
 * `SELECT` of `columns` and the version; `save` one `UPDATE … SET <columns>, version = version + 1
 * WHERE id = $1 AND version = $2`: it writes only while nobody else has, so concurrent updates of
 * a row lose nothing. Every statement has a deadline (`timeoutMs`) and fails with
 * `StoreUnavailableError`, like the stores.
 *
 * The table needs a unique `id` column (the primary key) and a `version` column of an integer type,
 * `NOT NULL` (`version integer NOT NULL DEFAULT 0`). The value `T` is the selected columns as your
 * driver returns them (on `pg`, `bigint` and `numeric` come back as strings). Nothing is created:
 * no migration is needed. Throws a `TypeError` for anything but a Pool or PGlite, or a bad option
 * (an empty or unknown name, `columns` repeating a name or naming `id` or `version`).
 *
 * @example
 * import pg from 'pg';
 * import { optimisticUpdate } from 'bulwark';
 * import { versionedRows } from 'bulwark/postgres';
 *
 * // CREATE TABLE counters (id text PRIMARY KEY, n integer NOT NULL, version integer NOT NULL DEFAULT 0)
 * const counters = versionedRows<{ n: number }>(new pg.Pool(), { table: 'counters', columns: ['n'] });
 * const increment = optimisticUpdate({ ...counters, mutate: (row) => ({ n: row.n + 1 }) });
 * const { n } = await increment.update('visits');
 */
export function versionedRows<T extends object = Record<string, unknown>, K extends RowKey = string>(
  db: PostgresDatabase,
  options: VersionedRowsOptions<T>,
): VersionedRows<T, K> {
  const o = readVersionedRowsOptions(options as VersionedRowsOptions<never>, VERSION_ALIAS);
  const { database } = openDatabase(db, o.clock, o.timeoutMs);
  const table =
    o.schema === undefined ? quoteIdent(o.table) : `${quoteIdent(o.schema)}.${quoteIdent(o.table)}`;
  const sql = rowSql(table, o.id, o.version, o.columns);
  const columns = o.columns;
  const what = `${database.what}: the version of a row of ${table}`;

  const load = async (key: K): Promise<Versioned<T, number> | undefined> => {
    const rows = await database.query<Record<string, unknown>>(sql.load, [rowKey(key)]);
    const row = rows[0];
    if (row === undefined) return undefined;
    const version = safeInteger(what, row[VERSION_ALIAS]);
    const value: Record<string, unknown> = {};
    for (const column of columns) value[column] = row[column];
    return { value: value as T, version };
  };

  const save = async (key: K, record: Versioned<T, number>): Promise<boolean> => {
    const params: unknown[] = [rowKey(key), versionParam(record)];
    const value = record.value as Record<string, unknown>;
    for (const column of columns) {
      const cell = value[column];
      if (cell === undefined) {
        throw new TypeError(
          `expected "value.${column}" to be set (undefined would write NULL: use null for that), got undefined`,
        );
      }
      params.push(cell);
    }
    const written = await database.query(sql.save, params);
    if (written.length > 1) {
      throw new TypeError(
        `expected "id" (${show(o.id)}) to identify one row of ${table}: the update changed ${written.length} rows`,
      );
    }
    return written.length === 1;
  };

  return Object.freeze({ load, save });
}

/** The loaded version, checked: a safe integer (what `load` gives). */
function versionParam(record: Versioned<unknown, number>): number {
  const version = (record as Partial<Versioned<unknown, unknown>> | null)?.version;
  if (!Number.isSafeInteger(version)) {
    throw new TypeError(
      `expected "record.version" to be a safe integer (as load gives), got ${show(version)}`,
    );
  }
  return version as number;
}
