import { once } from 'node:events';
import { performance } from 'node:perf_hooks';
import { afterEach, beforeEach, expect, it } from 'vitest';
import { type FaultProxy, faultProxy } from '../../src/testing/fault-proxy.js';
import { usePostgres } from './services.js';

const pg = await usePostgres();

/** Resolves with 'deadline' if `promise` has not settled within `ms`. */
function raceDeadline<T>(promise: Promise<T>, ms: number): Promise<T | 'deadline'> {
  let timer: NodeJS.Timeout | undefined;
  const deadline = new Promise<'deadline'>((resolve) => {
    timer = setTimeout(resolve, ms, 'deadline');
  });
  return Promise.race([promise, deadline]).finally(() => clearTimeout(timer));
}

pg.describe('fault proxy in front of real PostgreSQL (pg)', () => {
  let proxy: FaultProxy;

  beforeEach(async () => {
    proxy = await faultProxy({ target: pg.target });
  });
  afterEach(async () => {
    await proxy.close();
    expect(proxy.connections).toBe(0);
  });

  it('forwards queries unchanged, on the test schema', async () => {
    const pool = pg.pool({ connectionString: proxy.url(pg.url) });
    const { rows } = await pool.query<{ schema: string }>('SELECT current_schema() AS schema');
    expect(rows[0]?.schema).toBe(pg.schema);
    expect(proxy.accepted).toBe(1);
  });

  it('adds latency in both directions (lower bound only)', async () => {
    const client = pg.client({ connectionString: proxy.url(pg.url) });
    await client.connect();
    proxy.setLatency(100);
    const start = performance.now();
    await client.query('SELECT 1');
    const rtt = performance.now() - start;
    console.log(`SELECT 1 through proxy with 100 ms latency each way: ${rtt.toFixed(1)} ms`);
    expect(rtt).toBeGreaterThanOrEqual(200);
  });

  it('pause black-holes a query past its deadline; resume lets it complete', async () => {
    const client = pg.client({ connectionString: proxy.url(pg.url) });
    await client.connect();
    proxy.pause();
    const query = client.query<{ x: number }>('SELECT 42 AS x');
    expect(await raceDeadline(query, 150)).toBe('deadline');
    proxy.resume();
    expect((await query).rows[0]?.x).toBe(42);
  });

  it('pause makes query_timeout fire; the pool serves queries again after resume', async () => {
    const pool = pg.pool({ connectionString: proxy.url(pg.url), query_timeout: 150 });
    await pool.query('SELECT 1');
    proxy.pause();
    await expect(pool.query('SELECT 1')).rejects.toThrow(/timeout/i);
    proxy.resume();
    const { rows } = await pool.query<{ ok: boolean }>('SELECT true AS ok');
    expect(rows[0]?.ok).toBe(true);
  });

  it('pause makes connecting hit connectionTimeoutMillis', async () => {
    proxy.pause();
    const pool = pg.pool({ connectionString: proxy.url(pg.url), connectionTimeoutMillis: 150 });
    await expect(pool.query('SELECT 1')).rejects.toThrow(/timeout/i);
    proxy.resume();
  });

  it('cut makes the client error; a new pool connection then succeeds', async () => {
    const client = pg.client({ connectionString: proxy.url(pg.url) });
    await client.connect();
    const errored = once(client, 'error');
    proxy.cut();
    const [error] = (await errored) as [Error];
    expect(error.message).toMatch(/terminated unexpectedly/i);
    await expect(client.query('SELECT 1')).rejects.toThrow();

    const pool = pg.pool({ connectionString: proxy.url(pg.url) });
    const { rows } = await pool.query<{ n: number }>('SELECT 1 AS n');
    expect(rows[0]?.n).toBe(1);
    expect(proxy.accepted).toBe(2);
  });

  it('cut drops idle pool clients; the pool replaces them on the next query', async () => {
    const pool = pg.pool({ connectionString: proxy.url(pg.url), max: 2 });
    await Promise.all([pool.query('SELECT pg_sleep(0.01)'), pool.query('SELECT pg_sleep(0.01)')]);
    expect(pool.totalCount).toBe(2);
    const dropped = once(pool, 'error');
    proxy.cut();
    await dropped;
    await expect.poll(() => pool.totalCount).toBe(0);
    await pool.query('SELECT 1');
    expect(proxy.accepted).toBe(3);
  });
});
