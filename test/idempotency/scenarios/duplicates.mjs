// Worker of the multi-process idempotency test, run under plain node on the built dist/: one
// process of several, each with its own clients and idempotency() on the shared store, sending
// every key `copies` times with `concurrency` requests in flight. The handler's side effect is a
// row (PostgreSQL, no unique constraint) or a list entry (Redis) per execution, so the parent
// counts executions exactly.
import { Redis } from 'ioredis';
import pg from 'pg';
import { idempotency } from '../../../dist/index.js';
import { postgresStores } from '../../../dist/stores/postgres/index.js';
import { redisStores } from '../../../dist/stores/redis/index.js';
import { runScenario } from '../../support/scenario-worker.mjs';

runScenario(async (input, { workerIndex, barrier }) => {
  const redis = input.backend === 'redis' ? new Redis(input.redisUrl, { maxRetriesPerRequest: 1 }) : undefined;
  const pool = new pg.Pool({ ...input.db, max: 8 });
  pool.on('error', () => {});
  const stores =
    redis === undefined
      ? postgresStores(pool, { schema: input.schema, timeoutMs: 5_000 })
      : redisStores(redis, { prefix: input.prefix, timeoutMs: 5_000 });
  const payments = idempotency({ store: stores.idempotency, leaseMs: 10_000, maxWaitMs: 20_000 });
  const effect =
    redis === undefined
      ? (key) => pool.query('INSERT INTO effects (key, worker) VALUES ($1, $2)', [key, workerIndex])
      : (key) => redis.rpush(`${input.prefix}effects`, `${key}:${workerIndex}`);
  try {
    const requests = [];
    for (let copy = 0; copy < input.copies; copy++)
      for (let k = 0; k < input.keys; k++) requests.push(`key-${(k + workerIndex * 7) % input.keys}`);
    await barrier();
    const responses = {};
    let replays = 0;
    let failures = 0;
    let next = 0;
    await Promise.all(
      Array.from({ length: input.concurrency }, async () => {
        while (next < requests.length) {
          const key = requests[next++];
          try {
            const { value, replayed } = await payments.run(key, { key, cents: 100 }, async () => {
              await effect(key);
              await new Promise((resolve) => setTimeout(resolve, 5));
              return { key, chargedBy: workerIndex, id: crypto.randomUUID() };
            });
            if (replayed) replays += 1;
            const seen = responses[key];
            const json = JSON.stringify(value);
            if (seen !== undefined && seen !== json) throw new Error(`${key}: two different responses`);
            responses[key] = json;
          } catch (error) {
            failures += 1;
            if (failures === 1) console.error(error);
          }
        }
      }),
    );
    return { workerIndex, responses, replays, failures, sent: requests.length };
  } finally {
    await stores.close?.();
    redis?.disconnect();
    await pool.end();
  }
});
