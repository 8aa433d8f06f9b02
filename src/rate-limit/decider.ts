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
  /** Moves `key`'s quota by `units` (positive consumes); rejects with the store's failure as is. */
  adjust(key: string, units: number): Promise<RateLimitResult>;
  /** Blocks `key` for `ms`; rejects with the store's failure as is. */
  block(key: string, ms: number): Promise<RateLimitResult>;
  /**
   * A refusal of `cost` on `key` known without asking the store (the blocked-key memory of a remote
   * store), or undefined. For decisions the limiter does not make itself (`rateLimiter.all()`).
   */
  localRefusal(key: string, cost: number): RateLimitResult | undefined;
  /**
   * Takes note of the store's decision on `cost` of `key`, made elsewhere (`rateLimiter.all()`): a
   * refusal is reported and remembered, an admitted take keeps a local fallback warm.
   */
  decided(key: string, cost: number, result: RateLimitResult): RateLimitResult;
  /** The decision when the store failed on `cost` of `key` (0: a peek): the limiter's mode; may throw. */
  storeFailed(key: string, cost: number, error: unknown): RateLimitResult;
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
    return this.decided(key, cost, this.store.takeSync(key, cost, this.rule));
  }

  peek(key: string): Promise<RateLimitResult> {
    return this.store.peek(key, this.rule);
  }

  reset(key: string): Promise<void> {
    return this.store.reset(key, this.rule);
  }

  adjust(key: string, units: number): Promise<RateLimitResult> {
    return this.store.adjust(key, units, this.rule);
  }

  block(key: string, ms: number): Promise<RateLimitResult> {
    return this.store.block(key, ms, this.rule);
  }

  /** The store itself answers as fast as a memory of refusals would: nothing is known locally. */
  localRefusal(): undefined {
    return undefined;
  }

  decided(key: string, cost: number, result: RateLimitResult): RateLimitResult {
    if (!result.allowed && this.rejected.active) emitRejected(this.rejected, key, cost, result);
    return result;
  }

  /** The in-memory store fails only on bad use (two rules under one name): its error, as is. */
  storeFailed(_key: string, _cost: number, error: unknown): never {
    throw error;
  }
}
