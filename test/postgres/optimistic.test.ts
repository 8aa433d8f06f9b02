/**
 * `versionedRows` (bulwark/postgres) under `optimisticUpdate`, on `pg` and on PGlite: one statement
 * per load and per save, quoted names and parameter values, the compare-and-set refusing a stale
 * version, and N concurrent increments of one counter row losing none.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { describe, expect, it } from 'vitest';
import { isStoreUnavailableError } from '../../src/core/errors.js';
import { optimisticUpdate } from '../../src/optimistic/optimistic-update.js';
import { exponentialJitter } from '../../src/retry/backoff.js';
import type { PostgresDatabase } from '../../src/stores/postgres/index.js';
import { versionedRows } from '../../src/stores/postgres/optimistic.js';
import { type Counted, countingPGlite, countingPool } from '../support/counting.js';
import { useEmbeddedPostgres } from '../support/postgres-stores.js';
import { usePostgres } from '../support/services.js';

const pg = await usePostgres();

interface Backend {
  /** The database `versionedRows` is given. */
  db(): PostgresDatabase;
  /** The same database, its statements counted. */
  counting(): Counted<PostgresDatabase>;
  /** A fresh schema of the test's own (quoted-safe name). */
  schema(): Promise<string>;
  /** Runs a statement outside the helper (setup and checks). */
  sql<R>(text: string, params?: unknown[]): Promise<R[]>;
}

/** A plain interface (no index signature) must do as a row type. */
interface Counter {
  n: number;
}

async function rejection(promise: Promise<unknown>): Promise<unknown> {
  try {
    await promise;
  } catch (error) {
    return error;
  }
  throw new Error('expected a rejection');
}

/** A counters table in a fresh schema, with row `c` at 0. */
async function counters(b: Backend): Promise<string> {
  const schema = await b.schema();
  await b.sql(
    `CREATE TABLE "${schema}".counters (id text PRIMARY KEY, n integer NOT NULL, version integer NOT NULL DEFAULT 0)`,
  );
  await b.sql(`INSERT INTO "${schema}".counters (id, n) VALUES ('c', 0)`);
  return schema;
}

function sharedScenarios(name: string, backend: () => Backend): void {
  describe(`${name}: load and save`, () => {
    it('load is one SELECT of the row (undefined for none); save one UPDATE that advances the version', async () => {
      const b = backend();
      const schema = await counters(b);
      const { db, statements } = b.counting();
      const rows = versionedRows<Counter>(db, { schema, table: 'counters', columns: ['n'] });
      expect(Object.keys(rows)).toEqual(['load', 'save']);
      expect(await rows.load('c')).toEqual({ value: { n: 0 }, version: 0 });
      expect(statements).toHaveLength(1);
      expect(await rows.load('missing')).toBeUndefined();
      expect(await rows.save('c', { value: { n: 5 }, version: 0 })).toBe(true);
      expect(statements).toHaveLength(3);
      expect(statements[2]).toMatch(/^UPDATE /);
      expect(await rows.load('c')).toEqual({ value: { n: 5 }, version: 1 });
    });

    it('save refuses a stale version and a missing row (false), writing nothing', async () => {
      const b = backend();
      const schema = await counters(b);
      const rows = versionedRows<Counter>(b.db(), { schema, table: 'counters', columns: ['n'] });
      const loaded = (await rows.load('c'))!;
      await b.sql(`UPDATE "${schema}".counters SET n = 100, version = version + 1 WHERE id = 'c'`);
      expect(await rows.save('c', { value: { n: loaded.value.n + 1 }, version: loaded.version })).toBe(false);
      expect(await rows.save('missing', { value: { n: 1 }, version: 0 })).toBe(false);
      expect(await b.sql(`SELECT id, n, version FROM "${schema}".counters`)).toEqual([
        { id: 'c', n: 100, version: 1 },
      ]);
    });

    it('quotes every name and sends every value as a parameter', async () => {
      const b = backend();
      const schema = await b.schema();
      const table = 'My "Counters"';
      await b.sql(
        `CREATE TABLE "${schema}"."My ""Counters""" ("Key" integer PRIMARY KEY, "Label" text, "select" jsonb NOT NULL, "Rev" bigint NOT NULL)`,
      );
      await b.sql(`INSERT INTO "${schema}"."My ""Counters""" VALUES (7, 'x', '{}', 41)`);
      const rows = versionedRows<{ Label: string | null; select: object }, number>(b.db(), {
        schema,
        table,
        id: 'Key',
        version: 'Rev',
        columns: ['Label', 'select'],
      });
      const update = optimisticUpdate({
        ...rows,
        mutate: () => ({ Label: "'); DROP TABLE x; --", select: { tags: ['a'] } }),
      });
      expect(await update.update(7)).toEqual({ Label: "'); DROP TABLE x; --", select: { tags: ['a'] } });
      expect(await rows.load(7)).toEqual({
        value: { Label: "'); DROP TABLE x; --", select: { tags: ['a'] } },
        version: 42,
      });
      expect(await rows.save(7, { value: { Label: null, select: {} }, version: 42 })).toBe(true);
      expect((await rows.load(7))!.value.Label).toBeNull();
    });

    it('refuses a value missing a column, a bad key or version, before anything is sent', async () => {
      const b = backend();
      const schema = await counters(b);
      const { db, statements } = b.counting();
      const rows = versionedRows<Counter>(db, { schema, table: 'counters', columns: ['n'] });
      await expect(rows.save('c', { value: {} as Counter, version: 0 })).rejects.toThrow(
        'expected "value.n" to be set (undefined would write NULL: use null for that), got undefined',
      );
      await expect(rows.load(undefined as never)).rejects.toThrow(
        'expected "key" to be a string without U+0000 or a finite number, got undefined',
      );
      await expect(rows.load('a\u0000b')).rejects.toThrow(TypeError);
      await expect(rows.save('c', { value: { n: 1 }, version: '0' as never })).rejects.toThrow(
        'expected "record.version" to be a safe integer (as load gives), got "0"',
      );
      await expect(rows.save('c', null as never)).rejects.toThrow(
        'expected "record.version" to be a safe integer (as load gives), got undefined',
      );
      expect(statements).toEqual([]);
    });

    it('a NULL version is a store failure, never a number', async () => {
      const b = backend();
      const schema = await b.schema();
      await b.sql(`CREATE TABLE "${schema}".docs (id text PRIMARY KEY, body text, version bigint)`);
      await b.sql(`INSERT INTO "${schema}".docs VALUES ('d', 'x', NULL)`);
      const rows = versionedRows<{ body: string }>(b.db(), { schema, table: 'docs', columns: ['body'] });
      const error = await rejection(rows.load('d'));
      expect(isStoreUnavailableError(error)).toBe(true);
      expect((error as Error).message).toMatch(
        new RegExp(
          `^(PostgreSQL|PGlite): the version of a row of "${schema}"\\."docs": expected a safe integer`,
        ),
      );
    });

    it('an id that matches several rows is refused loudly (the write happened)', async () => {
      const b = backend();
      const schema = await b.schema();
      await b.sql(`CREATE TABLE "${schema}".loose (tenant text, n integer, version integer NOT NULL)`);
      await b.sql(`INSERT INTO "${schema}".loose VALUES ('t', 1, 0), ('t', 2, 0)`);
      const rows = versionedRows<Counter>(b.db(), { schema, table: 'loose', id: 'tenant', columns: ['n'] });
      await expect(rows.save('t', { value: { n: 3 }, version: 0 })).rejects.toThrow(
        /expected "id" \("tenant"\) to identify one row of .*: the update changed 2 rows/,
      );
    });

    it('through optimisticUpdate: a row that is not there is OptimisticNotFoundError', async () => {
      const b = backend();
      const schema = await counters(b);
      const rows = versionedRows<Counter>(b.db(), { schema, table: 'counters', columns: ['n'] });
      const increment = optimisticUpdate({ ...rows, mutate: (row) => ({ n: row.n + 1 }) });
      const error = await rejection(increment.update('nope'));
      expect(error).toMatchObject({ code: 'ERR_OPTIMISTIC_NOT_FOUND', kind: 'not_found', key: 'nope' });
    });
  });

  describe(`${name}: concurrent writers`, () => {
    it('N = 20 concurrent increments of one row through optimisticUpdate: the counter ends at exactly N', async () => {
      const N = 20;
      const b = backend();
      const schema = await counters(b);
      const rows = versionedRows<Counter>(b.db(), {
        schema,
        table: 'counters',
        columns: ['n'],
        timeoutMs: 10_000,
      });
      let attempts = 0;
      let conflicts = 0;
      const increment = optimisticUpdate({
        load: (key: string) => {
          attempts++;
          return rows.load(key);
        },
        save: rows.save,
        mutate: (row) => ({ n: row.n + 1 }),
        // A call conflicts at most once per other writer's success: N attempts always suffice.
        maxAttempts: N,
        backoff: exponentialJitter({ baseMs: 1, maxMs: 8 }),
        onConflict: () => conflicts++,
      });
      const results = await Promise.allSettled(Array.from({ length: N }, () => increment.update('c')));
      const [row] = await b.sql<{ n: number; version: number }>(
        `SELECT n, version FROM "${schema}".counters WHERE id = 'c'`,
      );
      console.log(
        `${name}: ${N} concurrent increments -> counter ${row!.n} (version ${row!.version}); ${attempts} attempts in all, ${conflicts} conflicts`,
      );
      expect(results.filter((r) => r.status === 'rejected')).toEqual([]);
      expect(row).toEqual({ n: N, version: N });
      // Each call saved its own increment: the values resolved are 1..N, each once.
      const saved = results.map((r) => (r as PromiseFulfilledResult<Counter>).value.n).sort((x, y) => x - y);
      expect(saved).toEqual(Array.from({ length: N }, (_, i) => i + 1));
      expect(attempts).toBe(N + conflicts);
    });
  });
}

pg.describe('versionedRows and optimisticUpdate on PostgreSQL (pg)', () => {
  const server = (): Backend => ({
    db: () => pg.pool(),
    counting: () => countingPool(pg.pool()),
    schema: async () => pg.schema,
    sql: async (text, params) => (await pg.admin().query(text, params)).rows,
  });
  sharedScenarios('pg', server);

  it('without `schema`, the connection’s search_path finds the table', async () => {
    await pg
      .admin()
      .query(
        `CREATE TABLE "${pg.schema}".counters (id text PRIMARY KEY, n integer NOT NULL, version integer NOT NULL DEFAULT 0)`,
      );
    await pg.admin().query(`INSERT INTO "${pg.schema}".counters (id, n) VALUES ('c', 0)`);
    const rows = versionedRows<Counter>(pg.pool(), { table: 'counters', columns: ['n'] });
    const increment = optimisticUpdate({ ...rows, mutate: (row) => ({ n: row.n + 1 }) });
    expect(await increment.update('c')).toEqual({ n: 1 });
  });

  it('a save racing an uncommitted update of the row waits for it, then re-checks the version on the committed row', async () => {
    const schema = await counters(server());
    const rows = versionedRows<Counter>(pg.pool(), { schema, table: 'counters', columns: ['n'] });
    const other = pg.client();
    await other.connect();
    await other.query('BEGIN');
    await other.query(`UPDATE "${schema}".counters SET n = 100, version = version + 1 WHERE id = 'c'`);
    let settled = false;
    const saving = rows.save('c', { value: { n: 1 }, version: 0 }).finally(() => (settled = true));
    await sleep(100);
    expect(settled).toBe(false); // blocked on the row lock
    await other.query('COMMIT');
    expect(await saving).toBe(false);
    expect(await rows.load('c')).toEqual({ value: { n: 100 }, version: 1 });
  });

  it('a save held past timeoutMs fails with StoreUnavailableError; its statement is cancelled, not left to write later', async () => {
    const schema = await counters(server());
    const rows = versionedRows<Counter>(pg.pool(), {
      schema,
      table: 'counters',
      columns: ['n'],
      timeoutMs: 200,
    });
    const other = pg.client();
    await other.connect();
    await other.query('BEGIN');
    await other.query(`SELECT 1 FROM "${schema}".counters WHERE id = 'c' FOR UPDATE`);
    const error = await rejection(rows.save('c', { value: { n: 1 }, version: 0 }));
    expect(isStoreUnavailableError(error)).toBe(true);
    expect((error as Error).message).toBe('PostgreSQL did not answer within 200 ms');
    // Until the cancel lands the UPDATE still waits for the row, and would write once it got it:
    // the caller of a failed save cannot know whether it wrote (docs/optimistic-update.md).
    const waiting = async () =>
      (
        await pg
          .admin()
          .query<{ n: number }>(
            "SELECT count(*)::int AS n FROM pg_stat_activity WHERE state = 'active' AND query LIKE $1",
            [`UPDATE "${schema}"%`],
          )
      ).rows[0]!.n;
    const giveUpAt = performance.now() + 5_000;
    while ((await waiting()) > 0) {
      if (performance.now() > giveUpAt) throw new Error('the timed-out UPDATE was never cancelled');
      await sleep(20);
    }
    await other.query('COMMIT');
    expect(await rows.load('c')).toEqual({ value: { n: 0 }, version: 0 });
  });
});

describe('versionedRows and optimisticUpdate on PGlite', () => {
  const embedded = useEmbeddedPostgres();
  let schemas = 0;
  sharedScenarios('PGlite', () => ({
    db: () => embedded.db(),
    counting: () => countingPGlite(embedded.db()),
    async schema() {
      schemas += 1;
      const schema = `optimistic_${schemas}`;
      await embedded.db().query(`CREATE SCHEMA "${schema}"`);
      return schema;
    },
    sql: async (text, params) => (await embedded.db().query<never>(text, params)).rows,
  }));
});

describe('versionedRows options', () => {
  const pool = {
    connect: () => Promise.reject(new Error('unused')),
    query: () => Promise.reject(new Error('unused')),
    totalCount: 0,
  };
  const build =
    (options: unknown, db: unknown = pool) =>
    () =>
      versionedRows(db as PostgresDatabase, options as { table: string; columns: string[] });

  it.each([
    [{ columns: ['n'] }, 'expected "table" to be a name of 1 to 63 bytes without U+0000, got undefined'],
    [{ table: '', columns: ['n'] }, 'expected "table" to be a name of 1 to 63 bytes without U+0000, got ""'],
    [{ table: 'x'.repeat(64), columns: ['n'] }, '"table"'],
    [{ table: 't', schema: 'a\u0000b', columns: ['n'] }, '"schema"'],
    [{ table: 't' }, 'expected "columns" to be a non-empty array of column names, got undefined'],
    [{ table: 't', columns: [] }, 'expected "columns" to be a non-empty array of column names, got an array'],
    [
      { table: 't', columns: [5] },
      'expected "columns[]" to be a name of 1 to 63 bytes without U+0000, got 5',
    ],
    [{ table: 't', columns: ['n', 'n'] }, 'got "n" again'],
    [{ table: 't', columns: ['id'] }, 'got "id" again'],
    [{ table: 't', columns: ['version'] }, 'got "version" again'],
    [
      { table: 't', columns: ['n'], id: 'k', version: 'k' },
      'expected "id" and "version" to be different columns',
    ],
    [
      { table: 't', columns: ['n'], timeoutMs: 0 },
      'expected "timeoutMs" to be a positive finite number, got 0',
    ],
    [
      { table: 't', columns: ['n'], tabel: 'x' },
      'unknown option "tabel" in versionedRows options; did you mean "table"?',
    ],
  ])('refuses %o', (options, message) => {
    expect(build(options)).toThrow(TypeError);
    expect(build(options)).toThrow(message);
  });

  it('takes names of up to 63 bytes (what PostgreSQL keeps whole)', () => {
    expect(build({ table: 'x'.repeat(63), schema: 'é'.repeat(31), columns: ['n'] })).not.toThrow();
  });

  it('refuses anything but a pg Pool or a PGlite instance (a pg Client included)', () => {
    const client = { connect: () => undefined, query: () => undefined };
    expect(build({ table: 't', columns: ['n'] }, client)).toThrow(
      'expected "db" to be a pg Pool or a PGlite instance, got an object',
    );
    expect(build({ table: 't', columns: ['n'] }, null)).toThrow('got null');
  });
});
