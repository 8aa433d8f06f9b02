import type { Random } from '../core/random.js';

/**
 * A deterministic [0, 1) source (mulberry32) for tests that need repeatable jitter.
 *
 * @example
 * const backoff = exponentialJitter({ baseMs: 100, maxMs: 2_000, random: seededRandom(42) });
 */
export function seededRandom(seed: number): Random {
  let state = seed >>> 0;
  return () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}
