/**
 * `bulwark/redis`: Redis-backed stores for the distributed patterns, on an ioredis client or
 * cluster. Every store call has its own deadline (`timeoutMs`, default 100 ms), so a dead or
 * paused Redis costs at most that and fails with `StoreUnavailableError`. Also the outbox relay's
 * Redis Streams publisher, `redisStreamPublisher`.
 */
import type { Cluster, Redis } from 'ioredis';
import { type Clock, systemClock } from '../../core/clock.js';
import { isClock, optionKeys, optionsObject, positive, show } from '../../core/validate.js';
import { type CacheRedisClient, RedisCacheLayer } from './cache-layer.js';
import { DEFAULT_STORE_TIMEOUT_MS, StoreDeadline } from './deadline.js';
import { type FenceRedisClient, RedisFenceStore } from './fence.js';
import { type IdempotencyRedisClient, RedisIdempotencyStore } from './idempotency.js';
import { type LockRedisClient, RedisLockStore } from './lock.js';
import { type RateLimitRedisClient, RedisRateLimitStore } from './rate-limit.js';
import { RedisWakeups, type WakeupClient } from './wakeups.js';

export type { RedisCacheLayer } from './cache-layer.js';
export type { FencedValue, RedisFenceStore } from './fence.js';
export type { RedisIdempotencyStore } from './idempotency.js';
export type { RedisLockStore } from './lock.js';
export type { RedisRateLimitStore } from './rate-limit.js';
export { type RedisStreamPublisherOptions, redisStreamPublisher } from './stream-publisher.js';

/** Options of {@link redisStores}. */
export interface RedisStoresOptions {
  /**
   * Prepended to every key the stores write (after the client's own `keyPrefix`, if any).
   * @default 'bulwark:'
   */
  readonly prefix?: string | undefined;
  /**
   * Deadline of each store call in milliseconds: past it the call fails with
   * `StoreUnavailableError`, whatever ioredis is still doing with the command.
   * @default 100
   */
  readonly timeoutMs?: number | undefined;
  /** Clock of the deadline timers (decisions use the server's `TIME`). @default systemClock */
  readonly clock?: Clock | undefined;
}

const redisStoresOptionKeys = optionKeys<RedisStoresOptions>({ prefix: true, timeoutMs: true, clock: true });

/** The Redis stores of one client. Each is created on first access. */
export interface RedisStores {
  /** The rate-limit store: pass it as `rateLimiter({ store })`. */
  readonly rateLimit: RedisRateLimitStore;
  /**
   * The idempotency store: pass it as `idempotency({ store })`. Its `watch` opens one subscriber
   * connection (`client.duplicate()`) on first use.
   */
  readonly idempotency: RedisIdempotencyStore;
  /**
   * The lock store: pass it as `distributedLock({ store })`. Its `watch` (used while waiting for a
   * held lock) shares the store set's one subscriber connection with the idempotency store.
   */
  readonly lock: RedisLockStore;
  /**
   * The fence store, where a lock's fence is checked at the resource: `write(resource, fence,
   * value)` refuses a stale fence (`StaleFenceError`) and writes the value in the same script.
   */
  readonly fence: RedisFenceStore;
  /**
   * The remote cache layer (L2) of a read-through cache: pass it in `readThroughCache({ layers })`
   * after the memory layer. Entries, namespace versions and load claims live on `client` (one round
   * trip per call); its `subscribe` shares the store set's one subscriber connection with the
   * idempotency and lock stores' `watch`.
   */
  readonly cacheLayer: RedisCacheLayer;
  /**
   * Closes the connections these stores opened themselves (the one subscriber connection of the
   * idempotency and lock stores' `watch` and the cache layer's `subscribe`, if any), never `client`:
   * disconnect that yourself. The stores' calls go on working on `client`; watches and
   * subscriptions made after `close()` are never called. Idempotent; resolves once closed.
   */
  close(): Promise<void>;
}

/**
 * Redis-backed stores for every pattern that has one, sharing `client` (an ioredis `Redis` or
 * `Cluster`). Keys are `<prefix><pattern>:...:{<hash tag>}`; each decision touches keys of one hash
 * tag only, so Redis Cluster works. Throws a `TypeError` for a bad client or option.
 *
 * Use a client with `enableOfflineQueue` left on or off as you like: while the connection is down
 * (`reconnecting`) store calls fail at once instead of queueing, and any call fails after
 * `timeoutMs`.
 *
 * @example
 * import { Redis } from 'ioredis';
 * import { redisStores } from 'bulwark/redis';
 * const stores = redisStores(new Redis(process.env.REDIS_URL), { prefix: 'shop:' });
 * const limiter = rateLimiter({ limit: 100, periodMs: 60_000, store: stores.rateLimit });
 * const payments = idempotency({ store: stores.idempotency, leaseMs: 10_000, ttlMs: 86_400_000 });
 * const locks = distributedLock({ store: stores.lock });
 * await locks.withLock('account:42', ({ fence }) => stores.fence.write('account:42', fence, '100'));
 * const cache = readThroughCache({ layers: [memoryLayer({ maxEntries: 10_000 }), stores.cacheLayer], ttlMs: 60_000 });
 * // at shutdown, before client.disconnect():
 * await stores.close();
 */
export function redisStores(client: Redis | Cluster, options?: RedisStoresOptions): RedisStores {
  const c = client as unknown as Partial<RateLimitRedisClient> | null;
  if (
    c === null ||
    typeof c !== 'object' ||
    typeof c.evalsha !== 'function' ||
    typeof c.eval !== 'function'
  ) {
    throw new TypeError(`expected "client" to be an ioredis Redis or Cluster client, got ${show(client)}`);
  }
  const o = optionsObject('redisStores options', options, redisStoresOptionKeys);
  const prefix = o.prefix ?? 'bulwark:';
  if (typeof prefix !== 'string')
    throw new TypeError(`expected "prefix" to be a string, got ${show(prefix)}`);
  const timeoutMs = positive('timeoutMs', o.timeoutMs ?? DEFAULT_STORE_TIMEOUT_MS);
  const clock = o.clock === undefined ? systemClock : isClock<Clock>('clock', o.clock);
  const deadline = new StoreDeadline(clock, timeoutMs, 'Redis');
  const redis = client as unknown as RateLimitRedisClient;
  // One subscriber connection for every store's watch and the cache layer's subscribe, opened by
  // the first of them.
  const wakeups = new RedisWakeups(client as unknown as WakeupClient);
  let rateLimit: RedisRateLimitStore | undefined;
  let idempotency: RedisIdempotencyStore | undefined;
  let lock: RedisLockStore | undefined;
  let fence: RedisFenceStore | undefined;
  let cacheLayer: RedisCacheLayer | undefined;
  return {
    get rateLimit() {
      rateLimit ??= new RedisRateLimitStore(redis, prefix, deadline);
      return rateLimit;
    },
    get idempotency() {
      idempotency ??= new RedisIdempotencyStore(
        client as unknown as IdempotencyRedisClient,
        prefix,
        deadline,
        wakeups,
      );
      return idempotency;
    },
    get lock() {
      lock ??= new RedisLockStore(client as unknown as LockRedisClient, prefix, deadline, wakeups);
      return lock;
    },
    get fence() {
      fence ??= new RedisFenceStore(client as unknown as FenceRedisClient, prefix, deadline);
      return fence;
    },
    get cacheLayer() {
      cacheLayer ??= new RedisCacheLayer(client as unknown as CacheRedisClient, prefix, deadline, wakeups);
      return cacheLayer;
    },
    close() {
      wakeups.close();
      return Promise.resolve();
    },
  };
}
