import type { Clock } from '../core/clock.js';
import { type Disposer, type Listener, Listeners } from '../core/events.js';
import type { Policy } from '../core/policy.js';
import { nonNegative, optionsObject, show, storeKey } from '../core/validate.js';
import { type Decider, MemoryDecider } from './decider.js';
import type { RateLimitRejectedEvent, RateLimitStoreErrorEvent } from './events.js';
import { MemoryRateLimitStore } from './memory-store.js';
import {
  type RateLimiterOptions,
  type RateLimitWaitOptions,
  rateLimitPolicyOptionKeys,
  readRateLimiterOptions,
  waitOptionKeys,
} from './options.js';
import { RateLimitPolicy, type RateLimitPolicyOptions } from './rate-limit-policy.js';
import { RemoteDecider } from './remote-decider.js';
import { localRuleOf, ruleFrom } from './rule.js';
import type { RateLimitResult, RateLimitRule, RateLimitStore } from './store.js';
import { WaitQueue } from './wait-queue.js';

/**
 * A rate limiter: `limit` units per `periodMs` per key, decided by its store. `take`, `peek`,
 * `reset` and `wait` answer with promises whatever the store; `takeSync` is the in-memory store's
 * synchronous fast path.
 */
export class RateLimiter {
  /** The validated rule. */
  readonly rule: RateLimitRule;
  /** The store deciding. */
  readonly store: RateLimitStore;
  private readonly clock: Clock;
  private readonly decider: Decider;
  /** The decider when the store is the in-memory one: what `takeSync` runs on. */
  private readonly memory: MemoryDecider | undefined;
  private readonly defaultMaxWaitMs: number;
  private readonly rejected = new Listeners<RateLimitRejectedEvent>();
  private readonly storeErrors = new Listeners<RateLimitStoreErrorEvent>();
  private waiters: WaitQueue | undefined;

  /** Use {@link rateLimiter}. */
  constructor(options: RateLimiterOptions) {
    const o = readRateLimiterOptions(options);
    this.rule = ruleFrom(o);
    const { maxKeys, instances, storeFailure: mode } = o;
    this.clock = o.clock;
    this.store = o.store ?? new MemoryRateLimitStore({ maxKeys, clock: this.clock });
    if (this.store instanceof MemoryRateLimitStore) {
      this.memory = new MemoryDecider(this.store, this.rule, this.rejected);
      this.decider = this.memory;
    } else {
      this.memory = undefined;
      this.decider = new RemoteDecider({
        store: this.store,
        rule: this.rule,
        localRule: localRuleOf(this.rule, instances),
        mode,
        maxKeys,
        clock: this.clock,
        rejected: this.rejected,
        storeErrors: this.storeErrors,
      });
    }
    const { limit, periodMs, burst, buckets, algorithm } = this.rule;
    this.defaultMaxWaitMs =
      algorithm === 'sliding-window' ? periodMs + periodMs / buckets : (burst * periodMs) / limit;
  }

  /**
   * Takes `cost` units from `key` if they are available now, and resolves with the decision: a
   * refusal is a result (`allowed: false` with `retryAfterMs`), not an error. A promise whatever the
   * store, so code written against the in-memory store keeps working on Redis. With the in-memory
   * store the promise is already settled (no round trip); with a remote store a key it just saw
   * refused is answered from local memory without a round trip, and a store failure follows
   * `storeFailure`.
   *
   * Rejects (never throws) with a `TypeError` for an empty or non-string `key`, a key that is not
   * well-formed UTF-16 (a lone surrogate: refused on every store alike), or a `cost` that is not a
   * positive integer or exceeds `burst` (it could never be allowed).
   *
   * @example
   * const { allowed, retryAfterMs } = await limiter.take(`user:${id}`);
   * if (!allowed) return reply.code(429).header('retry-after', Math.ceil(retryAfterMs / 1000)).send();
   */
  take(key: string, cost = 1): Promise<RateLimitResult> {
    // One try for the checks and the decider (which may throw): callers only ever see a rejection.
    try {
      storeKey('key', key);
      // Stryker disable next-line ConditionalExpression: (true) checkCost(1) always passes (burst ≥ 1); the guard only skips the check for the common cost
      if (cost !== 1) this.checkCost(cost);
      return this.decider.take(key, cost);
    } catch (error) {
      return Promise.reject(error);
    }
  }

  /**
   * {@link RateLimiter.take} without the promise, for hot paths on the in-memory store (the
   * default): the same decision, returned synchronously. Throws a `TypeError` for a bad `key` or
   * `cost` (as `take` rejects), and on any other store: a remote store cannot answer synchronously,
   * so use `await limiter.take()` there.
   *
   * @example
   * const { allowed } = limiter.takeSync(`ip:${ip}`);
   */
  takeSync(key: string, cost = 1): RateLimitResult {
    const memory = this.memory;
    if (memory === undefined) {
      throw new TypeError(
        'takeSync needs the in-memory store: this limiter has another store, which cannot answer ' +
          'synchronously; use await limiter.take(key, cost)',
      );
    }
    storeKey('key', key);
    // Stryker disable next-line ConditionalExpression: (true) checkCost(1) always passes (burst ≥ 1); the guard only skips the check for the common cost
    if (cost !== 1) this.checkCost(cost);
    return memory.takeSync(key, cost);
  }

  /**
   * The state of `key` now, taking nothing: `remaining`, `resetMs` and `limit` (`allowed` is true).
   * Store failures follow `storeFailure` like `take`; a bad `key` rejects with a `TypeError`.
   */
  peek(key: string): Promise<RateLimitResult> {
    return badKeyRejection(key) ?? this.decider.peek(key);
  }

  /**
   * Waits until `cost` units can be taken from `key`, takes them and resolves with the decision.
   * Waiters of one key are served in arrival order, and only the first asks the store (once per
   * refill, not once per waiter). Rejects with a `RateLimitedError` as soon as its turn is known to be
   * later than `maxWaitMs` (so it never sleeps in vain: `maxWaitMs: 0` behind a waiting head is
   * refused at once), with `signal.reason` on abort (the sleep ends at once, no timer or listener
   * left; waits sharing a signal share one listener), and with the `StoreUnavailableError` under
   * `fail-closed`.
   *
   * @example
   * await limiter.wait('partner-api', { signal, maxWaitMs: 5_000 });
   * await callPartner();
   */
  wait(key: string, options?: RateLimitWaitOptions): Promise<RateLimitResult> {
    let cost: number;
    let maxWaitMs: number;
    let signal: AbortSignal | undefined;
    try {
      storeKey('key', key);
      const o = optionsObject('wait options', options, waitOptionKeys);
      cost = o.cost ?? 1;
      // Stryker disable next-line ConditionalExpression: (true) checkCost(1) always passes (burst ≥ 1); the guard only skips the check for the common cost
      if (cost !== 1) this.checkCost(cost);
      maxWaitMs =
        o.maxWaitMs === undefined ? this.defaultMaxWaitMs : nonNegative('maxWaitMs', o.maxWaitMs, true);
      signal = o.signal;
      if (signal !== undefined && !(signal instanceof AbortSignal)) {
        throw new TypeError(`expected "signal" to be an AbortSignal, got ${show(signal)}`);
      }
    } catch (error) {
      return Promise.reject(error);
    }
    // On the in-memory store the queue's head decides synchronously, as it always did.
    const memory = this.memory;
    this.waiters ??= new WaitQueue(
      memory === undefined ? (k, c) => this.decider.take(k, c) : (k, c) => memory.takeSync(k, c),
      this.clock,
      this.rule,
    );
    return this.waiters.wait(key, cost, maxWaitMs, signal);
  }

  /**
   * A {@link Policy} that takes `cost` units from `key` before each call: the call runs when
   * allowed; when refused it fails with a `RateLimitedError` (kind `rate_limited`, `retryAfterMs`)
   * without running, or with `wait: true` it first waits (within `maxWaitMs` and the call's deadline,
   * aborted by the call's signal). A store failure under `fail-closed` fails the call with the
   * `StoreUnavailableError` (kind `unavailable`), never a `RateLimitedError`.
   *
   * @example
   * const partner = pipeline(timeout(2_000), limiter.policy('partner-api', { wait: true }), retry());
   */
  policy(key: string, options?: RateLimitPolicyOptions): RateLimitPolicy {
    storeKey('key', key);
    const o = optionsObject('policy options', options, rateLimitPolicyOptionKeys);
    const cost = o.cost ?? 1;
    // Stryker disable next-line ConditionalExpression: (true) checkCost(1) always passes (burst ≥ 1); the guard only skips the check for the common cost
    if (cost !== 1) this.checkCost(cost);
    const maxWaitMs = o.maxWaitMs === undefined ? undefined : nonNegative('maxWaitMs', o.maxWaitMs, true);
    if (o.wait !== undefined && typeof o.wait !== 'boolean') {
      throw new TypeError(`expected "wait" to be a boolean, got ${show(o.wait)}`);
    }
    return new RateLimitPolicy(this, this.clock, key, cost, o.wait === true, maxWaitMs, o);
  }

  /**
   * Forgets `key` in the store (it restarts at full capacity) and in local memory. Rejects with a
   * `StoreUnavailableError` when the store fails (`storeFailure` does not apply), and with a
   * `TypeError` for a bad `key`.
   */
  reset(key: string): Promise<void> {
    return badKeyRejection(key) ?? this.decider.reset(key);
  }

  /** Subscribes to refusals; returns a disposer. */
  onRejected(listener: Listener<RateLimitRejectedEvent>): Disposer {
    return this.rejected.add(listener);
  }

  /** Subscribes to store failures; returns a disposer. */
  onStoreError(listener: Listener<RateLimitStoreErrorEvent>): Disposer {
    return this.storeErrors.add(listener);
  }

  private checkCost(cost: number): void {
    // Stryker disable next-line EqualityOperator: (cost <= 1) no caller passes cost 1 here (each skips the check for it), so 1 is never refused
    if (!Number.isInteger(cost) || cost < 1) {
      throw new TypeError(`expected "cost" to be a positive integer, got ${show(cost)}`);
    }
    if (cost > this.rule.burst) {
      throw new TypeError(
        `expected "cost" to be at most "burst" (${this.rule.burst}): a larger cost could never be allowed, got ${cost}`,
      );
    }
  }
}

/** The `TypeError` of a bad `key` as a rejected promise; undefined for a good key. */
function badKeyRejection(key: string): Promise<never> | undefined {
  try {
    storeKey('key', key);
    return undefined;
  } catch (error) {
    return Promise.reject(error);
  }
}

/**
 * Creates a rate limiter: `limit` units per `periodMs` on average per key, at most `burst` at once.
 * One option shape for every algorithm (`gcra` by default; `token-bucket` decides the same;
 * `sliding-window` is a strict quota per window). A global limit is one fixed key.
 *
 * With no `store` the limiter keeps state in memory (bounded by `maxKeys`, LRU, no timer per key),
 * and `takeSync()` gives its decisions without a promise. With `redisStores(client).rateLimit` every
 * process shares the limit and `storeFailure` decides what a Redis failure means. `take()` returns
 * a promise either way.
 *
 * Throws a `TypeError` naming the option for: `limit`/`burst` not positive integers, `periodMs` not a
 * positive finite number, `burst` × `periodMs` above 2^53 − 1, `burst` ≠ `limit` or `buckets` outside 1–1000
 * for `sliding-window`, `buckets` for another algorithm, an unknown `algorithm` or `storeFailure`, a
 * bad `name`, `maxKeys`, `instances`, `clock` or `store`, an unknown option.
 *
 * @example
 * const perUser = rateLimiter({ limit: 100, periodMs: 60_000, burst: 20 });
 * const r = await perUser.take(userId);    // { allowed, remaining, retryAfterMs, resetMs, limit }
 * const fast = perUser.takeSync(userId);   // the same, without a promise (in-memory store only)
 *
 * const shared = rateLimiter({
 *   limit: 1_000, periodMs: 60_000,
 *   store: redisStores(redis).rateLimit,
 *   storeFailure: 'local', instances: 4,
 * });
 * const decision = await shared.take(`tenant:${tenantId}`);
 */
export function rateLimiter(options: RateLimiterOptions): RateLimiter {
  return new RateLimiter(options);
}
