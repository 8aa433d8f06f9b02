import { describe, expect, it } from 'vitest';
import { ruleOf } from '../../rate-limit/rule.js';
import { FakeClock } from '../../testing/fake-clock.js';
import { rateLimitStoreConformance } from '../../testing/rate-limit-conformance.js';
import { memoryRateLimitStore } from './rate-limit.js';

rateLimitStoreConformance(
  'memory store on a FakeClock',
  () => {
    const clock = new FakeClock(1_000_000);
    return { store: memoryRateLimitStore({ clock }), elapse: (ms) => clock.advance(ms), slackMs: 0 };
  },
  { describe, it },
);

describe('memoryRateLimitStore', () => {
  const rule = ruleOf({ limit: 2, periodMs: 60_000 });

  it('answers synchronously', () => {
    const store = memoryRateLimitStore({ clock: new FakeClock() });
    expect(store.synchronous).toBe(true);
    const result = store.take('k', 1, rule);
    expect(result).toEqual({ allowed: true, remaining: 1, retryAfterMs: 0, resetMs: 30_000, limit: 2 });
  });

  it('keeps at most maxKeys keys per limiter name; an evicted key restarts at full capacity', () => {
    const store = memoryRateLimitStore({ maxKeys: 3, clock: new FakeClock() });
    for (const key of ['a', 'b', 'c']) store.take(key, 2, rule);
    expect(store.take('a', 1, rule).allowed).toBe(false); // a is now the most recently used
    store.take('d', 2, rule); // evicts b, the least recently used
    expect(store.size).toBe(3);
    expect(store.take('a', 1, rule).allowed).toBe(false);
    expect(store.take('b', 1, rule)).toMatchObject({ allowed: true, remaining: 1 }); // restarted full
  });

  it('a peek neither stores a fresh key nor refreshes recency', () => {
    const store = memoryRateLimitStore({ maxKeys: 2, clock: new FakeClock() });
    expect(store.peek('x', rule).remaining).toBe(2);
    expect(store.size).toBe(0);
    store.take('a', 2, rule);
    store.take('b', 2, rule);
    store.peek('a', rule);
    store.take('c', 1, rule); // evicts a: the peek did not make it recent
    expect(store.take('a', 1, rule).allowed).toBe(true);
  });

  it('starts no timer, whatever the number of keys', () => {
    const clock = new FakeClock();
    const store = memoryRateLimitStore({ clock });
    for (let i = 0; i < 1_000; i++) store.take(`k${i}`, 1, rule);
    expect(clock.pendingTimers).toBe(0);
  });

  it('separates limiter names and refuses two different rules under one name', () => {
    const store = memoryRateLimitStore({ clock: new FakeClock() });
    const a = ruleOf({ name: 'a', limit: 1, periodMs: 1_000 });
    const b = ruleOf({ name: 'b', limit: 1, periodMs: 1_000 });
    expect(store.take('k', 1, a).allowed).toBe(true);
    expect(store.take('k', 1, b).allowed).toBe(true);
    const sameAsA = ruleOf({ name: 'a', limit: 1, periodMs: 1_000 });
    expect(store.take('k', 1, sameAsA).allowed).toBe(false); // an equal rule shares the state
    const clash = ruleOf({ name: 'a', limit: 5, periodMs: 1_000 });
    expect(() => store.take('k', 1, clash)).toThrow(/two limiters named "a" with different rules/);
  });

  it.each([
    [{ maxKeys: 0 }, /"maxKeys".*0/],
    [{ maxKeys: 1.5 }, /"maxKeys".*1.5/],
    [{ maxKeys: Number.NaN }, /"maxKeys".*NaN/],
    [{ clock: { now: () => 0 } }, /"clock"/],
  ])('rejects %o', (options, message) => {
    expect(() => memoryRateLimitStore(options as never)).toThrow(message);
  });
});
