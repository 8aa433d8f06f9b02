/**
 * How a limiter reaches its store once it has checked the key and cost: straight to the in-memory
 * store ({@link MemoryDecider}), or through the safeguards a remote store needs (`RemoteDecider`:
 * blocked-key memory, the `storeFailure` mode). The limiter picks one at construction, so its
 * `take`, `peek` and `reset` have one path each whatever the store.
 */
import type { Listeners } from '../core/events.js';
import type { RateLimitRejectedEvent } from './events.js';
import type { MemoryRateLimitStore } from './memory-store.js';
import type { RateLimitResult, RateLimitRule } from './store.js';

/** One limiter's decisions on its store; `key` and `cost` are already validated. */
export interface Decider {
  /**
   * The decision on `cost` units of `key`; rejects with the store's failure per the limiter's mode.
   * May throw synchronously (the in-memory store's `TypeError` for two rules under one name): the
   * limiter calls it inside its own `try`, so its callers still only ever see a rejection.
   */
  take(key: string, cost: number): Promise<RateLimitResult>;
  /** The state of `key`, taking nothing. */
  peek(key: string): Promise<RateLimitResult>;
  /** Forgets `key`. */
  reset(key: string): Promise<void>;
}

/** Tells the limiter's `onRejected` listeners about a refusal (only called when some listen). */
export function emitRejected(
  rejected: Listeners<RateLimitRejectedEvent>,
  key: string,
  cost: number,
  result: RateLimitResult,
): void {
  rejected.emit({ key, cost, retryAfterMs: result.retryAfterMs, remaining: result.remaining });
}

/**
 * Decisions on the in-memory store: synchronous underneath, so `take` is the synchronous decision
 * in a resolved promise (no round trip, no blocked-key memory: the store itself answers as fast),
 * and {@link MemoryDecider.takeSync} is the same without the promise.
 */
export class MemoryDecider implements Decider {
  constructor(
    private readonly store: MemoryRateLimitStore,
    private readonly rule: RateLimitRule,
    private readonly rejected: Listeners<RateLimitRejectedEvent>,
  ) {}

  take(key: string, cost: number): Promise<RateLimitResult> {
    return Promise.resolve(this.takeSync(key, cost));
  }

  /** The decision, synchronously; throws the store's `TypeError` (two rules under one name). */
  takeSync(key: string, cost: number): RateLimitResult {
    const result = this.store.takeSync(key, cost, this.rule);
    if (!result.allowed && this.rejected.active) emitRejected(this.rejected, key, cost, result);
    return result;
  }

  peek(key: string): Promise<RateLimitResult> {
    return this.store.peek(key, this.rule);
  }

  reset(key: string): Promise<void> {
    return this.store.reset(key, this.rule);
  }
}
