/**
 * Keys must be well-formed UTF-16 on every store: a lone surrogate is refused with a TypeError by
 * the limiter, whatever the store, so a service behaves the same on memory and on Redis (where it
 * would be written as U+FFFD and share a bucket with other keys).
 */
import { describe, expect, it } from 'vitest';
import { FakeClock } from '../testing/fake-clock.js';
import { memoryRateLimitStore } from './memory-store.js';
import { rateLimiter } from './rate-limiter.js';
import type { RateLimitResult, RateLimitRule, RateLimitStore } from './store.js';

const illFormed = ['\uD800', '\uDBFF', '\uDC00', 'user:\uD83D', 'x\uDE00y'];
const message = /"key" to be well-formed UTF-16 \(no lone surrogate.*got "(?:user:|x)?\\ud[89a-f]/;

function asyncStore(clock: FakeClock): RateLimitStore & { calls: number } {
  const inner = memoryRateLimitStore({ clock });
  const store = {
    calls: 0,
    take(key: string, cost: number, rule: RateLimitRule): Promise<RateLimitResult> {
      store.calls++;
      return inner.take(key, cost, rule);
    },
    peek: (key: string, rule: RateLimitRule) => inner.peek(key, rule),
    reset: (key: string, rule: RateLimitRule) => inner.reset(key, rule),
  };
  return store;
}

describe('rate-limit keys', () => {
  it.each(illFormed)(
    'refuses %j with a TypeError on the in-memory store: take, takeSync, peek, reset, wait, policy',
    async (key) => {
      const limiter = rateLimiter({ limit: 1, periodMs: 1_000, clock: new FakeClock() });
      expect(() => limiter.takeSync(key)).toThrow(TypeError);
      expect(() => limiter.takeSync(key)).toThrow(message);
      await expect(limiter.take(key)).rejects.toThrow(TypeError);
      await expect(limiter.take(key)).rejects.toThrow(message);
      await expect(limiter.peek(key)).rejects.toThrow(message);
      await expect(limiter.reset(key)).rejects.toThrow(message);
      expect(() => limiter.policy(key)).toThrow(message);
      await expect(limiter.wait(key)).rejects.toThrow(message);
    },
  );

  it.each(illFormed)('refuses %j with a TypeError on a remote store, before any store call', async (key) => {
    const clock = new FakeClock();
    const store = asyncStore(clock);
    const limiter = rateLimiter({ limit: 1, periodMs: 1_000, clock, store, storeFailure: 'fail-open' });
    await expect(limiter.take(key)).rejects.toThrow(message);
    await expect(limiter.peek(key)).rejects.toThrow(message);
    await expect(limiter.reset(key)).rejects.toThrow(message);
    await expect(limiter.wait(key)).rejects.toThrow(message);
    expect(store.calls).toBe(0);
  });

  it('accepts every well-formed key, surrogate pairs and U+FFFD included, each with its own state', () => {
    const limiter = rateLimiter({ limit: 1, periodMs: 60_000, clock: new FakeClock() });
    for (const key of ['\uFFFD', '\uD83D\uDE00', 'ünïcode', '{tag}', 'a'.repeat(10_000)]) {
      expect(limiter.takeSync(key).allowed).toBe(true);
      expect(limiter.takeSync(key).allowed).toBe(false);
    }
  });
});
