import type { LRUCache } from 'lru-cache';
import { type Clock, systemClock } from '../../core/clock.js';
import { isClock, optionKeys, optionsObject, positiveInteger } from '../../core/validate.js';
import type { Algorithm } from '../../rate-limit/algorithm.js';
import { gcra } from '../../rate-limit/gcra.js';
import { keyMap } from '../../rate-limit/key-map.js';
import { sameRule } from '../../rate-limit/rule.js';
import { slidingWindowCounter } from '../../rate-limit/sliding-window-counter.js';
import type {
  RateLimitAlgorithm,
  RateLimitResult,
  RateLimitRule,
  SyncRateLimitStore,
} from '../../rate-limit/store.js';
import { tokenBucket } from '../../rate-limit/token-bucket.js';

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
}

/**
 * The in-memory rate-limit store: the default of `rateLimiter()` and the reference behaviour. It
 * answers synchronously (`synchronous: true`), keeps one small state object per key in an LRU
 * bounded by `maxKeys` per limiter name (`lru-cache`), and starts no timer at all: an idle key costs
 * memory until it is evicted, never CPU. Single-process only: use `redisStores(client).rateLimit` to
 * share limits between processes.
 */
export class MemoryRateLimitStore implements SyncRateLimitStore {
  readonly synchronous = true as const;
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

  take(key: string, cost: number, rule: RateLimitRule): RateLimitResult {
    const partition = rule === this.lastRule ? this.lastPartition! : this.partitionOf(rule);
    const now = this.clock.now();
    let state = partition.states.get(key);
    if (state === undefined) {
      state = partition.algorithm.create(rule, now);
      partition.states.set(key, state);
    }
    return partition.algorithm.take(state, now, cost, rule);
  }

  peek(key: string, rule: RateLimitRule): RateLimitResult {
    const partition = rule === this.lastRule ? this.lastPartition! : this.partitionOf(rule);
    const now = this.clock.now();
    // A peek does not refresh the key's recency, and does not store a fresh state.
    const state = partition.states.peek(key) ?? partition.algorithm.create(rule, now);
    return partition.algorithm.take(state, now, 0, rule);
  }

  reset(key: string, rule: RateLimitRule): void {
    this.partitions.get(rule.name)?.states.delete(key);
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
