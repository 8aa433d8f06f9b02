import type { LRUCache } from 'lru-cache';
import { type Clock, systemClock } from '../core/clock.js';
import { isClock, optionKeys, optionsObject, positiveInteger } from '../core/validate.js';
import type { Algorithm } from './algorithm.js';
import { gcra } from './gcra.js';
import { keyMap } from './key-map.js';
import { sameRule } from './rule.js';
import { slidingWindowCounter } from './sliding-window-counter.js';
import type { RateLimitAlgorithm, RateLimitResult, RateLimitRule, RateLimitStore } from './store.js';
import { tokenBucket } from './token-bucket.js';

/** Options of {@link memoryRateLimitStore}. */
export interface MemoryRateLimitStoreOptions {
  /**
   * Most keys kept per limiter name; beyond it the least recently used key is evicted and restarts
   * at full capacity when seen again. A bound, not an allocation: memory grows with the keys actually
   * stored, so any positive integer works (`2 ** 32` included); anything else is a `TypeError`.
   * @default 10_000
   */
  readonly maxKeys?: number | undefined;
  /** The clock that decides (the store's clock is authoritative). @default systemClock */
  readonly clock?: Clock | undefined;
}

// Stryker disable next-line BooleanLiteral: optionKeys reads only the keys; each value is the type's required `true`
const memoryStoreOptionKeys = optionKeys<MemoryRateLimitStoreOptions>({ maxKeys: true, clock: true });

const algorithms: Readonly<Record<RateLimitAlgorithm, Algorithm<object>>> = {
  'token-bucket': tokenBucket,
  gcra,
  'sliding-window': slidingWindowCounter,
};

interface Partition {
  readonly rule: RateLimitRule;
  readonly algorithm: Algorithm<object>;
  readonly states: LRUCache<string, object>;
  /**
   * The key the last take stored or looked up, and its state: a hot key (a global limit is one fixed
   * key) skips the LRU lookup. Exact, not a cache that can go stale: that key is already the most
   * recently used, so skipping `get` changes no recency, and only `reset` or another key's take
   * (which may evict) move it, and both replace or clear this.
   */
  lastKey: string | undefined;
  lastState: object | undefined;
}

/**
 * The in-memory rate-limit store: the default of `rateLimiter()` and the reference behaviour. It
 * keeps one small state object per key in an LRU bounded by `maxKeys` per limiter name
 * (`lru-cache`), and starts no timer at all: an idle key costs memory until it is evicted, never
 * CPU. Single-process only: use `redisStores(client).rateLimit` to share limits between processes.
 *
 * It implements the one {@link RateLimitStore} interface (promises, like every store) and decides
 * synchronously underneath: {@link MemoryRateLimitStore.takeSync} is that decision without the
 * promise, which `limiter.takeSync()` uses.
 */
export class MemoryRateLimitStore implements RateLimitStore {
  private readonly maxKeys: number;
  private readonly clock: Clock;
  private readonly partitions = new Map<string, Partition>();
  // The last rule seen: a limiter always passes the same object, so this skips the Map lookup.
  private lastRule: RateLimitRule | undefined;
  private lastPartition: Partition | undefined;

  /** Use {@link memoryRateLimitStore}. */
  constructor(options?: MemoryRateLimitStoreOptions) {
    const o = optionsObject('memoryRateLimitStore options', options, memoryStoreOptionKeys);
    this.maxKeys = positiveInteger('maxKeys', o.maxKeys ?? 10_000);
    this.clock = o.clock === undefined ? systemClock : isClock<Clock>('clock', o.clock);
  }

  /** {@link MemoryRateLimitStore.takeSync}, as a promise; rejects with its `TypeError`. */
  take(key: string, cost: number, rule: RateLimitRule): Promise<RateLimitResult> {
    try {
      return Promise.resolve(this.takeSync(key, cost, rule));
    } catch (error) {
      return Promise.reject(error);
    }
  }

  /** `takeSync(key, 0, rule)`, as a promise. */
  peek(key: string, rule: RateLimitRule): Promise<RateLimitResult> {
    return this.take(key, 0, rule);
  }

  /** Forgets `key` under `rule` (it restarts at full capacity); resolves at once. */
  reset(key: string, rule: RateLimitRule): Promise<void> {
    const partition = this.partitions.get(rule.name);
    if (partition !== undefined) {
      partition.states.delete(key);
      // Stryker disable next-line ConditionalExpression: (true) dropping the hot-key shortcut for another key only costs that key one LRU lookup of the same state
      if (partition.lastKey === key) partition.lastKey = partition.lastState = undefined;
    }
    return Promise.resolve();
  }

  /**
   * Takes `cost` units from `key` if they are available now and returns the decision, without a
   * promise. A `cost` of 0 is a peek: it reports the state and stores nothing, not even the key's
   * recency. The limiter validates `key` and `cost`; this store trusts them. Throws a `TypeError`
   * when two limiters with the same `name` and different rules share this store.
   */
  takeSync(key: string, cost: number, rule: RateLimitRule): RateLimitResult {
    // Stryker disable next-line ConditionalExpression: (false) partitionOf finds the same partition for the last rule; this only skips the Map lookup
    const partition = rule === this.lastRule ? this.lastPartition! : this.partitionOf(rule);
    const now = this.clock.now();
    if (cost === 0) {
      // A peek does not refresh the key's recency, and does not store a fresh state.
      const seen = partition.states.peek(key) ?? partition.algorithm.create(rule, now);
      return partition.algorithm.take(seen, now, 0, rule);
    }
    // Stryker disable next-line ConditionalExpression: (false) the LRU holds the same state for the last key, already the most recent, so get changes no recency
    let state = key === partition.lastKey ? partition.lastState! : partition.states.get(key);
    if (state === undefined) {
      state = partition.algorithm.create(rule, now);
      partition.states.set(key, state);
    }
    partition.lastKey = key;
    partition.lastState = state;
    return partition.algorithm.take(state, now, cost, rule);
  }

  /** Keys held now, over every limiter name. */
  get size(): number {
    let size = 0;
    for (const partition of this.partitions.values()) size += partition.states.size;
    return size;
  }

  private partitionOf(rule: RateLimitRule): Partition {
    let partition = this.partitions.get(rule.name);
    if (partition === undefined) {
      partition = {
        rule,
        algorithm: algorithms[rule.algorithm],
        states: keyMap<object>(this.maxKeys),
        lastKey: undefined,
        lastState: undefined,
      };
      this.partitions.set(rule.name, partition);
    } else if (!sameRule(partition.rule, rule)) {
      throw new TypeError(
        `two limiters named "${rule.name}" with different rules share one store: give each a distinct "name"`,
      );
    }
    this.lastRule = rule;
    this.lastPartition = partition;
    return partition;
  }
}

/**
 * Creates an in-memory rate-limit store. `rateLimiter()` creates one for itself when given no
 * `store`; create one explicitly only to share it between limiters (with distinct names) or to give
 * it its own clock. Throws a `TypeError` for a bad `maxKeys` or `clock`.
 *
 * @example
 * const store = memoryRateLimitStore({ maxKeys: 50_000 });
 * const perIp = rateLimiter({ name: 'ip', limit: 100, periodMs: 60_000, store });
 * const perUser = rateLimiter({ name: 'user', limit: 1_000, periodMs: 60_000, store });
 */
export function memoryRateLimitStore(options?: MemoryRateLimitStoreOptions): MemoryRateLimitStore {
  return new MemoryRateLimitStore(options);
}
