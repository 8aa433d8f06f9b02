// Worker of the multi-process lock test, run under plain node on the built dist/: one process of
// several, each doing `sections` critical sections under one lock key, each a read-modify-write of
// a plain counter (read, then write read + 1: no atomic increment), so any overlap loses an
// update. An "inside" gauge, changed atomically at entry and exit, records overlaps directly.
import { Redis } from 'ioredis';
import pg from 'pg';
import { distributedLock } from '../../../dist/index.js';
import { postgresStores } from '../../../dist/stores/postgres/index.js';
import { redisStores } from '../../../dist/stores/redis/index.js';
import { runScenario } from '../../support/scenario-worker.mjs';

/** The counter and the gauge on Redis. */
function onRedis(redis, prefix) {
  return {
    read: async () => Number((await redis.get(`${prefix}counter`)) ?? '0'),
    write: (n) => redis.set(`${prefix}counter`, String(n)),
    enter: () => redis.incr(`${prefix}inside`),
    leave: () => redis.decr(`${prefix}inside`),
  };
}

/** The counter and the gauge on PostgreSQL (tables made by the parent). */
function onPostgres(pool) {
  const one = async (text, params) => Number((await pool.query(text, params)).rows[0]?.n ?? 0);
  return {
    read: () => one('SELECT n FROM counter WHERE id = 1'),
    write: (n) => pool.query('UPDATE counter SET n = $1 WHERE id = 1', [n]),
    enter: () => one('UPDATE inside SET n = n + 1 WHERE id = 1 RETURNING n'),
    leave: () => one('UPDATE inside SET n = n - 1 WHERE id = 1 RETURNING n'),
  };
}

runScenario(async (input, { barrier }) => {
  const redis = input.backend === 'redis' ? new Redis(input.redisUrl, { maxRetriesPerRequest: 1 }) : undefined;
  const pool = new pg.Pool({ ...input.db, max: 4 });
  pool.on('error', () => {});
  const stores =
    redis === undefined
      ? postgresStores(pool, { schema: input.schema, timeoutMs: 2_000 })
      : redisStores(redis, { prefix: input.prefix, timeoutMs: 2_000 });
  const data = redis === undefined ? onPostgres(pool) : onRedis(redis, input.prefix);
  const locks = distributedLock({ store: stores.lock });
  let overlaps = 0;
  let failures = 0;
  try {
    await barrier();
    for (let i = 0; i < input.sections; i++) {
      try {
        await locks.withLock(
          'counter',
          async () => {
            if ((await data.enter()) !== 1) overlaps += 1;
            const n = await data.read();
            await new Promise((resolve) => setImmediate(resolve));
            await data.write(n + 1);
            await data.leave();
          },
          { ttlMs: 10_000, waitMs: 60_000 },
        );
      } catch (error) {
        failures += 1;
        if (failures === 1) console.error(error);
      }
    }
    return { overlaps, failures };
  } finally {
    await stores.close?.();
    redis?.disconnect();
    await pool.end();
  }
});
