import type { LRUCache } from 'lru-cache';
import { type Clock, systemClock } from '../core/clock.js';
import { isClock, optionKeys, optionsObject, positiveInteger } from '../core/validate.js';
import type { Algorithm } from './algorithm.js';
import { gcra } from './gcra.js';
import { blockedDecision, blockLeft, extendBlock } from './key-block.js';
import { keyMap } from './key-map.js';
import { sameRule } from './rule.js';
import { settle } from './settle.js';
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
  /** Blocked keys: when each block ends (store clock), bounded like the states. */
  readonly blocks: LRUCache<string, number>;
}

/**
 * The in-memory rate-limit store: the default of `rateLimiter()` and the reference behaviour. It
 * keeps one small state object per key in an LRU bounded by `maxKeys` per limiter name
 * (`lru-cache`), and starts no timer at all: an idle key costs memory until it is evicted, never
 * CPU. Single-process only: use `redisStores(client).rateLimit` to share limits between processes.
 *
 * It implements the whole {@link RateLimitStore} interface (promises, like every store), quota
 * control and combined limits included, and decides synchronously underneath:
 * {@link MemoryRateLimitStore.takeSync} is that decision without the promise, which
 * `limiter.takeSync()` uses. Blocks are kept beside the states, bounded by `maxKeys` too.
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
    // The hot path: no closure (settle would allocate one per call).
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

  /** Forgets `key` under `rule` (it restarts at full capacity, unblocked); resolves at once. */
  reset(key: string, rule: RateLimitRule): Promise<void> {
    const partition = this.partitions.get(rule.name);
    if (partition !== undefined) {
      partition.states.delete(key);
      partition.blocks.delete(key);
      // Stryker disable next-line ConditionalExpression: (true) dropping the hot-key shortcut for another key only costs that key one LRU lookup of the same state
      if (partition.lastKey === key) partition.lastKey = partition.lastState = undefined;
    }
    return Promise.resolve();
  }

  /** Moves `key`'s quota by `units` (see {@link RateLimitStore.adjust}); resolves at once. */
  adjust(key: string, units: number, rule: RateLimitRule): Promise<RateLimitResult> {
    return settle(() => {
      const partition = this.partitionOf(rule);
      const now = this.clock.now();
      const state = this.stateOf(partition, key, now, rule);
      partition.algorithm.adjust(state, now, units, rule);
      return this.decide(partition, key, now, 0, rule, state);
    });
  }

  /** Blocks `key` for `ms` (see {@link RateLimitStore.block}); resolves at once. */
  block(key: string, ms: number, rule: RateLimitRule): Promise<RateLimitResult> {
    return settle(() => {
      const partition = this.partitionOf(rule);
      const now = this.clock.now();
      extendBlock(partition.blocks, key, now + ms);
      return this.takeSync(key, 0, rule);
    });
  }

  /**
   * Takes `cost` from `key` under every rule or none (see {@link RateLimitStore.takeAll}), without a
   * promise: each rule is asked first, then, when all allow, each takes, at one reading of the clock.
   */
  takeAllSync(key: string, cost: number, rules: readonly RateLimitRule[]): RateLimitResult[] {
    const partitions = rules.map((rule) => this.partitionOf(rule));
    const now = this.clock.now();
    const states = partitions.map(
      (partition, i) => partition.states.peek(key) ?? partition.algorithm.create(rules[i]!, now),
    );
    const asked = partitions.map((partition, i) => {
      const left = blockLeft(partition.blocks, key, now);
      return left > 0
        ? blockedDecision(partition.algorithm, states[i]!, now, cost, rules[i]!, left)
        : partition.algorithm.take(states[i]!, now, cost, rules[i]!, false);
    });
    if (asked.every((result) => result.allowed)) {
      return partitions.map((partition, i) =>
        this.decide(partition, key, now, cost, rules[i]!, this.stateOf(partition, key, now, rules[i]!)),
      );
    }
    // Refused: nothing is taken, so a rule that would have allowed reports its state as it is.
    return asked.map((result, i) =>
      result.allowed ? partitions[i]!.algorithm.take(states[i]!, now, 0, rules[i]!) : result,
    );
  }

  /** {@link MemoryRateLimitStore.takeAllSync}, as a promise; rejects with its `TypeError`. */
  takeAll(key: string, cost: number, rules: readonly RateLimitRule[]): Promise<RateLimitResult[]> {
    return settle(() => this.takeAllSync(key, cost, rules));
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
      return this.decide(partition, key, now, 0, rule, seen);
    }
    return this.decide(partition, key, now, cost, rule, this.stateOf(partition, key, now, rule));
  }

  /** The decision on `cost` (0: a peek) of `key`, whose state is `state`, blocks included. */
  private decide(
    partition: Partition,
    key: string,
    now: number,
    cost: number,
    rule: RateLimitRule,
    state: object,
  ): RateLimitResult {
    const left = blockLeft(partition.blocks, key, now);
    if (left > 0) return blockedDecision(partition.algorithm, state, now, cost, rule, left);
    return partition.algorithm.take(state, now, cost, rule);
  }

  /** The stored state of `key` (a fresh one stored when it has none), now the most recent. */
  private stateOf(partition: Partition, key: string, now: number, rule: RateLimitRule): object {
    // Stryker disable next-line ConditionalExpression: (false) the LRU holds the same state for the last key, already the most recent, so get changes no recency
    let state = key === partition.lastKey ? partition.lastState! : partition.states.get(key);
    if (state === undefined) {
      state = partition.algorithm.create(rule, now);
      partition.states.set(key, state);
    }
    partition.lastKey = key;
    partition.lastState = state;
    return state;
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
        blocks: keyMap<number>(this.maxKeys),
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
