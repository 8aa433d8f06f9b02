import { type Clock, systemClock } from '../core/clock.js';
import { isStoreUnavailableError, StoreUnavailableError } from '../core/errors.js';
import { type Disposer, type Listener, Listeners } from '../core/events.js';
import { isThenable, type Policy } from '../core/policy.js';
import {
  isClock,
  nonNegative,
  oneOf,
  optionKeys,
  optionsObject,
  positiveInteger,
  show,
  storeKey,
} from '../core/validate.js';
import { MemoryRateLimitStore } from '../stores/memory/rate-limit.js';
import { BlockedKeys } from './blocked-keys.js';
import { RateLimitPolicy, type RateLimitPolicyOptions } from './rate-limit-policy.js';
import { localRuleOf, type RateLimitRuleOptions, ruleOf } from './rule.js';
import {
  isSynchronousStore,
  type RateLimitResult,
  type RateLimitRule,
  type RateLimitStore,
  type SyncRateLimitStore,
} from './store.js';
import { WaitQueue } from './wait-queue.js';

/** What a limiter does when its store fails or misses its deadline. */
export type StoreErrorMode = 'fail-open' | 'fail-closed' | 'local';

/** Options of {@link rateLimiter}. */
export interface RateLimiterOptions extends RateLimitRuleOptions {
  /**
   * Where per-key state lives and decisions are made. A store shared by several limiters needs
   * distinct limiter `name`s.
   * @default a new in-memory store (`memoryRateLimitStore({ maxKeys, clock })`)
   */
  readonly store?: RateLimitStore | undefined;
  /**
   * Bound of every per-key map the limiter keeps: the default in-memory store, the local memory of
   * blocked keys and the `local` fallback. Least recently used keys are evicted first; an evicted key
   * restarts at full capacity. A bound, not an allocation: the maps grow with the keys actually used,
   * so any positive integer works (`2 ** 32` included); anything else is a `TypeError`.
   * @default 10_000
   */
  readonly maxKeys?: number | undefined;
  /** Time for the in-memory store, waits and the blocked-key memory. @default systemClock */
  readonly clock?: Clock | undefined;
  /**
   * When the store fails (a Redis error, or no answer within its deadline):
   * - `fail-closed`: `take`/`wait` reject and `policy` throws the `StoreUnavailableError` (kind
   *   `unavailable`, HTTP 503): nothing is admitted that the shared limit did not admit, and the
   *   failure is visible.
   * - `fail-open`: admit, with `fallback: 'fail-open'` on the result.
   * - `local`: decide with an in-memory limiter at `1 / instances` of the rule, kept warm with this
   *   process's admitted traffic while the store works; results carry `fallback: 'local'`.
   *
   * Either way the failure is never reported as a refusal, and `onStoreError` listeners hear of it.
   * Irrelevant for the in-memory store, which cannot fail.
   * @default 'fail-closed'
   */
  readonly onStoreError?: StoreErrorMode | undefined;
  /** How many processes share the limit: the `local` fallback admits `1 / instances` of it. @default 1 */
  readonly instances?: number | undefined;
}

const rateLimiterOptionKeys = optionKeys<RateLimiterOptions>({
  algorithm: true,
  limit: true,
  periodMs: true,
  burst: true,
  buckets: true,
  name: true,
  store: true,
  maxKeys: true,
  clock: true,
  onStoreError: true,
  instances: true,
});

/** Options of {@link RateLimiter.wait}. */
export interface RateLimitWaitOptions {
  /** Units to take. @default 1 */
  readonly cost?: number | undefined;
  /** Gives up waiting: the wait rejects with `signal.reason`. */
  readonly signal?: AbortSignal | undefined;
  /**
   * Longest to wait. When this waiter's turn (estimated from its queue position: the units queued
   * ahead plus its own cost, at the rule's rate) comes later than this, `wait` rejects at once with a
   * `RateLimitedError` rather than sleeping in vain; one that leaves at this limit gets the estimate
   * as `retryAfterMs` (≥ 1). Judged from when the store was asked, in whole ms, so on a remote store
   * the wait may end up to one round trip later.
   * @default the longest an uncontended key can need: burst × periodMs / limit (token bucket, GCRA),
   * periodMs + periodMs / buckets (sliding window)
   */
  readonly maxWaitMs?: number | undefined;
}

const waitOptionKeys = optionKeys<RateLimitWaitOptions>({ cost: true, signal: true, maxWaitMs: true });
const policyOptionKeys = optionKeys<RateLimitPolicyOptions>({ cost: true, wait: true, maxWaitMs: true });

/** Emitted when a take is refused (including refusals answered from the blocked-key memory). */
export interface RateLimitRejectedEvent {
  readonly key: string;
  readonly cost: number;
  readonly retryAfterMs: number;
  readonly remaining: number;
}

/** Emitted for every store failure, before `onStoreError` mode applies. */
export interface RateLimitStoreErrorEvent {
  readonly key: string;
  /** The failure, as a `StoreUnavailableError` whose `cause` is the store's own error. */
  readonly error: StoreUnavailableError;
  /** What the limiter did about it. */
  readonly mode: StoreErrorMode;
}

const modes: readonly StoreErrorMode[] = ['fail-open', 'fail-closed', 'local'];

/** What `reset` returns: nothing with a synchronous store, a promise with a remote one. */
export type ResetReturn<R> = R extends Promise<RateLimitResult> ? Promise<void> : undefined;

/**
 * A rate limiter. `R` is what {@link RateLimiter.take} returns: a plain result with a synchronous
 * store (the default in-memory one), a promise with a remote store.
 */
export class RateLimiter<
  R extends RateLimitResult | Promise<RateLimitResult> = RateLimitResult | Promise<RateLimitResult>,
> {
  /** The validated rule. */
  readonly rule: RateLimitRule;
  /** The store deciding. */
  readonly store: RateLimitStore;
  private readonly sync: boolean;
  private readonly clock: Clock;
  private readonly mode: StoreErrorMode;
  private readonly blocked: BlockedKeys | undefined;
  private readonly local: MemoryRateLimitStore | undefined;
  private readonly localRule: RateLimitRule;
  private readonly defaultMaxWaitMs: number;
  private readonly rejected = new Listeners<RateLimitRejectedEvent>();
  private readonly storeErrors = new Listeners<RateLimitStoreErrorEvent>();
  private waiters: WaitQueue | undefined;

  /** Use {@link rateLimiter}. */
  constructor(options: RateLimiterOptions) {
    const o = optionsObject('rateLimiter options', options, rateLimiterOptionKeys);
    this.rule = ruleOf(o as RateLimiterOptions);
    const maxKeys = positiveInteger('maxKeys', o.maxKeys ?? 10_000);
    this.clock = o.clock === undefined ? systemClock : isClock<Clock>('clock', o.clock);
    this.mode = oneOf<StoreErrorMode>('onStoreError', o.onStoreError ?? 'fail-closed', modes);
    const instances = positiveInteger('instances', o.instances ?? 1);
    if (o.store === undefined) {
      this.store = new MemoryRateLimitStore({ maxKeys, clock: this.clock });
    } else {
      const store = o.store as Partial<RateLimitStore> | null;
      if (
        store === null ||
        typeof store !== 'object' ||
        typeof store.take !== 'function' ||
        typeof store.peek !== 'function' ||
        typeof store.reset !== 'function'
      ) {
        throw new TypeError(
          `expected "store" to be a RateLimitStore (take, peek, reset), got ${show(o.store)}`,
        );
      }
      this.store = o.store;
    }
    this.sync = isSynchronousStore(this.store);
    this.blocked = this.sync ? undefined : new BlockedKeys(maxKeys, this.clock);
    this.localRule = localRuleOf(this.rule, instances);
    this.local =
      !this.sync && this.mode === 'local'
        ? new MemoryRateLimitStore({ maxKeys, clock: this.clock })
        : undefined;
    const { limit, periodMs, burst, buckets, algorithm } = this.rule;
    this.defaultMaxWaitMs =
      algorithm === 'sliding-window' ? periodMs + periodMs / buckets : (burst * periodMs) / limit;
  }

  /**
   * Takes `cost` units from `key` if they are available now, and says so: a refusal is a result
   * (`allowed: false` with `retryAfterMs`), not an error. Synchronous with a synchronous store (the
   * default in-memory one); with a remote store it returns a promise, answers a key it just saw
   * refused from local memory without a round trip, and applies `onStoreError` when the store fails.
   *
   * Throws (or, with a remote store, rejects with) a `TypeError` for an empty or non-string `key`, a
   * key that is not well-formed UTF-16 (a lone surrogate: refused on every store alike), or
   * a `cost` that is not a positive integer or exceeds `burst` (it could never be allowed).
   *
   * @example
   * const { allowed, retryAfterMs } = limiter.take(`user:${id}`);
   * if (!allowed) return reply.code(429).header('retry-after', Math.ceil(retryAfterMs / 1000)).send();
   */
  take(key: string, cost = 1): R {
    if (this.sync) {
      storeKey('key', key);
      if (cost !== 1) this.checkCost(cost);
      const result = (this.store as SyncRateLimitStore).take(key, cost, this.rule);
      if (!result.allowed && this.rejected.active) this.emitRejected(key, cost, result);
      return result as R;
    }
    try {
      storeKey('key', key);
      if (cost !== 1) this.checkCost(cost);
    } catch (error) {
      return Promise.reject(error) as R;
    }
    return this.takeRemote(key, cost) as R;
  }

  /**
   * The state of `key` now, taking nothing: `remaining`, `resetMs` and `limit` (`allowed` is true).
   * Store failures follow `onStoreError` like `take`.
   */
  peek(key: string): R {
    if (this.sync) {
      storeKey('key', key);
      return (this.store as SyncRateLimitStore).peek(key, this.rule) as R;
    }
    try {
      storeKey('key', key);
    } catch (error) {
      return Promise.reject(error) as R;
    }
    let pending: RateLimitResult | Promise<RateLimitResult>;
    try {
      pending = this.store.peek(key, this.rule);
    } catch (error) {
      return Promise.resolve().then(() => this.storeFailed(key, 0, error, true)) as R;
    }
    return Promise.resolve(pending).then(undefined, (error: unknown) =>
      this.storeFailed(key, 0, error, true),
    ) as R;
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
    this.waiters ??= new WaitQueue((k, c) => this.take(k, c), this.clock, this.rule);
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
  policy(key: string, options?: RateLimitPolicyOptions): Policy {
    storeKey('key', key);
    const o = optionsObject('policy options', options, policyOptionKeys);
    const cost = o.cost ?? 1;
    if (cost !== 1) this.checkCost(cost);
    const maxWaitMs = o.maxWaitMs === undefined ? undefined : nonNegative('maxWaitMs', o.maxWaitMs, true);
    if (o.wait !== undefined && typeof o.wait !== 'boolean') {
      throw new TypeError(`expected "wait" to be a boolean, got ${show(o.wait)}`);
    }
    return new RateLimitPolicy(this as RateLimiter, this.clock, key, cost, o.wait === true, maxWaitMs);
  }

  /**
   * Forgets `key` in the store (it restarts at full capacity) and in local memory. Rejects (or
   * throws) with a `StoreUnavailableError` when the store fails; `onStoreError` does not apply.
   */
  reset(key: string): ResetReturn<R> {
    type Out = ResetReturn<R>;
    if (this.sync) {
      storeKey('key', key);
      (this.store as SyncRateLimitStore).reset(key, this.rule);
      return undefined as Out;
    }
    try {
      storeKey('key', key);
    } catch (error) {
      return Promise.reject(error) as Out;
    }
    this.blocked?.forget(key);
    this.local?.reset(key, this.localRule);
    let pending: void | Promise<void>;
    try {
      pending = this.store.reset(key, this.rule);
    } catch (error) {
      return Promise.reject(asStoreError(error)) as Out;
    }
    return Promise.resolve(pending).then(undefined, (error: unknown) => {
      throw asStoreError(error);
    }) as Out;
  }

  /** Subscribes to refusals; returns a disposer. */
  onRejected(listener: Listener<RateLimitRejectedEvent>): Disposer {
    return this.rejected.add(listener);
  }

  /** Subscribes to store failures; returns a disposer. */
  onStoreError(listener: Listener<RateLimitStoreErrorEvent>): Disposer {
    return this.storeErrors.add(listener);
  }

  private takeRemote(key: string, cost: number): Promise<RateLimitResult> {
    const blocked = this.blocked!.check(key, cost, this.rule.burst);
    if (blocked !== undefined) {
      if (this.rejected.active) this.emitRejected(key, cost, blocked);
      return Promise.resolve(blocked);
    }
    let pending: RateLimitResult | Promise<RateLimitResult>;
    try {
      pending = this.store.take(key, cost, this.rule);
    } catch (error) {
      return Promise.resolve().then(() => this.storeFailed(key, cost, error, false));
    }
    if (!isThenable<RateLimitResult>(pending)) return Promise.resolve(this.decided(key, cost, pending));
    return pending.then(
      (result) => this.decided(key, cost, result),
      (error: unknown) => this.storeFailed(key, cost, error, false),
    );
  }

  /** The store decided: remember refusals, keep the local fallback warm. */
  private decided(key: string, cost: number, result: RateLimitResult): RateLimitResult {
    if (!result.allowed) {
      this.blocked!.remember(key, cost, result);
      if (this.rejected.active) this.emitRejected(key, cost, result);
    } else if (this.local !== undefined && cost <= this.localRule.burst) {
      this.local.take(key, cost, this.localRule);
    }
    return result;
  }

  /** The store failed: report it, then apply the mode. */
  private storeFailed(key: string, cost: number, cause: unknown, peek: boolean): RateLimitResult {
    const error = asStoreError(cause);
    if (this.storeErrors.active) this.storeErrors.emit({ key, error, mode: this.mode });
    const burst = this.rule.burst;
    switch (this.mode) {
      case 'fail-closed':
        throw error;
      case 'fail-open':
        return {
          allowed: true,
          remaining: burst,
          retryAfterMs: 0,
          resetMs: 0,
          limit: burst,
          fallback: 'fail-open',
        };
      case 'local': {
        const local = this.local!;
        const rule = this.localRule;
        let result: RateLimitResult;
        if (peek) result = local.peek(key, rule);
        else if (cost <= rule.burst) result = local.take(key, cost, rule);
        else {
          // More than the local share can ever admit at once: refused until the store is back.
          const state = local.peek(key, rule);
          result = { ...state, allowed: false, retryAfterMs: Math.ceil(rule.periodMs) };
        }
        if (!result.allowed && this.rejected.active) this.emitRejected(key, cost, result);
        return {
          allowed: result.allowed,
          remaining: result.remaining,
          retryAfterMs: result.retryAfterMs,
          resetMs: result.resetMs,
          limit: result.limit,
          fallback: 'local',
        };
      }
    }
  }

  private emitRejected(key: string, cost: number, result: RateLimitResult): void {
    this.rejected.emit({ key, cost, retryAfterMs: result.retryAfterMs, remaining: result.remaining });
  }

  private checkCost(cost: number): void {
    if (typeof cost !== 'number' || !Number.isInteger(cost) || cost < 1) {
      throw new TypeError(`expected "cost" to be a positive integer, got ${show(cost)}`);
    }
    if (cost > this.rule.burst) {
      throw new TypeError(
        `expected "cost" to be at most "burst" (${this.rule.burst}): a larger cost could never be allowed, got ${cost}`,
      );
    }
  }
}

function asStoreError(error: unknown): StoreUnavailableError {
  return isStoreUnavailableError(error)
    ? error
    : new StoreUnavailableError(
        `rate-limit store failed: ${error instanceof Error ? error.message : String(error)}`,
        error,
      );
}

/**
 * Creates a rate limiter: `limit` units per `periodMs` on average per key, at most `burst` at once.
 * One option shape for every algorithm (`gcra` by default; `token-bucket` decides the same;
 * `sliding-window` is a strict quota per window). A global limit is one fixed key.
 *
 * With no `store` the limiter keeps state in memory (bounded by `maxKeys`, LRU, no timer per key)
 * and `take()` answers synchronously. With `redisStores(client).rateLimit` every process shares the
 * limit, `take()` returns a promise, and `onStoreError` decides what a Redis failure means.
 *
 * Throws a `TypeError` naming the option for: `limit`/`burst` not positive integers, `periodMs` not a
 * positive finite number, `burst` × `periodMs` above 2^53 − 1, `burst` ≠ `limit` or `buckets` outside 1–1000
 * for `sliding-window`, `buckets` for another algorithm, an unknown `algorithm` or `onStoreError`, a
 * bad `name`, `maxKeys`, `instances`, `clock` or `store`.
 *
 * @example
 * const perUser = rateLimiter({ limit: 100, periodMs: 60_000, burst: 20 });
 * const r = perUser.take(userId);          // { allowed, remaining, retryAfterMs, resetMs, limit }
 *
 * const shared = rateLimiter({
 *   limit: 1_000, periodMs: 60_000,
 *   store: redisStores(redis).rateLimit,
 *   onStoreError: 'local', instances: 4,
 * });
 * const decision = await shared.take(`tenant:${tenantId}`);
 */
export function rateLimiter(
  options: RateLimiterOptions & { readonly store?: SyncRateLimitStore | undefined },
): RateLimiter<RateLimitResult>;
export function rateLimiter(options: RateLimiterOptions): RateLimiter<Promise<RateLimitResult>>;
export function rateLimiter(options: RateLimiterOptions): RateLimiter {
  return new RateLimiter(options);
}
