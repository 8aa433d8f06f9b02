/**
 * The L1 entries of one cache: their times (TTL, jitter, early refresh, grace, back-off) worked out
 * from the cache's options, and values frozen when asked. Times are on the cache's clock.
 */
import type { ReadCacheOptions } from './options.js';
import type { LocalCacheEntry } from './store.js';

/** A value that was stale (or due for refresh) when a load began: served if the load fails. */
export interface Fallback {
  readonly value: unknown;
  /** Its L1 entry, when it came from L1. */
  readonly local: LocalCacheEntry | undefined;
  /** When it ends for good (clock time). */
  readonly expiresAt: number;
}

/** Freezes `value` and every object and array inside it (what is already frozen is left as it is). */
function deepFreeze<T>(value: T): T {
  // A primitive (null too) counts as frozen.
  if (Object.isFrozen(value)) return value;
  Object.freeze(value);
  for (const inner of Object.values(value as object)) deepFreeze(inner);
  return value;
}

/** Makes the L1 entries of a cache with options `o`. */
export class LocalEntries {
  constructor(private readonly o: ReadCacheOptions) {}

  /** `ttlMs`, shortened by up to `ttlJitter` of it at random (at least 1 ms). */
  jitter(ttlMs: number): number {
    const { ttlJitter, random } = this.o;
    // Stryker disable next-line ConditionalExpression: (false) a jitter of 0 takes nothing off; the check only saves the random draw
    return ttlJitter === 0 ? ttlMs : Math.max(1, ttlMs - Math.floor(ttlMs * ttlJitter * random()));
  }

  /** The value as L1 keeps it: itself, deep-frozen with `freeze`. */
  kept(value: unknown): unknown {
    return this.o.freeze ? deepFreeze(value) : value;
  }

  /** A value just loaded or set, fresh for `ttlMs` from `now`, then stale for the grace. */
  fresh(value: unknown, now: number, ttlMs: number): LocalCacheEntry {
    const staleAt = now + ttlMs;
    return {
      value,
      refreshAt: staleAt - this.refreshLeadMs(ttlMs),
      staleAt,
      expiresAt: staleAt + this.o.graceMs,
    };
  }

  /** A value read from L2 with what was left of its times, from `now`; refreshed as one of `ttlMs`. */
  adopted(
    value: unknown,
    now: number,
    freshForMs: number,
    remainingMs: number,
    ttlMs: number,
  ): LocalCacheEntry {
    const staleAt = now + freshForMs;
    return { value, refreshAt: staleAt - this.refreshLeadMs(ttlMs), staleAt, expiresAt: now + remainingMs };
  }

  /**
   * `fallback`, served because a load failed at `now`: fresh for `graceBackoffMs` (the loader is
   * left alone meanwhile), never past its end. An entry still fresh keeps its TTL; only its next
   * refresh waits.
   */
  backedOff(fallback: Fallback, now: number): LocalCacheEntry {
    const until = Math.min(now + this.o.graceBackoffMs, fallback.expiresAt);
    const { local } = fallback;
    // Stryker disable next-line EqualityOperator: (>=) when both are the same time, either is it
    const staleAt = local !== undefined && local.staleAt > until ? local.staleAt : until;
    return { value: fallback.value, refreshAt: until, staleAt, expiresAt: fallback.expiresAt };
  }

  /** How long before its TTL ends an entry is refreshed (0 without `earlyRefresh`). */
  refreshLeadMs(ttlMs: number): number {
    return this.o.earlyRefresh === undefined ? 0 : ttlMs - Math.round(ttlMs * this.o.earlyRefresh);
  }
}
