import type { Clock } from '../core/clock.js';
import { type Disposer, type Listener, Listeners } from '../core/events.js';
import type { Policy } from '../core/policy.js';
import { storeKey } from '../core/validate.js';
import { CombinedRateLimiter } from './combined.js';
import { type Decider, MemoryDecider } from './decider.js';
import type { RateLimitRejectedEvent, RateLimitStoreErrorEvent } from './events.js';
import { MemoryRateLimitStore } from './memory-store.js';
import {
  blockMs,
  costOf,
  quotaUnits,
  type RateLimiterOptions,
  type RateLimitWaitOptions,
  readPolicyOptions,
  readRateLimiterOptions,
  readWaitOptions,
} from './options.js';
import { RateLimitPolicy, type RateLimitPolicyOptions } from './rate-limit-policy.js';
import { RemoteDecider } from './remote-decider.js';
import { localRuleOf, ruleFrom } from './rule.js';
import { settle } from './settle.js';
import type { RateLimitResult, RateLimitRule, RateLimitStore } from './store.js';
import { WaitQueue } from './wait-queue.js';
import { longestWaitMs } from './wait-turn.js';

/**
 * A rate limiter: `limit` units per `periodMs` per key, decided by its store. `take`, `peek`, `wait`
 * and the quota controls (`penalty`, `reward`, `block`, `reset`) answer with promises whatever the
 * store; `takeSync` is the in-memory store's synchronous fast path.
 */
export class RateLimiter {
  /** The validated rule. */
  readonly rule: RateLimitRule;
  /** The store deciding. */
  readonly store: RateLimitStore;
  /** @internal The clock it decides, waits and times out on (`rateLimiter.all()` waits on it too). */
  readonly clock: Clock;
  /** @internal How this limiter reaches its store (`rateLimiter.all()` combines limiters through it). */
  readonly decider: Decider;
  /** The decider when the store is the in-memory one: what `takeSync` runs on. */
  private readonly memory: MemoryDecider | undefined;
  private readonly defaultMaxWaitMs: number;
  /** @internal Most waiters queued on one key (`rateLimiter.all()` takes the smallest of its limiters'). */
  readonly maxQueue: number;
  private readonly rejected = new Listeners<RateLimitRejectedEvent>();
  private readonly storeErrors = new Listeners<RateLimitStoreErrorEvent>();
  private waiters: WaitQueue | undefined;

  /** Use {@link rateLimiter}. */
  constructor(options: RateLimiterOptions) {
    const o = readRateLimiterOptions(options);
    this.rule = ruleFrom(o);
    const { maxKeys, instances, storeFailure: mode } = o;
    this.clock = o.clock;
    this.maxQueue = o.maxQueue;
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
    this.defaultMaxWaitMs = longestWaitMs([this.rule]);
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
      if (cost !== 1) costOf(cost, this.rule.burst);
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
    if (cost !== 1) costOf(cost, this.rule.burst);
    return memory.takeSync(key, cost);
  }

  /**
   * The state of `key` now, taking nothing: `remaining`, `resetMs` and `limit` (`allowed` is true).
   * Store failures follow `storeFailure` like `take`; a bad `key` rejects with a `TypeError`.
   */
  peek(key: string): Promise<RateLimitResult> {
    return settle(() => this.decider.peek(storeKey('key', key)));
  }

  /**
   * Waits until `cost` units can be taken from `key`, takes them and resolves with the decision.
   * Waiters of one key are served in arrival order, and only the first asks the store (once per
   * refill, not once per waiter). Rejects with a `RateLimitedError` as soon as its turn is known to be
   * later than `maxWaitMs` (so it never sleeps in vain: `maxWaitMs: 0` behind a waiting head is
   * refused at once) or `maxQueue` callers already wait for `key` (`reason` `queue-full`), with
   * `signal.reason` on abort (the sleep ends at once, no timer or listener
   * left; waits sharing a signal share one listener), and with the `StoreUnavailableError` under
   * `fail-closed`.
   *
   * @example
   * await limiter.wait('partner-api', { signal, maxWaitMs: 5_000 });
   * await callPartner();
   */
  wait(key: string, options?: RateLimitWaitOptions): Promise<RateLimitResult> {
    return settle(() => {
      storeKey('key', key);
      const o = readWaitOptions(options, this.rule.burst);
      // On the in-memory store the queue's head decides synchronously, as it always did.
      const memory = this.memory;
      this.waiters ??= new WaitQueue(
        memory === undefined ? (k, c) => this.decider.take(k, c) : (k, c) => memory.takeSync(k, c),
        this.clock,
        [this.rule],
        this.maxQueue,
      );
      return this.waiters.wait(key, o.cost, o.maxWaitMs ?? this.defaultMaxWaitMs, o.signal);
    });
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
    const o = readPolicyOptions(options, this.rule.burst);
    // A named limiter names its policies (their events and telemetry) unless they are named.
    const named = o.name === undefined && this.rule.name !== 'default' ? { ...o, name: this.rule.name } : o;
    return new RateLimitPolicy(this, this.clock, key, o.cost, o.wait, o.maxWaitMs, named);
  }

  /**
   * Forgets `key` in the store (it restarts at full capacity, and a block on it is lifted: this is
   * rate-limiter-flexible's `delete`) and in local memory. Rejects with a `StoreUnavailableError`
   * when the store fails (`storeFailure` does not apply), and with a `TypeError` for a bad `key`.
   */
  reset(key: string): Promise<void> {
    return settle(() => this.decider.reset(storeKey('key', key)));
  }

  /**
   * Consumes `units` more of `key`'s quota, as if taken, without a request (rate-limiter-flexible's
   * `penalty`): a failed login costing five attempts, an abusive request costing more. Clamped: it
   * never takes the key below empty (`remaining` 0), so a penalty cannot push a client into debt.
   * Atomic on the store (one script call on Redis). Resolves with the key's state after, as `peek`
   * reports it.
   *
   * Rejects with a `TypeError` for a bad `key`, for `units` that is not a positive integer up to
   * 2^53 − 1 (NaN, 0, negative, fractional), or when the store has no `adjust`; with the
   * `StoreUnavailableError` when the store fails, whatever `storeFailure` says.
   *
   * @example
   * if (!passwordMatches) await logins.penalty(`user:${user}`, 4); // a failure costs 5 with the take
   */
  penalty(key: string, units = 1): Promise<RateLimitResult> {
    return settle(() => this.decider.adjust(storeKey('key', key), quotaUnits(units)));
  }

  /**
   * Gives `units` back to `key` (rate-limiter-flexible's `reward`): a request that turned out to
   * cost nothing, a cache hit. Clamped: it never fills the key above full capacity (`remaining`
   * `burst`), so saved-up rewards cannot grow a burst. Atomic like `penalty`, and fails the same way.
   * Resolves with the key's state after.
   *
   * @example
   * const decision = await perUser.take(userId, 10);
   * if (decision.allowed && servedFromCache) await perUser.reward(userId, 9);
   */
  reward(key: string, units = 1): Promise<RateLimitResult> {
    return settle(() => this.decider.adjust(storeKey('key', key), -quotaUnits(units)));
  }

  /**
   * Refuses every take of `key` for `ms` milliseconds from now on the store's clock, whatever its
   * quota (rate-limiter-flexible's `block`): on Redis the block is in the shared state, so every
   * process refuses it. Refusals say `remaining` 0 and the longer of the block's rest and the wait the
   * quota itself needs as `retryAfterMs`; the quota underneath keeps refilling. A block never
   * shortens one already longer; `reset(key)` lifts it. Resolves with the key's state after.
   *
   * Rejects with a `TypeError` for a bad `key`, for `ms` that is not a positive finite number up to
   * 1e12 (about 31.7 years), or when the store has no `block`; with the `StoreUnavailableError` when
   * the store fails.
   *
   * @example
   * if (failedLogins >= 10) await logins.block(`ip:${ip}`, 15 * 60_000);
   */
  block(key: string, ms: number): Promise<RateLimitResult> {
    return settle(() => this.decider.block(storeKey('key', key), blockMs(ms)));
  }

  /** Subscribes to refusals; returns a disposer. */
  onRejected(listener: Listener<RateLimitRejectedEvent>): Disposer {
    return this.rejected.add(listener);
  }

  /** Subscribes to store failures; returns a disposer. */
  onStoreError(listener: Listener<RateLimitStoreErrorEvent>): Disposer {
    return this.storeErrors.add(listener);
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
 * bad `name`, `maxKeys`, `instances`, `maxQueue`, `clock` or `store`, an unknown option.
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

/**
 * Combines limiters of one store into one decision per take: `take(key, cost)` takes `cost` from
 * `key` under every limiter, or under none when any refuses (atomic on the store: one script call
 * on Redis, the keys sharing the user key as their hash tag, so one Redis Cluster slot). The way to
 * say "10 per second and 1 000 per hour" without a refusal by one spending a unit of the other
 * (rate-limiter-flexible's `RateLimiterUnion` consumes from every limiter whatever the outcome).
 *
 * Throws a `TypeError` for anything but an array of 1 to 16 limiters from `rateLimiter()`, for
 * limiters with different stores or the same `name`, or a store without `takeAll`.
 *
 * The combined limiter also waits (`wait`, `policy(key, { wait: true })`), answers synchronously on
 * the in-memory store (`takeSync`) and goes wherever a limiter goes in the HTTP adapters, which then
 * state every limit in `RateLimit-Policy` and the binding one in `RateLimit`.
 *
 * @example
 * const store = memoryRateLimitStore();
 * const perSecond = rateLimiter({ name: 'second', limit: 10, periodMs: 1_000, store });
 * const perHour = rateLimiter({ name: 'hour', limit: 1_000, periodMs: 3_600_000, store });
 * const api = rateLimiter.all([perSecond, perHour]);
 * const { allowed, retryAfterMs } = await api.take(`user:${userId}`);
 */
rateLimiter.all = (limiters: readonly RateLimiter[]): CombinedRateLimiter =>
  new CombinedRateLimiter(limiters);
