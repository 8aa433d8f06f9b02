import type { LRUCache } from 'lru-cache';
import type { Clock } from '../core/clock.js';
import { ceilMs, decision } from './algorithm.js';
import { keyMap } from './key-map.js';
import type { RateLimitResult } from './store.js';

/** How early a real timer may fire, as measured on the clock (libuv keeps whole-ms loop time). */
const TIMER_SLACK_MS = 1;

interface Blocked {
  /** Local clock time until which takes of `cost` are refused locally. */
  readonly until: number;
  readonly cost: number;
  readonly remaining: number;
  readonly resetAt: number;
}

/**
 * Keys a remote store just refused, remembered locally until their `retryAfterMs` passes, so a
 * client hammering a blocked key costs no round trips. Bounded (LRU); no timer: an entry is checked
 * against the clock when read.
 *
 * Only takes of the refused cost are answered locally: a refusal of 5 units says nothing about 1
 * unit, and a larger cost would need a longer `retryAfterMs` than the one remembered. Before `until`
 * the store would refuse the same cost too, since quota only comes back with time (other takers
 * only make it later). `until` is measured on the local clock
 * from when the reply arrived, so a local refusal lasts at most one network latency longer than the
 * store's.
 */
export class BlockedKeys {
  private readonly entries: LRUCache<string, Blocked>;

  constructor(
    maxKeys: number,
    private readonly clock: Clock,
  ) {
    this.entries = keyMap<Blocked>(maxKeys);
  }

  /** The local refusal of `cost` on `key`, or undefined when the store must decide. */
  check(key: string, cost: number, limit: number): RateLimitResult | undefined {
    // Stryker disable next-line ConditionalExpression: (false) an empty map has no entry for the key either; the check only skips the lookup
    if (this.entries.size === 0) return undefined;
    const entry = this.entries.get(key);
    if (entry === undefined) return undefined;
    const now = this.clock.now();
    // The last millisecond goes to the store: Node runs a timer up to 1 ms before
    // performance.now() says it is due, so a waiter that slept exactly `retryAfterMs` would
    // otherwise be refused locally for "1 ms more" at its deadline.
    if (now + TIMER_SLACK_MS >= entry.until) {
      this.entries.delete(key);
      return undefined;
    }
    if (cost !== entry.cost) return undefined;
    return decision(false, entry.remaining, ceilMs(entry.until - now), ceilMs(entry.resetAt - now), limit);
  }

  /** Remembers the store's refusal of `cost` on `key`. */
  remember(key: string, cost: number, result: RateLimitResult): void {
    if (!(result.retryAfterMs > 0)) return;
    const now = this.clock.now();
    this.entries.set(key, {
      until: now + result.retryAfterMs,
      cost,
      remaining: result.remaining,
      resetAt: now + result.resetMs,
    });
  }

  /** Forgets `key` (after a reset). */
  forget(key: string): void {
    this.entries.delete(key);
  }

  /** Keys remembered now (expired ones included until read). */
  get size(): number {
    return this.entries.size;
  }
}
