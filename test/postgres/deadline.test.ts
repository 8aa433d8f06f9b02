/**
 * Every store call has a deadline (`timeoutMs`): through a paused fault proxy a call fails with
 * `StoreUnavailableError` in time, its client is destroyed (never handed out again) and the store
 * works after resume; a statement still running at the deadline is cancelled on the server. On
 * PGlite the deadline bounds the wait for the session.
 */
import { performance } from 'node:perf_hooks';
import { setTimeout as sleep } from 'node:timers/promises';
import { PGlite } from '@electric-sql/pglite';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { isStoreUnavailableError, isTimeoutError } from '../../src/core/errors.js';
import { postgresStores } from '../../src/stores/postgres/index.js';
import { type FaultProxy, startFaultProxy } from '../support/fault-proxy.js';
import { usePostgres } from '../support/services.js';

const pg = await usePostgres();

/** Resolves with what `promise` rejected with, and how long that took. */
async function rejection(promise: Promise<unknown>): Promise<{ error: unknown; ms: number }> {
  const start = performance.now();
  try {
    await promise;
  } catch (error) {
    return { error, ms: performance.now() - start };
  }
  throw new Error('expected a rejection');
}

function expectTimeout(error: unknown): void {
  expect(isStoreUnavailableError(error), String(error)).toBe(true);
  expect(isTimeoutError((error as Error).cause)).toBe(true);
}

pg.describe('deadlines on PostgreSQL (pg)', () => {
  let proxy: FaultProxy;
  beforeEach(async () => {
    proxy = await startFaultProxy({ target: pg.target });
  });
  afterEach(async () => {
    proxy.resume();
    await proxy.close();
  });

  it('a paused server: the call fails within timeoutMs, its client is destroyed, the store recovers', async () => {
    await postgresStores(pg.pool(), { schema: pg.schema }).migrate();
    const pool = pg.pool({ connectionString: proxy.url(pg.url), max: 2 });
    const removed: unknown[] = [];
    const released: unknown[] = [];
    pool.on('remove', (client) => removed.push(client));
    pool.on('release', (error) => released.push(error));
    const stores = postgresStores(pool, { schema: pg.schema, timeoutMs: 200, listen: false });
    const store = stores.idempotency;
    const owner = await store.claim('k', 'fp', 60_000);
    expect(owner.status).toBe('claimed');
    expect(pool.totalCount).toBe(1);

    proxy.pause();
    const { error, ms } = await rejection(store.claim('k', 'fp', 60_000));
    expectTimeout(error);
    expect(ms).toBeGreaterThanOrEqual(190);
    expect(ms).toBeLessThan(400);
    // Released with an error (pg-pool then ends it), never returned to the pool.
    expect(released.at(-1)).toBeInstanceOf(Error);
    expect(pool.totalCount).toBe(0);
    await expect.poll(() => removed.length).toBe(1);

    // The wait for a connection counts too: connecting through the paused proxy never finishes.
    const connecting = await rejection(store.claim('k', 'fp', 60_000));
    expectTimeout(connecting.error);
    expect(connecting.ms).toBeLessThan(400);

    proxy.resume();
    await expect.poll(() => store.claim('k', 'fp', 60_000).then((r) => r.status)).toBe('in_progress');
    await stores.close();
  });

  it('a statement still running at the deadline is cancelled on the server (pg_cancel_backend)', async () => {
    const pool = pg.pool();
    const stores = postgresStores(pool, { schema: pg.schema, timeoutMs: 200, listen: false });
    await stores.migrate();
    const store = stores.idempotency;
    const claim = await store.claim('k', 'fp', 60_000);
    if (claim.status !== 'claimed') throw new Error('not claimed');

    // Another session locks the row: complete() waits for the lock until its deadline.
    const locker = pg.client();
    await locker.connect();
    await locker.query('BEGIN');
    await locker.query(`SELECT 1 FROM "${pg.schema}".idempotency_keys WHERE key = 'k' FOR UPDATE`);
    const waiting = () =>
      pg
        .admin()
        .query<{ n: number }>(
          "SELECT count(*)::int AS n FROM pg_stat_activity WHERE state = 'active' AND query LIKE 'WITH done AS%'",
        )
        .then((r) => r.rows[0]!.n);

    const pending = rejection(store.complete('k', claim.token, 'r', 60_000));
    await expect.poll(waiting, { timeout: 150, interval: 10 }).toBe(1);
    const { error, ms } = await pending;
    expectTimeout(error);
    expect(ms).toBeLessThan(400);
    await expect.poll(waiting, { timeout: 2_000, interval: 20 }).toBe(0);

    // It was cancelled, not merely left behind: once the lock is gone the record is still in progress.
    await locker.query('ROLLBACK');
    await sleep(50);
    expect((await store.claim('k', 'fp', 60_000)).status).toBe('in_progress');
    expect(await store.complete('k', claim.token, 'done', 60_000)).toBe(true);
    await stores.close();
  });

  it('a query error (no table: migrate() not run) is a StoreUnavailableError with the driver error as cause', async () => {
    const stores = postgresStores(pg.pool(), { schema: `${pg.schema}_missing`, listen: false });
    const { error } = await rejection(stores.idempotency.claim('k', 'fp', 1_000));
    expect(isStoreUnavailableError(error)).toBe(true);
    expect(String((error as Error).cause)).toMatch(/does not exist/);
    await stores.close();
  });
});

describe('deadlines on PGlite', () => {
  it('the wait for the busy session is bounded; the store answers once it is free', async () => {
    const db = new PGlite();
    try {
      const stores = postgresStores(db, { schema: 'd', timeoutMs: 100 });
      await stores.migrate();
      let free!: () => void;
      const busy = db.transaction(() => new Promise<void>((resolve) => (free = resolve)));
      await sleep(10);
      const { error, ms } = await rejection(stores.idempotency.claim('k', 'fp', 60_000));
      expectTimeout(error);
      expect(ms).toBeLessThan(300);
      // A transaction whose session came too late runs nothing.
      let ran = false;
      const late = rejection(
        stores.idempotency.transaction(async () => {
          ran = true;
        }),
      );
      expectTimeout((await late).error);
      free();
      await busy;
      await sleep(10);
      expect(ran).toBe(false);
      expect((await stores.idempotency.claim('k2', 'fp', 60_000)).status).toBe('claimed');
      await stores.close();
    } finally {
      await db.close();
    }
  }, 30_000);
});
