/**
 * What the PostgreSQL idempotency store adds to the conformance suite: transactions shared with the
 * caller's own writes, one round trip per decision, the reaper, LISTEN wake-ups (and none with
 * `listen: false`). Transactions and the reaper run on `pg` and on PGlite.
 */
import { execFile } from 'node:child_process';
import { performance } from 'node:perf_hooks';
import { setTimeout as sleep } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';
import { idempotency } from '../../src/idempotency/idempotency.js';
import { channelName } from '../../src/stores/postgres/identifiers.js';
import { type PostgresStores, postgresStores } from '../../src/stores/postgres/index.js';
import { FakeClock } from '../../src/testing/fake-clock.js';
import { countingPool } from '../support/counting.js';
import { type StoreOverrides, serverStores, useEmbeddedPostgres } from '../support/postgres-stores.js';
import { usePostgres } from '../support/services.js';

const pg = await usePostgres();

interface Backend {
  /** A migrated store set on a fresh schema. */
  stores(overrides?: StoreOverrides): Promise<PostgresStores>;
  /** Runs a statement outside the stores (for setup and checks). */
  sql<R>(text: string, params?: unknown[]): Promise<R[]>;
}

function sharedScenarios(name: string, backend: () => Backend): void {
  describe(`${name}: transactions and the reaper`, () => {
    it("work's own write and complete commit together", async () => {
      const b = backend();
      const stores = await b.stores();
      const s = `"${stores.schema}"`;
      await b.sql(`CREATE TABLE ${s}.effects (id text)`);
      const store = stores.idempotency;
      const claim = await store.claim('k', 'fp', 60_000);
      if (claim.status !== 'claimed') throw new Error('not claimed');
      const value = await store.transaction(async (tx) => {
        await tx.query(`INSERT INTO ${s}.effects (id) VALUES ($1)`, ['e1']);
        expect(await store.complete('k', claim.token, 'done', 60_000, tx)).toBe(true);
        return 42;
      });
      expect(value).toBe(42);
      expect(await b.sql(`SELECT id FROM ${s}.effects`)).toEqual([{ id: 'e1' }]);
      expect(await store.claim('k', 'fp', 60_000)).toEqual({ status: 'completed', result: 'done' });
      await stores.close();
    });

    it('a work that throws rolls back both', async () => {
      const b = backend();
      const stores = await b.stores();
      const s = `"${stores.schema}"`;
      await b.sql(`CREATE TABLE ${s}.effects (id text)`);
      const store = stores.idempotency;
      const claim = await store.claim('k', 'fp', 60_000);
      if (claim.status !== 'claimed') throw new Error('not claimed');
      const boom = new Error('boom');
      await expect(
        store.transaction(async (tx) => {
          await tx.query(`INSERT INTO ${s}.effects (id) VALUES ($1)`, ['e1']);
          await store.complete('k', claim.token, 'done', 60_000, tx);
          throw boom;
        }),
      ).rejects.toBe(boom);
      expect(await b.sql(`SELECT id FROM ${s}.effects`)).toEqual([]);
      expect((await store.claim('k', 'fp', 60_000)).status).toBe('in_progress');
      expect(await store.complete('k', claim.token, 'later', 60_000)).toBe(true);
      await stores.close();
    });

    it('complete refused (stale token) inside the transaction: the caller rolls back', async () => {
      const b = backend();
      const stores = await b.stores();
      const s = `"${stores.schema}"`;
      await b.sql(`CREATE TABLE ${s}.effects (id text)`);
      const store = stores.idempotency;
      const claim = await store.claim('k', 'fp', 60_000);
      if (claim.status !== 'claimed') throw new Error('not claimed');
      expect(await store.release('k', claim.token)).toBe(true);
      const lost = new Error('lease lost');
      await expect(
        store.transaction(async (tx) => {
          await tx.query(`INSERT INTO ${s}.effects (id) VALUES ($1)`, ['e1']);
          if (!(await store.complete('k', claim.token, 'done', 60_000, tx))) throw lost;
        }),
      ).rejects.toBe(lost);
      expect(await b.sql(`SELECT id FROM ${s}.effects`)).toEqual([]);
      await stores.close();
    });

    it('idempotency({ transactional: true }): effect and result commit together; renewals go on during the handler', async () => {
      const b = backend();
      const stores = await b.stores();
      const s = `"${stores.schema}"`;
      await b.sql(`CREATE TABLE ${s}.effects (id text)`);
      const payments = idempotency({ store: stores.idempotency, transactional: true, leaseMs: 300 });
      let runs = 0;
      const pay = () =>
        payments.execute('pay-1', { amount: 5 }, async ({ tx }) => {
          runs += 1;
          await tx.query(`INSERT INTO ${s}.effects (id) VALUES ($1)`, ['pay-1']);
          await sleep(450); // past the lease: only renewals keep it
          return { receipt: 'r-1' };
        });
      expect(await pay()).toEqual({ receipt: 'r-1' });
      expect(await pay()).toEqual({ receipt: 'r-1' });
      expect(runs).toBe(1);
      expect(await b.sql(`SELECT id FROM ${s}.effects`)).toEqual([{ id: 'pay-1' }]);
      await stores.close();
    });

    it('the reaper deletes expired rows in batches and leaves live ones', async () => {
      const b = backend();
      const stores = await b.stores();
      const t = `"${stores.schema}".idempotency_keys`;
      await b.sql(
        `INSERT INTO ${t} (key, fingerprint, status, token, result, expires_at)
         SELECT 'old-' || i, 'fp', 'COMPLETED', 't', '\\x00'::bytea, clock_timestamp() - interval '1 second'
         FROM generate_series(1, 2500) AS i`,
      );
      const live = await stores.idempotency.claim('live', 'fp', 60_000);
      const done = await stores.idempotency.claim('done', 'fp', 60_000);
      if (done.status !== 'claimed') throw new Error('not claimed');
      await stores.idempotency.complete('done', done.token, 'r', 60_000);
      const short = await stores.idempotency.claim('short', 'fp', 50);
      await sleep(80);
      expect(await stores.idempotency.reap()).toBe(2501);
      const rows = await b.sql<{ key: string }>(`SELECT key FROM ${t} ORDER BY key`);
      expect(rows.map((r) => r.key)).toEqual(['done', 'live']);
      expect(live.status).toBe('claimed');
      expect(short.status).toBe('claimed');
      expect(await stores.idempotency.reap()).toBe(0);
      await stores.close();
    });

    it('the reaper runs every minute from the first claim, on the store set clock; close() stops it', async () => {
      const b = backend();
      const clock = new FakeClock(1_000);
      const stores = await b.stores({ clock });
      const t = `"${stores.schema}".idempotency_keys`;
      await b.sql(
        `INSERT INTO ${t} (key, fingerprint, status, token, result, expires_at)
         VALUES ('old', 'fp', 'COMPLETED', 't', '\\x00'::bytea, clock_timestamp() - interval '1 second')`,
      );
      await clock.advance(60_000);
      expect(await b.sql(`SELECT key FROM ${t}`)).toHaveLength(1); // not started yet
      await stores.idempotency.claim('k', 'fp', 60_000);
      await clock.advance(60_000);
      await expect.poll(() => b.sql<{ key: string }>(`SELECT key FROM ${t}`)).toEqual([{ key: 'k' }]);
      await stores.close();
      expect(clock.pendingTimers).toBe(0);
    });
  });

  describe(`${name}: a key in progress`, () => {
    it("a duplicate's claim says when the lease ends, from the database's clock", async () => {
      const b = backend();
      const stores = await b.stores({ listen: false });
      expect(await stores.idempotency.claim('k', 'fp', 60_000)).toMatchObject({ status: 'claimed' });
      const duplicate = await stores.idempotency.claim('k', 'fp', 1_000);
      if (duplicate.status !== 'in_progress')
        throw new Error(`expected in_progress, got ${duplicate.status}`);
      expect(duplicate.retryAfterMs).toBeGreaterThan(55_000);
      expect(duplicate.retryAfterMs).toBeLessThanOrEqual(60_000);
      expect(Number.isInteger(duplicate.retryAfterMs)).toBe(true);
      await stores.close();
    });
  });

  describe(`${name}: arguments`, () => {
    it('a lease or retention of 1 ms is taken; bad ones and a result that is not text are refused, named', async () => {
      const b = backend();
      const stores = await b.stores({ listen: false });
      const store = stores.idempotency;
      expect(await store.claim('short', 'fp', 1)).toMatchObject({ status: 'claimed' });
      const claim = await store.claim('k', 'fp', 60_000);
      if (claim.status !== 'claimed') throw new Error('not claimed');
      expect(await store.renew('k', claim.token, 60_000)).toBe(true);
      expect(await store.complete('k', claim.token, 'done', 1)).toBe(true);
      const refusals: [() => Promise<unknown>, RegExp][] = [
        [() => store.claim('k2', 'fp', 0), /^expected "leaseMs" to be a positive integer, got 0$/],
        [() => store.claim('k\u0000', 'fp', 1_000), /^expected "key" /],
        [() => store.claim('k2', '\u0000', 1_000), /^expected "fingerprint" /],
        [() => store.renew('k2', 't', 1.5), /^expected "leaseMs" to be a positive integer, got 1\.5$/],
        [() => store.complete('k2', 't', 'r', -1), /^expected "ttlMs" to be a positive integer, got -1$/],
        [() => store.complete('k2', 't', 42 as never, 1_000), /^expected "result" to be a string, got 42$/],
      ];
      for (const [call, message] of refusals) await expect(call()).rejects.toThrow(message);
      await stores.close();
    });
  });
}

pg.describe('idempotency store on PostgreSQL (pg)', () => {
  sharedScenarios('pg', () => ({
    stores: (overrides) => serverStores(pg, overrides),
    sql: async (text, params) => (await pg.admin().query(text, params)).rows,
  }));

  it('one round trip per decision: claim, complete, replay claim, release, renew', async () => {
    await postgresStores(pg.pool(), { schema: pg.schema }).migrate();
    const { db: pool, statements } = countingPool(pg.pool());
    const stores = postgresStores(pool, { schema: pg.schema });
    const store = stores.idempotency;
    const claim = await store.claim('k', 'fp', 60_000);
    expect(statements).toHaveLength(1);
    if (claim.status !== 'claimed') throw new Error('not claimed');
    expect(await store.complete('k', claim.token, 'r', 60_000)).toBe(true);
    expect(statements).toHaveLength(2);
    expect(await store.claim('k', 'fp', 60_000)).toEqual({ status: 'completed', result: 'r' });
    expect(statements).toHaveLength(3);
    const other = await store.claim('k2', 'fp', 60_000);
    if (other.status !== 'claimed') throw new Error('not claimed');
    expect(await store.renew('k2', other.token, 60_000)).toBe(true);
    expect(await store.release('k2', other.token)).toBe(true);
    expect(statements).toHaveLength(6);
    await stores.close();
  });

  /** Backends of this test's schema's connections (the fixture puts the schema in `options`). */
  const backends = async (applicationName: string): Promise<number> =>
    (
      await pg
        .admin()
        .query<{ n: number }>('SELECT count(*)::int AS n FROM pg_stat_activity WHERE application_name = $1', [
          applicationName,
        ])
    ).rows[0]!.n;

  it('notifies only for records a duplicate saw in progress (a notifying commit serialises every other)', async () => {
    const stores = await serverStores(pg);
    const store = stores.idempotency;
    const listener = pg.client();
    await listener.connect();
    const heard: string[] = [];
    listener.on('notification', (message) => heard.push(message.payload ?? ''));
    await listener.query(`LISTEN "${channelName(pg.schema, 'idempotency')}"`);
    const alone = await store.claim('alone', 'fp', 60_000);
    if (alone.status !== 'claimed') throw new Error('not claimed');
    await store.complete('alone', alone.token, 'r', 60_000);
    const awaited = await store.claim('awaited', 'fp', 60_000);
    if (awaited.status !== 'claimed') throw new Error('not claimed');
    expect((await store.claim('awaited', 'fp', 60_000)).status).toBe('in_progress');
    await store.complete('awaited', awaited.token, 'r', 60_000);
    await expect.poll(() => heard).toEqual(['awaited']);
    await stores.close();
  });

  it('watch listens on one dedicated connection, re-LISTENs after it drops; listen: false opens none', async () => {
    const name = `bulwark-listen-${pg.schema}`;
    const pool = pg.pool({ application_name: name });
    const stores = postgresStores(pool, { schema: pg.schema });
    await stores.migrate();
    const store = stores.idempotency;
    let woken = 0;
    const unwatch = [store.watch!('a', () => (woken += 1)), store.watch!('b', () => (woken += 10))];
    await expect.poll(() => backends(name)).toBe(pool.totalCount + 1);
    await expect.poll(() => woken).toBe(11); // listening: every watcher looks once
    const a = await store.claim('a', 'fp', 60_000);
    if (a.status !== 'claimed') throw new Error('not claimed');
    expect((await store.claim('a', 'fp', 60_000)).status).toBe('in_progress'); // a duplicate waits
    await store.complete('a', a.token, 'r', 60_000);
    await expect.poll(() => woken).toBe(12);

    // The listening connection dies: it is reopened and listens again.
    await pg
      .admin()
      .query(
        "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = $1 AND query LIKE 'LISTEN%'",
        [name],
      );
    // Listening again (a second later): every watcher looks again, as notifications were lost.
    await expect.poll(() => woken, { timeout: 10_000 }).toBe(23);
    const b = await store.claim('b', 'fp', 60_000);
    if (b.status !== 'claimed') throw new Error('not claimed');
    expect((await store.claim('b', 'fp', 60_000)).status).toBe('in_progress'); // a duplicate waits
    await store.release('b', b.token);
    await expect.poll(() => woken).toBe(33);
    for (const stop of unwatch) stop();
    await stores.close();
    await expect.poll(() => backends(name)).toBe(pool.totalCount);

    const quiet = postgresStores(pool, { schema: pg.schema, listen: false });
    expect(quiet.idempotency.watch).toBeUndefined();
    const c = await quiet.idempotency.claim('c', 'fp', 60_000);
    if (c.status !== 'claimed') throw new Error('not claimed');
    await quiet.idempotency.complete('c', c.token, 'r', 60_000);
    await sleep(50);
    expect(await backends(name)).toBe(pool.totalCount);
    await quiet.close();
  });
});

describe('idempotency store on PGlite', () => {
  const embedded = useEmbeddedPostgres();
  sharedScenarios('PGlite', () => ({
    stores: (overrides) => embedded.stores(overrides),
    sql: async (text, params) => (await embedded.db().query<never>(text, params)).rows,
  }));
});

pg.describe('the LISTEN connection and timers never keep a process alive', () => {
  it('a process that watched a key exits by itself', async () => {
    const entry = fileURLToPath(new URL('./scenarios/listen-exits.ts', import.meta.url));
    const started = performance.now();
    const { stdout } = await promisify(execFile)(
      process.execPath,
      ['--import', 'tsx', entry, pg.url, pg.schema],
      {
        cwd: fileURLToPath(new URL('../..', import.meta.url)),
        timeout: 15_000,
      },
    );
    expect(stdout.trim()).toBe('claimed');
    console.log(`child exited after ${(performance.now() - started).toFixed(0)} ms`);
  });
});
