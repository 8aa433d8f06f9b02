/**
 * Real Redis, PostgreSQL and NATS (JetStream) for integration tests.
 *
 * A test file declares what it needs with a top-level `await useRedis()` / `await usePostgres()`
 * / `await useNats()` and wraps its suites in `redis.describe(...)` (or
 * `describe.skipIf(!redis.available)`):
 *
 * - service reachable: the tests run, each in its own namespace (a Redis key prefix, a
 *   PostgreSQL schema, a NATS stream and subject prefix) that is deleted after the test;
 * - unreachable and not required: the suites are skipped and a loud notice on stderr names the
 *   service, its URL and how to start it;
 * - unreachable and required (`CI=true` or `REQUIRE_SERVICES=1`): `useRedis()` / `usePostgres()`
 *   / `useNats()` throws, so the file fails to collect with that message.
 *
 * Tests in a file that uses these helpers run one at a time (vitest's default): the namespace of
 * "the current test" is tracked with `beforeEach`/`afterEach`, and a concurrent test is refused.
 *
 * This module is the one entry point: the code lives in `service-env.ts` (URLs, probes, the
 * skip/fail report), `redis-fixture.ts`, `postgres-fixture.ts`, `nats-fixture.ts` and
 * `pg-teardown.ts`.
 *
 * @example
 * ```ts
 * const redis = await useRedis();
 * redis.describe('rate limiter on Redis', () => {
 *   it('admits up to the limit', async () => {
 *     const client = redis.client();
 *     await client.set(redis.key('bucket'), '1');
 *   });
 * });
 * ```
 */
export { type NatsService, natsInfo, natsUrl, probeNats, useNats } from './nats-fixture.js';
export {
  type PostgresOverrides,
  type PostgresService,
  usePostgres,
} from './postgres-fixture.js';
export {
  deleteByPrefix,
  type RedisClientOptions,
  type RedisService,
  scanKeys,
  useRedis,
} from './redis-fixture.js';
export {
  databaseUrl,
  type ProbeResult,
  probePostgres,
  probeRedis,
  probeTimeoutMs,
  redactUrl,
  redisUrl,
  reportUnavailable,
  requireServices,
  type ServiceInfo,
  type ServiceTarget,
  targetOf,
  uniqueToken,
} from './service-env.js';
