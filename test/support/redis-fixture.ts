/**
 * The Redis fixture: {@link useRedis}, per-test key prefixes and clients, and the SCAN-based
 * {@link scanKeys} / {@link deleteByPrefix}.
 */
import { Redis, type RedisOptions } from 'ioredis';
import { afterAll, afterEach, beforeEach, describe } from 'vitest';
import {
  outsideTestError,
  probeRedis,
  probeTimeoutMs,
  redisInfo,
  redisUrl,
  reportUnavailable,
  requireServices,
  type ServiceTarget,
  targetOf,
  unavailableError,
  uniqueToken,
} from './service-env.js';

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
