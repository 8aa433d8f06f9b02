/**
 * Several limits on one key, decided as one (`rateLimiter.all([perSecond, perHour])`): a take is
 * admitted only when every limit admits it, and a refusal by any of them takes nothing from the
 * others. The store decides atomically (`RateLimitStore.takeAll`: one script call on Redis); each
 * limiter keeps its own name, rule, events and `storeFailure` mode. Waiting (`wait`, `policy` with
 * `wait: true`) queues per key as one limiter's `wait` does, its turn estimated under every limit.
 */
import type { Clock } from '../core/clock.js';
import { show, storeKey } from '../core/validate.js';
import { type CombinedRateLimitResult, combine } from './combined-result.js';
import type { Decider } from './decider.js';
import { MemoryRateLimitStore } from './memory-store.js';
import { costOf, type RateLimitWaitOptions, readPolicyOptions, readWaitOptions } from './options.js';
import { RateLimitPolicy, type RateLimitPolicyOptions } from './rate-limit-policy.js';
import type { RateLimiter } from './rate-limiter.js';
import { settle } from './settle.js';
import type { RateLimitResult, RateLimitRule, RateLimitStore } from './store.js';
import { WaitQueue } from './wait-queue.js';
import { longestWaitMs } from './wait-turn.js';

/** Most limiters one combined limiter decides over (one script call touches one key per limiter). */
export const MAX_COMBINED_LIMITERS = 16;

type TakeAll = NonNullable<RateLimitStore['takeAll']>;

/**
 * Limiters combined by `rateLimiter.all()`: `take(key, cost)` takes `cost` from `key` under every
 * limiter or under none; `takeSync`, `peek`, `wait`, `policy` and `reset` as one limiter's. Build
 * it with `rateLimiter.all(limiters)`.
 */
export class CombinedRateLimiter {
  /** The limiters combined, in the order given. */
  readonly limiters: readonly RateLimiter[];
  /** Their rules, in the same order (HTTP adapters state each in `RateLimit-Policy`). */
  readonly rules: readonly RateLimitRule[];
  private readonly deciders: readonly Decider[];
  private readonly store: RateLimitStore;
  private readonly takeAll: TakeAll;
  /** The smallest burst: a larger cost could never be allowed. */
  private readonly burst: number;
  /** The first limiter's clock: what waits sleep and time out on. */
  private readonly clock: Clock;
  private readonly maxQueue: number;
  private readonly defaultMaxWaitMs: number;
  private waiters: WaitQueue | undefined;

  /** Use `rateLimiter.all(limiters)`. */
  constructor(limiters: readonly RateLimiter[]) {
    if (!Array.isArray(limiters) || limiters.length === 0 || limiters.length > MAX_COMBINED_LIMITERS) {
      throw new TypeError(
        `expected "limiters" to be an array of 1 to ${MAX_COMBINED_LIMITERS} rate limiters, got ${show(limiters)}`,
      );
    }
    const names = new Set<string>();
    for (const limiter of limiters as readonly Partial<RateLimiter>[]) {
      if (typeof limiter?.decider?.take !== 'function' || typeof limiter.rule?.name !== 'string') {
        throw new TypeError(
          `expected "limiters" to hold rate limiters from rateLimiter(), got ${show(limiter)}`,
        );
      }
      if (limiter.store !== limiters[0]!.store) {
        throw new TypeError(
          'expected "limiters" to share one store (a decision over several cannot be atomic): create one, ' +
            'memoryRateLimitStore() or redisStores(client).rateLimit, and give it to each limiter',
        );
      }
      if (names.has(limiter.rule.name)) {
        throw new TypeError(
          `expected "limiters" to have distinct names, got "${limiter.rule.name}" twice (they would share state)`,
        );
      }
      names.add(limiter.rule.name);
    }
    const store = limiters[0]!.store;
    if (typeof store.takeAll !== 'function') {
      throw new TypeError(
        'expected the store of "limiters" to implement takeAll() (both built-in stores do)',
      );
    }
    this.limiters = Object.freeze([...limiters]);
    this.rules = limiters.map((limiter) => limiter.rule);
    this.deciders = limiters.map((limiter) => limiter.decider);
    this.store = store;
    this.takeAll = store.takeAll;
    this.burst = Math.min(...this.rules.map((rule) => rule.burst));
    this.clock = limiters[0]!.clock;
    this.maxQueue = Math.min(...limiters.map((limiter) => limiter.maxQueue));
    this.defaultMaxWaitMs = longestWaitMs(this.rules);
  }

  /**
   * Takes `cost` units from `key` under every limiter if each has them now, atomically, or from
   * none: a refusal by one takes nothing from the others. Resolves with the combined decision (see
   * {@link CombinedRateLimitResult}: allowed when every limiter allows, the numbers of the binding
   * limit, the longest wait and reset). Each refusing limiter tells its `onRejected` listeners. A
   * store failure applies each limiter's own `storeFailure` mode to its own limit (a `fail-closed`
   * one rejects the whole decision).
   *
   * Rejects with a `TypeError` for a bad `key`, or a `cost` that is not a positive integer up to
   * the smallest `burst` (it could never be allowed).
   *
   * @example
   * const api = rateLimiter.all([perSecond, perHour]);
   * const { allowed, retryAfterMs, binding } = await api.take(`user:${userId}`);
   * if (!allowed) console.log(`refused by ${binding.rule.name} for ${retryAfterMs} ms`);
   */
  take(key: string, cost = 1): Promise<CombinedRateLimitResult> {
    return settle(() => {
      storeKey('key', key);
      // Stryker disable next-line ConditionalExpression: (true) costOf(1, burst) always passes (burst ≥ 1); the guard only skips the check for the common cost
      if (cost !== 1) costOf(cost, this.burst);
      return this.decide(key, cost);
    });
  }

  /**
   * {@link CombinedRateLimiter.take} without the promise, on the in-memory store: the same
   * decision, returned synchronously. Throws a `TypeError` for a bad `key` or `cost`, and when the
   * limiters' store is another one (use `await combined.take()` there).
   */
  takeSync(key: string, cost = 1): CombinedRateLimitResult {
    const store = this.store;
    if (!(store instanceof MemoryRateLimitStore)) {
      throw new TypeError(
        'takeSync needs the in-memory store: these limiters share another store, which cannot answer ' +
          'synchronously; use await combined.take(key, cost)',
      );
    }
    storeKey('key', key);
    // Stryker disable next-line ConditionalExpression: (true) costOf(1, burst) always passes (burst ≥ 1); the guard only skips the check for the common cost
    if (cost !== 1) costOf(cost, this.burst);
    return this.noted(key, cost, store.takeAllSync(key, cost, this.rules));
  }

  /** The combined state of `key` under every limiter, taking nothing (each limiter's `peek`). */
  peek(key: string): Promise<CombinedRateLimitResult> {
    return Promise.all(this.limiters.map((limiter) => limiter.peek(key))).then((results) =>
      combine(this.rules, results),
    );
  }

  /**
   * Waits until `cost` units can be taken from `key` under every limiter, takes them and resolves
   * with the decision, as one limiter's `wait` does: waiters of one key are served in arrival
   * order, only the first asks the store, and a waiter whose turn (estimated under every limit) is
   * after `maxWaitMs` is refused at once with a `RateLimitedError`. `maxWaitMs` defaults to the
   * longest full refill among the limits; at most the smallest `maxQueue` of the limiters wait on one
   * key. Sleeps and deadlines run on the first limiter's clock. Rejects with `signal.reason` on abort
   * and with the `StoreUnavailableError` under a `fail-closed` limiter.
   *
   * @example
   * await perSecondAndHour.wait('partner-api', { signal, maxWaitMs: 5_000 });
   */
  wait(key: string, options?: RateLimitWaitOptions): Promise<CombinedRateLimitResult> {
    return settle(() => {
      storeKey('key', key);
      const o = readWaitOptions(options, this.burst);
      const store = this.store;
      const rules = this.rules;
      this.waiters ??= new WaitQueue(
        store instanceof MemoryRateLimitStore
          ? (k, c) => this.noted(k, c, store.takeAllSync(k, c, rules))
          : (k, c) => this.decide(k, c),
        this.clock,
        rules,
        this.maxQueue,
      );
      return this.waiters.wait(
        key,
        o.cost,
        o.maxWaitMs ?? this.defaultMaxWaitMs,
        o.signal,
      ) as Promise<CombinedRateLimitResult>;
    });
  }

  /**
   * A `Policy` that takes `cost` units from `key` under every limiter before each call, as
   * one limiter's `policy` does: refused, the call fails with a `RateLimitedError` without running;
   * with `wait: true` it first waits (see {@link CombinedRateLimiter.wait}).
   *
   * @example
   * const partner = pipeline(timeout(2_000), rateLimiter.all([perSecond, perDay]).policy('partner'), retry());
   */
  policy(key: string, options?: RateLimitPolicyOptions): RateLimitPolicy {
    storeKey('key', key);
    const o = readPolicyOptions(options, this.burst);
    return new RateLimitPolicy(this, this.clock, key, o.cost, o.wait, o.maxWaitMs, o);
  }

  /** Forgets `key` under every limiter (each limiter's `reset`). */
  reset(key: string): Promise<void> {
    return Promise.all(this.limiters.map((limiter) => limiter.reset(key))).then(() => undefined);
  }

  private decide(key: string, cost: number): Promise<CombinedRateLimitResult> {
    const deciders = this.deciders;
    let knownRules: RateLimitRule[] | undefined;
    let known: RateLimitResult[] | undefined;
    for (let i = 0; i < deciders.length; i++) {
      const refusal = deciders[i]!.localRefusal(key, cost);
      if (refusal === undefined) continue;
      // Stryker disable next-line ConditionalExpression,LogicalOperator: (either test → false, &&) known and knownRules are set together, so either test alone decides the same; (→ true) is killed by the two remembered refusals
      if (known === undefined || knownRules === undefined) {
        known = [];
        knownRules = [];
      }
      knownRules.push(this.rules[i]!);
      known.push(refusal);
    }
    // Stryker disable next-line ConditionalExpression,LogicalOperator: (either test → true, ||) known and knownRules are set together, so either test alone decides the same; (→ false) is killed by a remembered refusal, (→ true) by any take the store answers
    if (known !== undefined && knownRules !== undefined) return Promise.resolve(combine(knownRules, known));
    return settle(() => this.takeAll.call(this.store, key, cost, this.rules)).then(
      (results) => this.noted(key, cost, results),
      (error: unknown) =>
        combine(
          this.rules,
          deciders.map((decider) => decider.storeFailed(key, cost, error)),
        ),
    );
  }

  /** The store's decisions under each rule, noted by each limiter (refusals reported), combined. */
  private noted(key: string, cost: number, results: readonly RateLimitResult[]): CombinedRateLimitResult {
    const deciders = this.deciders;
    const allowed = results.every((result) => result.allowed);
    // Units were taken only when every limiter allowed: only then does a limiter note an admission.
    return combine(
      this.rules,
      results.map((result, i) =>
        allowed || !result.allowed ? deciders[i]!.decided(key, cost, result) : result,
      ),
    );
  }
}
