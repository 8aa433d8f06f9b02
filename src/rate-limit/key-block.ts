/**
 * Blocks on keys (`limiter.block(key, ms)`) as the in-memory store keeps them, and the decision a
 * blocked key gives. The Redis scripts compute the same decision in Lua (see
 * `stores/redis/rate-limit-lua.ts`), so both stores answer a blocked key alike.
 */
import type { LRUCache } from 'lru-cache';
import { type Algorithm, ceilMs, decision } from './algorithm.js';
import type { RateLimitResult, RateLimitRule } from './store.js';

/**
 * How long `key`'s block has left at `now` (0 when it has none). A block that has ended is dropped
 * as it is read: no timer.
 */
export function blockLeft(blocks: LRUCache<string, number>, key: string, now: number): number {
  // Stryker disable next-line ConditionalExpression: (false) an empty map has no block for the key either; the check only skips the lookup
  if (blocks.size === 0) return 0;
  const until = blocks.get(key);
  if (until === undefined) return 0;
  if (until > now) return until - now;
  blocks.delete(key);
  return 0;
}

/** Blocks `key` until `until` unless it is already blocked longer (a block never shortens one). */
export function extendBlock(blocks: LRUCache<string, number>, key: string, until: number): void {
  const prior = blocks.get(key);
  if (prior === undefined || prior < until) blocks.set(key, until);
}

/**
 * The decision on a take of `cost` (0: a peek) of a key whose block has `left` ms to run: refused
 * (a peek is allowed) with nothing available at once; the wait is the longer of the block's rest
 * and what the quota underneath needs (it keeps refilling meanwhile, and nothing is taken while
 * blocked), and the reset the longer of the block's rest and the quota's own.
 */
export function blockedDecision<S>(
  algorithm: Algorithm<S>,
  state: S,
  now: number,
  cost: number,
  rule: RateLimitRule,
  left: number,
): RateLimitResult {
  const leftMs = ceilMs(left);
  const resetMs = Math.max(leftMs, algorithm.take(state, now, 0, rule).resetMs);
  if (cost === 0) return decision(true, 0, 0, resetMs, rule.burst);
  const quotaWait = algorithm.take(state, now, cost, rule, false).retryAfterMs;
  return decision(false, 0, Math.max(leftMs, quotaWait), resetMs, rule.burst);
}
