/**
 * Real Redis and PostgreSQL for integration tests.
 *
 * A test file declares what it needs with a top-level `await useRedis()` / `await usePostgres()`
 * and wraps its suites in `redis.describe(...)` (or `describe.skipIf(!redis.available)`):
 *
 * - service reachable: the tests run, each in its own namespace (a Redis key prefix, a
 *   PostgreSQL schema) that is deleted after the test;
 * - unreachable and not required: the suites are skipped and a loud notice on stderr names the
 *   service, its URL and how to start it;
 * - unreachable and required (`CI=true` or `REQUIRE_SERVICES=1`): `useRedis()` / `usePostgres()`
 *   throws, so the file fails to collect with that message.
 *
 * Tests in a file that uses these helpers run one at a time (vitest's default): the namespace of
 * "the current test" is tracked with `beforeEach`/`afterEach`, and a concurrent test is refused.
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
import { randomBytes } from 'node:crypto';
import { relative } from 'node:path';
import { performance } from 'node:perf_hooks';
import { Redis, type RedisOptions } from 'ioredis';
import type { Client, ClientConfig, Pool, PoolClient, PoolConfig } from 'pg';
import pg from 'pg';
import { afterAll, afterEach, beforeEach, describe, expect } from 'vitest';

/** Redis used by integration tests: `REDIS_URL`, default `redis://127.0.0.1:6379`. */
export const redisUrl: string = process.env.REDIS_URL || 'redis://127.0.0.1:6379';

/**
 * PostgreSQL used by integration tests: `DATABASE_URL`, default
 * `postgres://postgres@127.0.0.1:5432/test`.
 */
export const databaseUrl: string = process.env.DATABASE_URL || 'postgres://postgres@127.0.0.1:5432/test';

/**
 * Whether an unreachable service fails the run instead of skipping the files that need it:
 * `CI=true` or `REQUIRE_SERVICES=1`.
 */
export const requireServices: boolean = process.env.CI === 'true' || process.env.REQUIRE_SERVICES === '1';

/** Longest a reachability probe waits for a service, in milliseconds. */
export const probeTimeoutMs = 1_000;

/** Host and TCP port of a service, e.g. the target of a fault proxy. */
export interface ServiceTarget {
  readonly host: string;
  readonly port: number;
}

/** Outcome of {@link probeRedis} / {@link probePostgres}. */
export type ProbeResult =
  | { readonly reachable: true }
  | { readonly reachable: false; readonly reason: string };

/**
 * Host and port of a `redis://` or `postgres://` URL (brackets of an IPv6 host removed).
 *
 * @param url - the service URL
 * @param defaultPort - the port when the URL names none
 * @throws TypeError when `url` is not a URL
 */
export function targetOf(url: string, defaultPort: number): ServiceTarget {
  const parsed = new URL(url);
  const host = parsed.hostname.replace(/^\[(.*)\]$/, '$1') || '127.0.0.1';
  return { host, port: parsed.port === '' ? defaultPort : Number(parsed.port) };
}

/** `url` with its password replaced by `***`, for messages. */
export function redactUrl(url: string): string {
  try {
    const parsed = new URL(url);
    if (parsed.password !== '') parsed.password = '***';
    return parsed.toString();
  } catch {
    return url;
  }
}

function describeError(error: unknown): string {
  if (error instanceof Error) {
    const code = (error as { code?: unknown }).code;
    const detail = error.message || error.name;
    return typeof code === 'string' && !detail.includes(code) ? `${code}: ${detail}` : detail;
  }
  return String(error);
}

function withDeadline<T>(promise: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const deadline = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`${what}: no answer within ${ms} ms`)), ms);
  });
  return Promise.race([promise, deadline]).finally(() => clearTimeout(timer));
}

/**
 * Whether Redis answers `PING` at `url` within `timeoutMs`. Never throws; the probe's
 * connection is always closed.
 *
 * @param url - default {@link redisUrl}
 * @param timeoutMs - default {@link probeTimeoutMs}
 */
export async function probeRedis(
  url: string = redisUrl,
  timeoutMs: number = probeTimeoutMs,
): Promise<ProbeResult> {
  const client = new Redis(url, {
    lazyConnect: true,
    connectTimeout: timeoutMs,
    commandTimeout: timeoutMs,
    maxRetriesPerRequest: 0,
    enableOfflineQueue: false,
    retryStrategy: () => null,
  });
  // The socket error (ECONNREFUSED, ENOTFOUND, ...) says more than connect()'s "Connection is closed.".
  let socketError: unknown;
  client.on('error', (error) => {
    socketError ??= error;
  });
  try {
    await withDeadline(
      (async () => {
        await client.connect();
        await client.ping();
      })(),
      timeoutMs,
      'Redis probe',
    );
    return { reachable: true };
  } catch (error) {
    return { reachable: false, reason: describeError(socketError ?? error) };
  } finally {
    client.disconnect();
  }
}

/**
 * Whether PostgreSQL accepts a connection and answers `SELECT 1` at `url` within `timeoutMs`.
 * Never throws; the probe's connection is always closed.
 *
 * @param url - default {@link databaseUrl}
 * @param timeoutMs - default {@link probeTimeoutMs}
 */
export async function probePostgres(
  url: string = databaseUrl,
  timeoutMs: number = probeTimeoutMs,
): Promise<ProbeResult> {
  const client = new pg.Client({
    connectionString: url,
    connectionTimeoutMillis: timeoutMs,
    query_timeout: timeoutMs,
  });
  client.on('error', () => {});
  try {
    await withDeadline(
      (async () => {
        await client.connect();
        await client.query('SELECT 1');
      })(),
      timeoutMs,
      'PostgreSQL probe',
    );
    return { reachable: true };
  } catch (error) {
    return { reachable: false, reason: describeError(error) };
  } finally {
    await forceEndClient(client, 500);
  }
}

/** What {@link reportUnavailable} says about a service. */
export interface ServiceInfo {
  /** Display name, e.g. `Redis`. */
  readonly name: string;
  /** The URL that was probed (its password is redacted in messages). */
  readonly url: string;
  /** The environment variable that overrides the URL. */
  readonly envVar: string;
  /** Commands that start the service locally. */
  readonly start: readonly string[];
}

function currentTestFile(): string | undefined {
  try {
    const path = expect.getState().testPath;
    return path === undefined ? undefined : relative(process.cwd(), path);
  } catch {
    return undefined;
  }
}

/**
 * Reports an unreachable service: throws when it is required, otherwise prints a loud notice on
 * stderr. Exported for helpers that probe other services the same way.
 *
 * @param required - @default {@link requireServices}
 * @throws Error naming the service, the URL, the reason and how to start it, when `required`
 */
export function reportUnavailable(
  service: ServiceInfo,
  reason: string,
  required: boolean = requireServices,
): void {
  const file = currentTestFile();
  const lines = [
    `${service.name} is unreachable at ${redactUrl(service.url)} (${reason}).`,
    required
      ? `It is required here (CI=true or REQUIRE_SERVICES=1), so ${file ?? 'this test file'} FAILS.`
      : `SKIPPING the ${service.name} tests of ${file ?? 'this test file'}.`,
    'Start it with one of:',
    ...service.start.map((command) => `  ${command}`),
    `or point ${service.envVar} at a running ${service.name}.`,
  ];
  if (required) throw new Error(lines.join('\n'));
  lines.push('Set REQUIRE_SERVICES=1 to make this a failure instead of a skip.');
  const width = Math.max(...lines.map((line) => line.length)) + 4;
  const bar = '!'.repeat(width);
  const box = [bar, ...lines.map((line) => `!! ${line}`), bar].join('\n');
  process.stderr.write(`\n${box}\n\n`);
}

const redisInfo: ServiceInfo = {
  name: 'Redis',
  url: redisUrl,
  envVar: 'REDIS_URL',
  start: ['docker run --rm -d -p 6379:6379 redis:7', 'redis-server --daemonize yes'],
};

const postgresInfo: ServiceInfo = {
  name: 'PostgreSQL',
  url: databaseUrl,
  envVar: 'DATABASE_URL',
  start: [
    'docker run --rm -d -p 5432:5432 -e POSTGRES_HOST_AUTH_METHOD=trust -e POSTGRES_DB=test postgres:16',
    'sudo service postgresql start && createdb -U postgres test',
  ],
};

/** A fresh random token of `bytes` random bytes in hex, for names that must not collide. */
export function uniqueToken(bytes = 6): string {
  return randomBytes(bytes).toString('hex');
}

function escapeGlob(text: string): string {
  return text.replace(/[*?[\]\\]/g, '\\$&');
}

/**
 * Every key of `client`'s database that starts with `prefix`, sorted (SCAN, never KEYS).
 *
 * @param client - a plain (non-cluster) ioredis client without `keyPrefix`
 */
export async function scanKeys(client: Redis, prefix: string): Promise<string[]> {
  const found: string[] = [];
  let cursor = '0';
  do {
    const [next, keys] = await client.scan(cursor, 'MATCH', `${escapeGlob(prefix)}*`, 'COUNT', 1000);
    cursor = next;
    found.push(...keys);
  } while (cursor !== '0');
  return [...new Set(found)].sort();
}

/**
 * Deletes every key that starts with `prefix` (SCAN + UNLINK) and returns how many were deleted.
 *
 * @param client - a plain (non-cluster) ioredis client without `keyPrefix`
 * @throws TypeError when `prefix` is empty (that would delete the whole database)
 */
export async function deleteByPrefix(client: Redis, prefix: string): Promise<number> {
  if (prefix === '') throw new TypeError('expected "prefix" to be a non-empty string, got ""');
  let deleted = 0;
  let cursor = '0';
  do {
    const [next, keys] = await client.scan(cursor, 'MATCH', `${escapeGlob(prefix)}*`, 'COUNT', 1000);
    cursor = next;
    if (keys.length > 0) deleted += await client.unlink(...keys);
  } while (cursor !== '0');
  return deleted;
}

/** Options of {@link RedisService.client}: any ioredis option, plus the URL to connect to. */
export interface RedisClientOptions extends RedisOptions {
  /** Where to connect, e.g. a fault proxy's `proxy.url(redis.url)`. @default the service's URL */
  url?: string;
}

/**
 * Redis for one test file, from {@link useRedis}.
 *
 * Every member except `available`, `url`, `target` and `describe` throws when Redis is not
 * available (the suites using it are skipped then, so this only fires on a missing `describe`).
 */
export interface RedisService {
  /** Whether Redis answered the probe; when false every suite of `describe` is skipped. */
  readonly available: boolean;
  /** The Redis URL ({@link redisUrl}). */
  readonly url: string;
  /** Host and port of {@link RedisService.url}, e.g. for `startFaultProxy({ target })`. */
  readonly target: ServiceTarget;
  /**
   * The current test's key prefix, `t:<random>:`, unique per test; every key starting with it
   * is deleted after the test.
   *
   * @throws Error outside a test (e.g. in `beforeAll`)
   */
  readonly prefix: string;
  /**
   * `prefix` followed by `parts` joined with `:`, e.g. `key('bucket', 1)` → `t:1a2b…:bucket:1`.
   *
   * @throws Error outside a test
   */
  key(...parts: Array<string | number>): string;
  /**
   * A new ioredis client (connecting at once unless `lazyConnect`). Created inside a test it is
   * disconnected after that test; created elsewhere (`beforeAll`, top level) after the file.
   * A no-op `'error'` listener is attached so expected connection errors (chaos tests) are not
   * logged as unhandled; add your own listener to observe them.
   */
  client(options?: RedisClientOptions): Redis;
  /** The file's shared client, used for cleanup and assertions. Do not disconnect it. */
  admin(): Redis;
  /**
   * Every key under `prefix`, sorted.
   *
   * @param prefix - @default the current test's {@link RedisService.prefix}
   */
  keys(prefix?: string): Promise<string[]>;
  /** `describe`, skipped when Redis is not available. */
  describe(name: string, factory: () => void | Promise<void>): void;
}

/** Options of {@link PostgresService.pool} and {@link PostgresService.client}. */
export type PostgresOverrides = PoolConfig;

/**
 * PostgreSQL for one test file, from {@link usePostgres}.
 *
 * Every member except `available`, `url`, `target` and `describe` throws when PostgreSQL is not
 * available.
 */
export interface PostgresService {
  /** Whether PostgreSQL answered the probe; when false every suite of `describe` is skipped. */
  readonly available: boolean;
  /** The database URL ({@link databaseUrl}). */
  readonly url: string;
  /** Host and port of {@link PostgresService.url}, e.g. for `startFaultProxy({ target })`. */
  readonly target: ServiceTarget;
  /**
   * The current test's schema, `t_<random>`, created before the test and dropped (CASCADE)
   * after it. Pools from {@link PostgresService.pool} have it as their `search_path`.
   *
   * @throws Error outside a test
   */
  readonly schema: string;
  /**
   * Connection settings for the current test's schema: `{ connectionString: url, options:
   * '-c search_path=<schema>', ...overrides }` (your `options`, if any, are appended). Plain
   * data, so it can be handed to worker processes.
   *
   * To go through a fault proxy pass `{ connectionString: proxy.url(pg.url) }`: in `pg` a
   * connection string wins over `host`/`port`.
   *
   * @throws Error outside a test
   */
  config(overrides?: PostgresOverrides): PoolConfig;
  /**
   * A new `pg.Pool` on the current test's schema, ended after the test (idle and checked-out
   * clients; a client still checked out 500 ms later has its socket destroyed). A no-op `'error'` listener is
   * attached so an idle client dropped by a chaos test does not crash the run.
   *
   * @throws Error outside a test
   */
  pool(overrides?: PostgresOverrides): Pool;
  /**
   * A new, not yet connected `pg.Client` on the current test's schema, ended after the test.
   * A no-op `'error'` listener is attached.
   *
   * @throws Error outside a test
   */
  client(overrides?: ClientConfig): Client;
  /** The file's shared pool (no test schema on its `search_path`), used for setup and cleanup. */
  admin(): Pool;
  /** `describe`, skipped when PostgreSQL is not available. */
  describe(name: string, factory: () => void | Promise<void>): void;
}

function unavailableError(service: string): Error {
  return new Error(
    `${service} is not available: wrap the suites of this file in ${service === 'Redis' ? 'redis' : 'pg'}.describe(...) ` +
      'or describe.skipIf(!service.available)(...)',
  );
}

function outsideTestError(member: string): Error {
  return new Error(`${member} is per test: use it inside a test or beforeEach/afterEach, not at file level`);
}

/** Whether `promise` settles within `ms` (its outcome is ignored); the timer is always cleared. */
async function settlesWithin(promise: Promise<unknown>, ms: number): Promise<boolean> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<false>((resolve) => {
    timer = setTimeout(resolve, ms, false);
  });
  const settled = promise.then(
    () => true,
    () => true,
  );
  try {
    return await Promise.race([settled, late]);
  } finally {
    clearTimeout(timer);
  }
}

/** Ends a pg client, destroying its socket if it does not close within `graceMs`. */
async function forceEndClient(client: Client | PoolClient, graceMs: number): Promise<void> {
  if (!(await settlesWithin(client.end(), graceMs))) destroySocket(client);
}

function destroySocket(client: Client | PoolClient): void {
  const internal = client as unknown as { connection?: { stream?: { destroy(): void } } };
  internal.connection?.stream?.destroy();
}

/** A pg Pool whose clients are known, so ending it can be forced. */
class TrackedPool {
  readonly clients = new Set<PoolClient>();
  constructor(readonly pool: Pool) {
    pool.on('connect', (client) => this.clients.add(client));
    pool.on('remove', (client) => this.clients.delete(client));
    pool.on('error', () => {});
  }

  /** Ends the pool (or waits for an end already under way); after `graceMs` destroys its sockets. */
  async end(graceMs: number): Promise<void> {
    if (this.pool.ended) return;
    const ended = this.pool.ending ? this.#whenEnded(graceMs + 100) : this.pool.end();
    if (await settlesWithin(ended, graceMs)) return;
    process.stderr.write(
      `[test/support] a pg pool did not end within ${graceMs} ms (a client still checked out, or a paused proxy); destroying its sockets\n`,
    );
    for (const client of this.clients) {
      // A checked-out client has no pool listener: its "terminated" error would be uncaught.
      client.on('error', () => {});
      destroySocket(client);
    }
  }

  async #whenEnded(limitMs: number): Promise<void> {
    const giveUpAt = performance.now() + limitMs;
    while (!this.pool.ended && performance.now() < giveUpAt) {
      await new Promise((resolve) => setTimeout(resolve, 10));
    }
  }
}

class RedisFixture implements RedisService {
  readonly url = redisUrl;
  readonly target = targetOf(redisUrl, 6379);
  readonly #fileClients = new Set<Redis>();
  #testClients: Set<Redis> | undefined;
  #prefix: string | undefined;
  #admin: Redis | undefined;

  constructor(readonly available: boolean) {
    if (available) this.#registerHooks();
  }

  #registerHooks(): void {
    beforeEach(() => {
      if (this.#prefix !== undefined) {
        throw new Error(
          'useRedis(): tests of this file run concurrently; its helpers need one test at a time',
        );
      }
      this.#prefix = `t:${uniqueToken()}:`;
      this.#testClients = new Set();
    });
    afterEach(async () => {
      const prefix = this.#prefix;
      const clients = this.#testClients;
      this.#prefix = undefined;
      this.#testClients = undefined;
      for (const client of clients ?? []) client.disconnect();
      if (prefix !== undefined) await deleteByPrefix(this.admin(), prefix);
    });
    afterAll(() => {
      for (const client of this.#fileClients) client.disconnect();
      this.#fileClients.clear();
      this.#admin?.disconnect();
      this.#admin = undefined;
    });
  }

  #check(): void {
    if (!this.available) throw unavailableError('Redis');
  }

  get prefix(): string {
    this.#check();
    if (this.#prefix === undefined) throw outsideTestError('redis.prefix');
    return this.#prefix;
  }

  key(...parts: Array<string | number>): string {
    return `${this.prefix}${parts.join(':')}`;
  }

  client(options: RedisClientOptions = {}): Redis {
    this.#check();
    const { url = this.url, ...rest } = options;
    const client = new Redis(url, rest);
    client.on('error', () => {});
    (this.#testClients ?? this.#fileClients).add(client);
    return client;
  }

  admin(): Redis {
    this.#check();
    if (this.#admin === undefined) {
      this.#admin = new Redis(this.url, { connectTimeout: 2_000, maxRetriesPerRequest: 2 });
      this.#admin.on('error', () => {});
    }
    return this.#admin;
  }

  keys(prefix: string = this.prefix): Promise<string[]> {
    return scanKeys(this.admin(), prefix);
  }

  describe(name: string, factory: () => void | Promise<void>): void {
    describe.skipIf(!this.available)(name, factory);
  }
}

/** Schema names are generated, but quote them anyway. */
function quoteIdent(name: string): string {
  return `"${name.replace(/"/g, '""')}"`;
}

class PostgresFixture implements PostgresService {
  readonly url = databaseUrl;
  readonly target = targetOf(databaseUrl, 5432);
  #schema: string | undefined;
  #pools: TrackedPool[] = [];
  #clients: Client[] = [];
  #admin: Pool | undefined;

  constructor(readonly available: boolean) {
    if (available) this.#registerHooks();
  }

  #registerHooks(): void {
    beforeEach(async () => {
      if (this.#schema !== undefined) {
        throw new Error(
          'usePostgres(): tests of this file run concurrently; its helpers need one test at a time',
        );
      }
      const schema = `t_${uniqueToken()}`;
      await this.admin().query(`CREATE SCHEMA ${quoteIdent(schema)}`);
      this.#schema = schema;
    });
    afterEach(async () => {
      const schema = this.#schema;
      const pools = this.#pools;
      const clients = this.#clients;
      this.#schema = undefined;
      this.#pools = [];
      this.#clients = [];
      await Promise.all([
        ...pools.map((pool) => pool.end(500)),
        ...clients.map((client) => forceEndClient(client, 500)),
      ]);
      if (schema !== undefined)
        await this.admin().query(`DROP SCHEMA IF EXISTS ${quoteIdent(schema)} CASCADE`);
    });
    afterAll(async () => {
      const admin = this.#admin;
      this.#admin = undefined;
      if (admin !== undefined) await new TrackedPool(admin).end(1_000);
    });
  }

  #check(): void {
    if (!this.available) throw unavailableError('PostgreSQL');
  }

  get schema(): string {
    this.#check();
    if (this.#schema === undefined) throw outsideTestError('pg.schema');
    return this.#schema;
  }

  config(overrides: PostgresOverrides = {}): PoolConfig {
    const searchPath = `-c search_path=${this.schema}`;
    return {
      connectionString: this.url,
      ...overrides,
      options: overrides.options ? `${searchPath} ${overrides.options}` : searchPath,
    };
  }

  pool(overrides?: PostgresOverrides): Pool {
    const pool = new pg.Pool(this.config(overrides));
    this.#pools.push(new TrackedPool(pool));
    return pool;
  }

  client(overrides?: ClientConfig): Client {
    const client = new pg.Client(this.config(overrides));
    client.on('error', () => {});
    this.#clients.push(client);
    return client;
  }

  admin(): Pool {
    this.#check();
    if (this.#admin === undefined) {
      this.#admin = new pg.Pool({
        connectionString: this.url,
        max: 2,
        connectionTimeoutMillis: 5_000,
        options: '-c lock_timeout=5000',
      });
      this.#admin.on('error', () => {});
    }
    return this.#admin;
  }

  describe(name: string, factory: () => void | Promise<void>): void {
    describe.skipIf(!this.available)(name, factory);
  }
}

/**
 * Declares that the calling test file needs Redis. Call it once, at the top level of the file,
 * and wrap the suites in `redis.describe(...)`.
 *
 * Probes {@link redisUrl} (≤ {@link probeTimeoutMs}). Reachable: registers per-test isolation
 * (a fresh {@link RedisService.prefix}, its keys deleted and the test's clients disconnected
 * after each test; file-level clients disconnected after the file). Unreachable: prints a loud
 * notice on stderr and returns a service whose `describe` skips.
 *
 * @throws Error when Redis is unreachable and {@link requireServices} is set
 * @example
 * ```ts
 * const redis = await useRedis();
 * redis.describe('lock on Redis', () => {
 *   it('locks', async () => { await redis.client().set(redis.key('lock'), 'x'); });
 * });
 * ```
 */
export async function useRedis(): Promise<RedisService> {
  const probe = await probeRedis();
  if (!probe.reachable) reportUnavailable(redisInfo, probe.reason);
  return new RedisFixture(probe.reachable);
}

/**
 * Declares that the calling test file needs PostgreSQL. Call it once, at the top level of the
 * file, and wrap the suites in `pg.describe(...)`.
 *
 * Probes {@link databaseUrl} (≤ {@link probeTimeoutMs}). Reachable: registers per-test isolation
 * (a fresh {@link PostgresService.schema} created before each test; the test's pools and clients
 * ended and the schema dropped with CASCADE after it). Unreachable: prints a loud notice on
 * stderr and returns a service whose `describe` skips.
 *
 * @throws Error when PostgreSQL is unreachable and {@link requireServices} is set
 * @example
 * ```ts
 * const pg = await usePostgres();
 * pg.describe('outbox on PostgreSQL', () => {
 *   it('migrates', async () => { await postgresStores(pg.pool(), { schema: pg.schema }).migrate(); });
 * });
 * ```
 */
export async function usePostgres(): Promise<PostgresService> {
  const probe = await probePostgres();
  if (!probe.reachable) reportUnavailable(postgresInfo, probe.reason);
  return new PostgresFixture(probe.reachable);
}
