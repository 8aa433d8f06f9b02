/**
 * `postgresStores` refuses what it cannot use, at once, with a `TypeError` naming what is wrong: a
 * database that is neither a `pg` Pool nor PGlite (a `pg` Client included), an unknown option, a bad
 * schema name or timeout.
 */
import pg from 'pg';
import { describe, expect, it } from 'vitest';
import { type PostgresDatabase, postgresStores } from '../../src/stores/postgres/index.js';

// Never connected: constructing a Pool or Client opens nothing.
const pool = new pg.Pool({ connectionString: 'postgres://127.0.0.1:1/none' });

describe('postgresStores: bad input', () => {
  it.each([
    ['undefined', undefined],
    ['null', null],
    ['a string', 'postgres://localhost'],
    ['a pg Client (not a Pool)', new pg.Client()],
    ['an object with query only', { query: () => Promise.resolve({ rows: [] }) }],
  ])('refuses %s as the database', (_, db) => {
    expect(() => postgresStores(db as unknown as PostgresDatabase)).toThrow(
      /expected "db" to be a pg Pool or a PGlite instance/,
    );
  });

  it.each([
    [{ schemaName: 'x' }, /unknown option "schemaName" in postgresStores options; did you mean "schema"\?/],
    [{ schema: '' }, /expected "schema" to be a schema name/],
    [{ schema: 'pg_catalog' }, /expected "schema" to be a schema name/],
    [{ schema: 'a\u0000b' }, /expected "schema" to be a schema name/],
    [{ schema: 'x'.repeat(64) }, /expected "schema" to be a schema name/],
    [{ schema: 5 }, /expected "schema" to be a schema name/],
    [{ timeoutMs: 0 }, /expected "timeoutMs" to be a positive finite number, got 0/],
    [{ timeoutMs: Infinity }, /expected "timeoutMs" to be a positive finite number/],
    [{ listen: 'no' }, /expected "listen" to be a boolean/],
    [{ clock: {} }, /"clock"/],
  ])('refuses the options %o', (options, message) => {
    expect(() => postgresStores(pool, options as never)).toThrow(TypeError);
    expect(() => postgresStores(pool, options as never)).toThrow(message);
  });

  it('accepts a pool with the defaults, and quotes any other schema name', () => {
    expect(postgresStores(pool).schema).toBe('bulwark');
    expect(postgresStores(pool, { schema: 'Tenant "A"; DROP' }).schema).toBe('Tenant "A"; DROP');
  });

  it('refuses keys and fingerprints PostgreSQL text cannot hold, and bad durations, before any query', async () => {
    const store = postgresStores(pool).idempotency;
    await expect(store.claim('a\u0000b', 'fp', 1_000)).rejects.toThrow(TypeError);
    await expect(store.claim('k', 'f\u0000', 1_000)).rejects.toThrow(TypeError);
    await expect(store.claim('', 'fp', 1_000)).rejects.toThrow(TypeError);
    await expect(store.claim('\uD800', 'fp', 1_000)).rejects.toThrow(TypeError);
    await expect(store.claim('k', 'fp', 0)).rejects.toThrow(/"leaseMs"/);
    await expect(store.complete('k', 't', 'r', 1.5)).rejects.toThrow(/"ttlMs"/);
    await expect(store.renew('k', 't', -1)).rejects.toThrow(/"leaseMs"/);
    expect(pool.totalCount).toBe(0);
  });
});
