/**
 * LISTEN on a real server (PgNotifications): several channels on one connection, and the reopen
 * after the connection is cut (through a fault proxy of the test's own), on a client of our own and
 * on one lent by a pool without pg-pool's `Client`. The reopen delay runs on a FakeClock.
 */
import type { Pool } from 'pg';
import { afterEach, beforeEach, expect, it } from 'vitest';
import type { PgPoolLike } from '../../src/stores/postgres/index.js';
import { PgNotifications } from '../../src/stores/postgres/pg-notifications.js';
import { FakeClock } from '../../src/testing/fake-clock.js';
import { type FaultProxy, startFaultProxy } from '../support/fault-proxy.js';
import { usePostgres } from '../support/services.js';
import { until } from '../support/until.js';

const pg = await usePostgres();

/** A listener that records payloads. */
function recorder() {
  const seen: string[] = [];
  return { seen, listener: (payload: string) => void seen.push(payload) };
}

/** NOTIFYs `channel` (from the admin pool) until `heard()`: the LISTEN may still be on its way. */
async function notifyUntilHeard(channel: string, payload: string, heard: () => boolean): Promise<void> {
  await expect
    .poll(
      async () => {
        await pg.admin().query('SELECT pg_notify($1, $2)', [channel, payload]);
        await new Promise((resolve) => setTimeout(resolve, 20));
        return heard();
      },
      { timeout: 5_000, interval: 10 },
    )
    .toBe(true);
}

/** `pool` without pg-pool's `Client` class: PgNotifications then listens on a client it lends. */
function withoutClientClass(pool: Pool): PgPoolLike {
  return {
    connect: () => pool.connect(),
    query: (text, values) => pool.query(text, values),
    get totalCount() {
      return pool.totalCount;
    },
  };
}

pg.describe('notifications on PostgreSQL (pg)', () => {
  let proxy: FaultProxy;
  beforeEach(async () => {
    proxy = await startFaultProxy({ target: pg.target });
  });
  afterEach(async () => {
    await proxy.close();
  });

  it('channels subscribed before the connection is up are all LISTENed, on one connection', async () => {
    const pool = pg.pool();
    const notifications = new PgNotifications(pool, new FakeClock());
    const a = recorder();
    const b = recorder();
    const channelA = `${pg.schema}:a`;
    const channelB = `${pg.schema}:"b"; -- not SQL`;
    notifications.subscribe(channelA, a.listener);
    notifications.subscribe(channelB, b.listener);
    await notifyUntilHeard(channelA, 'to a', () => a.seen.length > 0);
    await notifyUntilHeard(channelB, 'to b', () => b.seen.length > 0);
    expect(new Set(a.seen)).toEqual(new Set(['to a']));
    expect(new Set(b.seen)).toEqual(new Set(['to b']));
    // The LISTEN connection is not one of the pool's.
    expect(pool.totalCount).toBe(0);
    await notifications.close();
  });

  it('a cut LISTEN connection is reopened a second later (store clock) and hears every channel again', async () => {
    const clock = new FakeClock();
    const pool = pg.pool({ connectionString: proxy.url(pg.url) });
    const notifications = new PgNotifications(pool, clock);
    const a = recorder();
    const b = recorder();
    notifications.subscribe(`${pg.schema}:a`, a.listener);
    notifications.subscribe(`${pg.schema}:b`, b.listener);
    await notifyUntilHeard(`${pg.schema}:a`, 'before', () => a.seen.includes('before'));
    expect(proxy.connections).toBe(1);

    proxy.cut();
    // The drop is noticed and a reopen is scheduled; nothing reconnects before the clock says so.
    await until(() => clock.pendingTimers === 1, 'the reopen timer');
    expect(proxy.accepted).toBe(1);
    await clock.advance(1_000);
    await notifyUntilHeard(`${pg.schema}:a`, 'after', () => a.seen.includes('after'));
    await notifyUntilHeard(`${pg.schema}:b`, 'after', () => b.seen.includes('after'));
    expect(proxy.accepted).toBe(2);
    await notifications.close();
    await until(() => proxy.connections === 0, 'the LISTEN connection closed');
  });

  it('on a pool without a Client class: listens on a lent client, lends another after a cut, destroys it at close', async () => {
    const clock = new FakeClock();
    const pool = pg.pool({ connectionString: proxy.url(pg.url) });
    const notifications = new PgNotifications(withoutClientClass(pool), clock);
    const a = recorder();
    notifications.subscribe(`${pg.schema}:lent`, a.listener);
    await notifyUntilHeard(`${pg.schema}:lent`, 'before', () => a.seen.includes('before'));
    expect(pool.totalCount).toBe(1);

    proxy.cut();
    await until(() => clock.pendingTimers === 1, 'the reopen timer');
    // The broken client was released with an error: the pool dropped it.
    await until(() => pool.totalCount === 0, 'the lent client removed from the pool');
    await clock.advance(1_000);
    await notifyUntilHeard(`${pg.schema}:lent`, 'after', () => a.seen.includes('after'));
    expect(pool.totalCount).toBe(1);

    await notifications.close();
    // Destroyed, not returned: no LISTENing session is handed to another caller.
    await until(() => pool.totalCount === 0, 'the lent client destroyed');
    expect(pool.idleCount).toBe(0);
  });
});
