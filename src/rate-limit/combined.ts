/**
 * Several limits on one key, decided as one (`rateLimiter.all([perSecond, perHour])`): a take is
 * admitted only when every limit admits it, and a refusal by any of them takes nothing from the
 * others. The store decides atomically (`RateLimitStore.takeAll`: one script call on Redis); each
 * limiter keeps its own name, rule, events and `storeFailure` mode.
 */
import { show, storeKey } from '../core/validate.js';
import type { Decider } from './decider.js';
import { costOf } from './options.js';
import type { RateLimiter } from './rate-limiter.js';
import { settle } from './settle.js';
import type { RateLimitResult, RateLimitRule, RateLimitStore } from './store.js';

/** Most limiters one combined limiter decides over (one script call touches one key per limiter). */
export const MAX_COMBINED_LIMITERS = 16;

type TakeAll = NonNullable<RateLimitStore['takeAll']>;

/**
 * Limiters combined by `rateLimiter.all()`: `take(key, cost)` takes `cost` from `key` under every
 * limiter or under none. Build it with `rateLimiter.all(limiters)`.
 */
export class CombinedRateLimiter {
  /** The limiters combined, in the order given. */
  readonly limiters: readonly RateLimiter[];
  private readonly rules: readonly RateLimitRule[];
  private readonly deciders: readonly Decider[];
  private readonly store: RateLimitStore;
  private readonly takeAll: TakeAll;
  /** The smallest burst: a larger cost could never be allowed. */
  private readonly burst: number;

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
  }

  /**
   * Takes `cost` units from `key` under every limiter if each has them now, atomically, or from
   * none: a refusal by one takes nothing from the others. Resolves with the combined decision:
   * allowed when every limiter allows; `remaining` and `limit` those of the limiter with the fewest
   * units left; `retryAfterMs` the longest wait (until every limiter could allow this cost, absent
   * other takers); `resetMs` the longest reset. Each refusing limiter tells its `onRejected`
   * listeners. A store failure applies each limiter's own `storeFailure` mode to its own limit (a
   * `fail-closed` one rejects the whole decision).
   *
   * Rejects with a `TypeError` for a bad `key`, or a `cost` that is not a positive integer up to
   * the smallest `burst` (it could never be allowed).
   *
   * @example
   * const api = rateLimiter.all([perSecond, perHour]);
   * const { allowed, retryAfterMs } = await api.take(`user:${userId}`);
   */
  take(key: string, cost = 1): Promise<RateLimitResult> {
    return settle(() => {
      storeKey('key', key);
      if (cost !== 1) costOf(cost, this.burst);
      return this.decide(key, cost);
    });
  }

  /** The combined state of `key` under every limiter, taking nothing (each limiter's `peek`). */
  peek(key: string): Promise<RateLimitResult> {
    return Promise.all(this.limiters.map((limiter) => limiter.peek(key))).then(combine);
  }

  /** Forgets `key` under every limiter (each limiter's `reset`). */
  reset(key: string): Promise<void> {
    return Promise.all(this.limiters.map((limiter) => limiter.reset(key))).then(() => undefined);
  }

  private decide(key: string, cost: number): Promise<RateLimitResult> {
    const deciders = this.deciders;
    const known: RateLimitResult[] = [];
    for (const decider of deciders) {
      const refusal = decider.localRefusal(key, cost);
      if (refusal !== undefined) known.push(refusal);
    }
    if (known.length > 0) return Promise.resolve(combine(known));
    return settle(() => this.takeAll.call(this.store, key, cost, this.rules)).then(
      (results) => {
        const allowed = results.every((result) => result.allowed);
        // Units were taken only when every limiter allowed: only then does a limiter note an admission.
        return combine(
          results.map((result, i) =>
            allowed || !result.allowed ? deciders[i]!.decided(key, cost, result) : result,
          ),
        );
      },
      (error: unknown) => combine(deciders.map((decider) => decider.storeFailed(key, cost, error))),
    );
  }
}

/** The decision of several limits on one take (see {@link CombinedRateLimiter.take}). */
function combine(results: readonly RateLimitResult[]): RateLimitResult {
  let tightest = results[0]!;
  let allowed = true;
  let retryAfterMs = 0;
  let resetMs = 0;
  let fallback: RateLimitResult['fallback'];
  for (const result of results) {
    if (result.remaining < tightest.remaining) tightest = result;
    allowed &&= result.allowed;
    retryAfterMs = Math.max(retryAfterMs, result.retryAfterMs);
    resetMs = Math.max(resetMs, result.resetMs);
    if (result.fallback !== undefined && fallback !== 'local') fallback = result.fallback;
  }
  const { remaining, limit } = tightest;
  return fallback === undefined
    ? { allowed, remaining, retryAfterMs, resetMs, limit }
    : { allowed, remaining, retryAfterMs, resetMs, limit, fallback };
}
