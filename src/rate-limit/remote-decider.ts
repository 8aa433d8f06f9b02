/**
 * Decisions on a store that is not the in-memory one (Redis, or a user's own): the blocked-key
 * memory that spares a hammering client its round trips, and the `storeFailure` mode applied when
 * the store fails.
 */

import type { Clock } from '../core/clock.js';
import { isStoreUnavailableError, StoreUnavailableError } from '../core/errors.js';
import type { Listeners } from '../core/events.js';
import { isThenable } from '../core/policy.js';
import { countEvent } from '../core/telemetry.js';
import { BlockedKeys } from './blocked-keys.js';
import { type Decider, emitRejected } from './decider.js';
import type { RateLimitRejectedEvent, RateLimitStoreErrorEvent } from './events.js';
import { MemoryRateLimitStore } from './memory-store.js';
import type { StoreFailureMode } from './options.js';
import { settle } from './settle.js';
import type { RateLimitResult, RateLimitRule, RateLimitStore } from './store.js';

/** What a remote decider needs from its limiter. */
export interface RemoteDeciderOptions {
  readonly store: RateLimitStore;
  readonly rule: RateLimitRule;
  /** The rule of the `local` fallback (`1 / instances` of `rule`). */
  readonly localRule: RateLimitRule;
  readonly mode: StoreFailureMode;
  /** Bound of the blocked-key memory and of the `local` fallback's keys. */
  readonly maxKeys: number;
  readonly clock: Clock;
  readonly rejected: Listeners<RateLimitRejectedEvent>;
  readonly storeErrors: Listeners<RateLimitStoreErrorEvent>;
}

/**
 * A remote store's decisions. A refusal is remembered (bounded, no timer) and answered locally
 * until its `retryAfterMs` passes; with `storeFailure: 'local'` every take the store admits is also
 * taken from an in-memory limiter at `localRule`, so the fallback starts warm. A store failure,
 * rejected or thrown, becomes a `StoreUnavailableError`, is reported to `onStoreError` listeners,
 * then the mode decides: reject (`fail-closed`), admit (`fail-open`) or decide locally (`local`).
 */
export class RemoteDecider implements Decider {
  private readonly store: RateLimitStore;
  private readonly rule: RateLimitRule;
  private readonly localRule: RateLimitRule;
  private readonly mode: StoreFailureMode;
  private readonly blocked: BlockedKeys;
  private readonly local: MemoryRateLimitStore | undefined;
  private readonly rejected: Listeners<RateLimitRejectedEvent>;
  private readonly storeErrors: Listeners<RateLimitStoreErrorEvent>;

  constructor(options: RemoteDeciderOptions) {
    const { maxKeys, clock } = options;
    this.store = options.store;
    this.rule = options.rule;
    this.localRule = options.localRule;
    this.mode = options.mode;
    this.rejected = options.rejected;
    this.storeErrors = options.storeErrors;
    this.blocked = new BlockedKeys(maxKeys, clock);
    // Stryker disable next-line ConditionalExpression: (true) in the other modes the fallback would be kept warm but never consulted: no decision changes
    this.local = this.mode === 'local' ? new MemoryRateLimitStore({ maxKeys, clock }) : undefined;
  }

  take(key: string, cost: number): Promise<RateLimitResult> {
    const blocked = this.localRefusal(key, cost);
    if (blocked !== undefined) return Promise.resolve(blocked);
    let pending: RateLimitResult | Promise<RateLimitResult>;
    try {
      pending = this.store.take(key, cost, this.rule);
    } catch (error) {
      return Promise.resolve().then(() => this.storeFailed(key, cost, error));
    }
    if (!isThenable<RateLimitResult>(pending)) return Promise.resolve(this.decided(key, cost, pending));
    return pending.then(
      (result) => this.decided(key, cost, result),
      (error: unknown) => this.storeFailed(key, cost, error),
    );
  }

  peek(key: string): Promise<RateLimitResult> {
    let pending: RateLimitResult | Promise<RateLimitResult>;
    try {
      pending = this.store.peek(key, this.rule);
    } catch (error) {
      return Promise.resolve().then(() => this.storeFailed(key, 0, error));
    }
    return Promise.resolve(pending).then(undefined, (error: unknown) => this.storeFailed(key, 0, error));
  }

  /** Forgets `key` in the store and in local memory; a store failure rejects whatever the mode. */
  reset(key: string): Promise<void> {
    this.blocked.forget(key);
    void this.local?.reset(key, this.localRule);
    let pending: void | Promise<void>;
    try {
      pending = this.store.reset(key, this.rule);
    } catch (error) {
      return Promise.reject(asStoreError(error));
    }
    return Promise.resolve(pending).then(undefined, (error: unknown) => {
      throw asStoreError(error);
    });
  }

  /**
   * Moves `key`'s quota on the store, then on the local fallback (kept warm). A reward forgets the
   * key's remembered refusal first: the store may admit it now.
   */
  adjust(key: string, units: number): Promise<RateLimitResult> {
    if (units < 0) this.blocked.forget(key);
    return this.alter('adjust', key, units);
  }

  /** Blocks `key` on the store, then on the local fallback (kept warm). */
  block(key: string, ms: number): Promise<RateLimitResult> {
    return this.alter('block', key, ms);
  }

  localRefusal(key: string, cost: number): RateLimitResult | undefined {
    const blocked = this.blocked.check(key, cost, this.rule.burst);
    // Stryker disable next-line ConditionalExpression: (true) emitting with no listener does nothing; the guard only skips building the event
    if (blocked !== undefined && this.rejected.active) emitRejected(this.rejected, key, cost, blocked);
    return blocked;
  }

  /** Runs the store's `adjust` or `block`; a store without it is a `TypeError`, a failure rejects. */
  private alter(operation: 'adjust' | 'block', key: string, amount: number): Promise<RateLimitResult> {
    const store = this.store;
    const run = store[operation];
    if (run === undefined) {
      return Promise.reject(
        new TypeError(
          `this limiter's store has no ${operation}(): ${operation === 'adjust' ? 'penalty() and reward() need' : 'block() needs'} a store that implements it (both built-in stores do)`,
        ),
      );
    }
    return settle(() => run.call(store, key, amount, this.rule)).then(
      (result) => {
        void this.local?.[operation](key, amount, this.localRule);
        return result;
      },
      (error: unknown) => {
        throw asStoreError(error);
      },
    );
  }

  /** The store decided: remember refusals, keep the local fallback warm. */
  decided(key: string, cost: number, result: RateLimitResult): RateLimitResult {
    if (!result.allowed) {
      this.blocked.remember(key, cost, result);
      // Stryker disable next-line ConditionalExpression: (true) emitting to no listener does nothing; the guard only saves building the event
      if (this.rejected.active) emitRejected(this.rejected, key, cost, result);
    } else if (this.local !== undefined && cost <= this.localRule.burst) {
      this.local.takeSync(key, cost, this.localRule);
    }
    return result;
  }

  /** The store failed (on a take of `cost`, or a peek: cost 0): report it, then apply the mode. */
  storeFailed(key: string, cost: number, cause: unknown): RateLimitResult {
    const error = asStoreError(cause);
    // Stryker disable next-line ConditionalExpression: (true) emitting to no listener does nothing; the guard only saves building the event
    if (this.storeErrors.active) this.storeErrors.emit({ key, error, mode: this.mode });
    countEvent('store_error', 'rate-limit', this.rule.name, error);
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
        // A peek (cost 0) takes nothing from the local store either.
        if (cost <= rule.burst) result = local.takeSync(key, cost, rule);
        else {
          // More than the local share can ever admit at once: refused until the store is back.
          const state = local.takeSync(key, 0, rule);
          result = { ...state, allowed: false, retryAfterMs: Math.ceil(rule.periodMs) };
        }
        if (!result.allowed && this.rejected.active) emitRejected(this.rejected, key, cost, result);
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
}

/** A store's failure as a `StoreUnavailableError` (passed on as is when it already is one). */
function asStoreError(error: unknown): StoreUnavailableError {
  return isStoreUnavailableError(error)
    ? error
    : new StoreUnavailableError(
        `rate-limit store failed: ${error instanceof Error ? error.message : String(error)}`,
        error,
      );
}
