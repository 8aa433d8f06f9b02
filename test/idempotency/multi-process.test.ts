/**
 * Four processes send the same requests at once through one shared store: 4 workers × 50 requests
 * in flight over 100 keys, every key sent by every worker twice (800 requests). The handler's side
 * effect (a row with no unique constraint, a Redis list entry) must happen exactly once per key,
 * and every duplicate must get the stored response. Workers run the built dist/ under plain node.
 */
import { expect, it } from 'vitest';
import { postgresStores } from '../../src/stores/postgres/index.js';
import { runWorkers } from '../support/multi-process.js';
import { usePostgres, useRedis } from '../support/services.js';

const redis = await useRedis();
const postgres = await usePostgres();
const entry = new URL('./scenarios/duplicates.mjs', import.meta.url);

interface WorkerResult {
  readonly workerIndex: number;
  readonly responses: Record<string, string>;
  readonly replays: number;
  readonly failures: number;
  readonly sent: number;
}

const keys = 100;
const workers = 4;
const copies = 2;

/** Every worker's response to a key is the same one; returns how many keys got one. */
function checkResponses(results: readonly WorkerResult[]): number {
  const byKey = new Map<string, string>();
  for (const result of results) {
    for (const [key, response] of Object.entries(result.responses)) {
      const first = byKey.get(key);
      if (first !== undefined) expect(response, `the responses to ${key}`).toBe(first);
      byKey.set(key, response);
    }
  }
  return byKey.size;
}

function report(backend: string, results: readonly WorkerResult[], executions: number): void {
  const sent = results.reduce((sum, r) => sum + r.sent, 0);
  const replays = results.reduce((sum, r) => sum + r.replays, 0);
  const failures = results.reduce((sum, r) => sum + r.failures, 0);
  console.log(
    `multi-process idempotency on ${backend}: ${sent} requests over ${keys} keys from ${workers} processes → ` +
      `handler executed ${executions} times, ${replays} replays, ${failures} failures`,
  );
  expect(failures).toBe(0);
  expect(sent).toBe(workers * copies * keys);
  expect(replays).toBe(sent - keys);
  expect(executions).toBe(keys);
  expect(checkResponses(results)).toBe(keys);
}

postgres.describe('idempotency across processes on PostgreSQL', () => {
  it(`${workers} processes × 50 in flight over ${keys} keys: the effect happens exactly ${keys} times`, async () => {
    const pool = postgres.pool();
    await pool.query('CREATE TABLE effects (key text NOT NULL, worker int NOT NULL)');
    await postgresStores(pool, { schema: postgres.schema }).migrate();
    const input = {
      backend: 'postgres',
      db: postgres.config(),
      schema: postgres.schema,
      keys,
      copies,
      concurrency: 50,
    };
    const results = await runWorkers<WorkerResult>({ entry, workers, input, timeoutMs: 60_000 });
    const { rows } = await pool.query<{ n: string; distinct: string }>(
      'SELECT count(*) AS n, count(DISTINCT key) AS distinct FROM effects',
    );
    expect(rows[0]?.distinct).toBe(String(keys));
    report('PostgreSQL', results, Number(rows[0]?.n));
  });
});

redis.describe('idempotency across processes on Redis', () => {
  it(`${workers} processes × 50 in flight over ${keys} keys: the effect happens exactly ${keys} times`, async () => {
    const input = {
      backend: 'redis',
      redisUrl: redis.url,
      prefix: redis.prefix,
      db: {},
      keys,
      copies,
      concurrency: 50,
    };
    const results = await runWorkers<WorkerResult>({ entry, workers, input, timeoutMs: 60_000 });
    const effects = await redis.admin().lrange(`${redis.prefix}effects`, 0, -1);
    expect(new Set(effects.map((e) => e.split(':')[0])).size).toBe(keys);
    report('Redis', results, effects.length);
  });
});
