/**
 * Four processes × 100 critical sections on one lock key, each a read-modify-write of a plain
 * counter (read, then write read + 1, no atomics): with mutual exclusion the counter ends at
 * exactly 400 and no section ever saw another inside. On Redis and on PostgreSQL. And withLocks
 * with opposite key orders from two processes: no deadlock. Workers run the built dist/ under
 * plain node.
 */
import { expect, it } from 'vitest';
import { postgresStores } from '../../src/stores/postgres/index.js';
import { runWorkers } from '../support/multi-process.js';
import { usePostgres, useRedis } from '../support/services.js';

const redis = await useRedis();
const postgres = await usePostgres();
const entry = new URL('./scenarios/counter.mjs', import.meta.url);
const pairs = new URL('./scenarios/pairs.mjs', import.meta.url);

const workers = 4;
const sections = 100;

interface WorkerResult {
  readonly overlaps: number;
  readonly failures: number;
}

function report(backend: string, results: readonly WorkerResult[], counter: number): void {
  const overlaps = results.reduce((sum, r) => sum + r.overlaps, 0);
  const failures = results.reduce((sum, r) => sum + r.failures, 0);
  console.log(
    `multi-process lock on ${backend}: ${workers} processes × ${sections} read-modify-write sections → ` +
      `counter ${counter} (expected ${workers * sections}), ${overlaps} overlapping sections, ${failures} failures`,
  );
  expect(failures).toBe(0);
  expect(overlaps).toBe(0);
  expect(counter).toBe(workers * sections);
}

redis.describe('the lock across processes on Redis', () => {
  it(`${workers} processes × ${sections} sections on a plain counter: exactly ${workers * sections}`, async () => {
    const input = { backend: 'redis', redisUrl: redis.url, prefix: redis.prefix, db: {}, sections };
    const results = await runWorkers<WorkerResult>({ entry, workers, input, timeoutMs: 120_000 });
    report('Redis', results, Number(await redis.admin().get(`${redis.prefix}counter`)));
  });

  it('withLocks with opposite key orders from two processes: no deadlock, every section runs alone', async () => {
    const input = { redisUrl: redis.url, prefix: redis.prefix, sections: 50 };
    const results = await runWorkers<WorkerResult>({ entry: pairs, workers: 2, input, timeoutMs: 60_000 });
    const counter = Number(await redis.admin().get(`${redis.prefix}pairs`));
    const overlaps = results.reduce((sum, r) => sum + r.overlaps, 0);
    const failures = results.reduce((sum, r) => sum + r.failures, 0);
    console.log(
      `withLocks ['a', 'b'] and ['b', 'a'] from 2 processes × 50: counter ${counter} (expected 100), ${overlaps} overlaps, ${failures} failures`,
    );
    expect([counter, overlaps, failures]).toEqual([100, 0, 0]);
  });
});

postgres.describe('the lock across processes on PostgreSQL', () => {
  it(`${workers} processes × ${sections} sections on a plain counter: exactly ${workers * sections}`, async () => {
    const pool = postgres.pool();
    await pool.query('CREATE TABLE counter (id int PRIMARY KEY, n int NOT NULL)');
    await pool.query('CREATE TABLE inside (id int PRIMARY KEY, n int NOT NULL)');
    await pool.query('INSERT INTO counter VALUES (1, 0)');
    await pool.query('INSERT INTO inside VALUES (1, 0)');
    await postgresStores(pool, { schema: postgres.schema }).migrate();
    const input = { backend: 'postgres', db: postgres.config(), schema: postgres.schema, sections };
    const results = await runWorkers<WorkerResult>({ entry, workers, input, timeoutMs: 120_000 });
    const { rows } = await pool.query<{ n: number }>('SELECT n FROM counter WHERE id = 1');
    report('PostgreSQL', results, rows[0]!.n);
  });
});
