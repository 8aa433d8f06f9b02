import { describe, expect, it } from 'vitest';
import { FakeClock } from '../testing/fake-clock.js';
import { rateLimitStoreConformance } from '../testing/rate-limit-conformance.js';
import { memoryRateLimitStore } from './memory-store.js';
import { ruleOf } from './rule.js';

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

  it('answers the store interface with promises, and takeSync with the same decisions synchronously', async () => {
    const store = memoryRateLimitStore({ clock: new FakeClock() });
    const pending = store.take('k', 1, rule);
    expect(pending).toBeInstanceOf(Promise);
    expect(await pending).toEqual({
      allowed: true,
      remaining: 1,
      retryAfterMs: 0,
      resetMs: 30_000,
      limit: 2,
    });
    const result = store.takeSync('k', 1, rule);
    expect(result).toEqual({ allowed: true, remaining: 0, retryAfterMs: 0, resetMs: 60_000, limit: 2 });
    expect(store.takeSync('k', 0, rule)).toMatchObject({ allowed: true, remaining: 0 }); // cost 0 is a peek
    expect(await store.peek('k', rule)).toMatchObject({ allowed: true, remaining: 0 });
    expect(store.reset('k', rule)).toBeInstanceOf(Promise);
    expect(store.takeSync('k', 0, rule).remaining).toBe(2);
  });

  it('a rule clash rejects take and throws from takeSync, with the TypeError', async () => {
    const store = memoryRateLimitStore({ clock: new FakeClock() });
    store.takeSync('k', 1, ruleOf({ name: 'x', limit: 1, periodMs: 1_000 }));
    const clash = ruleOf({ name: 'x', limit: 2, periodMs: 1_000 });
    await expect(store.take('k', 1, clash)).rejects.toThrow(TypeError);
    await expect(store.peek('k', clash)).rejects.toThrow(/two limiters named "x"/);
    expect(() => store.takeSync('k', 1, clash)).toThrow(/two limiters named "x"/);
  });

  it('keeps at most maxKeys keys per limiter name; an evicted key restarts at full capacity', () => {
    const store = memoryRateLimitStore({ maxKeys: 3, clock: new FakeClock() });
    for (const key of ['a', 'b', 'c']) store.takeSync(key, 2, rule);
    expect(store.takeSync('a', 1, rule).allowed).toBe(false); // a is now the most recently used
    store.takeSync('d', 2, rule); // evicts b, the least recently used
    expect(store.size).toBe(3);
    expect(store.takeSync('a', 1, rule).allowed).toBe(false);
    expect(store.takeSync('b', 1, rule)).toMatchObject({ allowed: true, remaining: 1 }); // restarted full
  });

  it('a peek neither stores a fresh key nor refreshes recency', async () => {
    const store = memoryRateLimitStore({ maxKeys: 2, clock: new FakeClock() });
    expect((await store.peek('x', rule)).remaining).toBe(2);
    expect(store.takeSync('x', 0, rule).remaining).toBe(2);
    expect(store.size).toBe(0);
    store.takeSync('a', 2, rule);
    store.takeSync('b', 2, rule);
    await store.peek('a', rule);
    store.takeSync('a', 0, rule);
    store.takeSync('c', 1, rule); // evicts a: the peek did not make it recent
    expect(store.takeSync('a', 1, rule).allowed).toBe(true);
  });

  it('a key taken again and again (its LRU lookup skipped) restarts after a reset or an eviction', async () => {
    const store = memoryRateLimitStore({ maxKeys: 1, clock: new FakeClock() });
    store.takeSync('hot', 2, rule);
    expect(store.takeSync('hot', 1, rule).allowed).toBe(false);
    await store.reset('hot', rule);
    expect(store.takeSync('hot', 1, rule)).toMatchObject({ allowed: true, remaining: 1 });
    store.takeSync('hot', 1, rule);
    store.takeSync('other', 1, rule); // evicts hot (maxKeys 1)
    expect(store.size).toBe(1);
    expect(store.takeSync('hot', 1, rule)).toMatchObject({ allowed: true, remaining: 1 });
    await store.reset('other', rule); // already evicted: resetting it leaves hot alone
    expect(store.takeSync('hot', 1, rule)).toMatchObject({ allowed: true, remaining: 0 });
    expect(store.takeSync('hot', 1, rule).allowed).toBe(false);
  });

  it('keeps recency exact for a repeated key: the key taken last is the one kept', () => {
    const store = memoryRateLimitStore({ maxKeys: 2, clock: new FakeClock() });
    store.takeSync('a', 1, rule);
    store.takeSync('b', 1, rule);
    store.takeSync('a', 1, rule); // a is the most recent again
    store.takeSync('a', 1, rule); // repeated: no lookup, still the most recent
    store.takeSync('c', 1, rule); // evicts b
    expect(store.takeSync('a', 1, rule).allowed).toBe(false);
    expect(store.takeSync('b', 1, rule)).toMatchObject({ allowed: true, remaining: 1 });
  });

  it('starts no timer, whatever the number of keys', () => {
    const clock = new FakeClock();
    const store = memoryRateLimitStore({ clock });
    for (let i = 0; i < 1_000; i++) store.takeSync(`k${i}`, 1, rule);
    expect(clock.pendingTimers).toBe(0);
  });

  it('separates limiter names and refuses two different rules under one name', () => {
    const store = memoryRateLimitStore({ clock: new FakeClock() });
    const a = ruleOf({ name: 'a', limit: 1, periodMs: 1_000 });
    const b = ruleOf({ name: 'b', limit: 1, periodMs: 1_000 });
    expect(store.takeSync('k', 1, a).allowed).toBe(true);
    expect(store.takeSync('k', 1, b).allowed).toBe(true);
    const sameAsA = ruleOf({ name: 'a', limit: 1, periodMs: 1_000 });
    expect(store.takeSync('k', 1, sameAsA).allowed).toBe(false); // an equal rule shares the state
    const clash = ruleOf({ name: 'a', limit: 5, periodMs: 1_000 });
    expect(() => store.takeSync('k', 1, clash)).toThrow(/two limiters named "a" with different rules/);
  });

  it.each([
    ['algorithm', { algorithm: 'token-bucket' }],
    ['limit', { limit: 2, burst: 1 }],
    ['periodMs', { periodMs: 2_000 }],
    ['burst', { burst: 2 }],
  ] as const)('refuses a second rule under one name that differs only in %s', (_, change) => {
    const store = memoryRateLimitStore({ clock: new FakeClock() });
    store.takeSync('k', 1, ruleOf({ name: 'a', limit: 1, periodMs: 1_000 }));
    const clash = ruleOf({ name: 'a', limit: 1, periodMs: 1_000, ...change });
    expect(() => store.takeSync('k', 1, clash)).toThrow(
      'two limiters named "a" with different rules share one store: give each a distinct "name"',
    );
  });

  it('refuses a second sliding-window rule under one name that differs only in buckets', () => {
    const store = memoryRateLimitStore({ clock: new FakeClock() });
    const window = { name: 'w', algorithm: 'sliding-window', limit: 1, periodMs: 1_000 } as const;
    store.takeSync('k', 1, ruleOf({ ...window, buckets: 4 }));
    expect(() => store.takeSync('k', 1, ruleOf({ ...window, buckets: 5 }))).toThrow(/two limiters named "w"/);
    expect(store.takeSync('k', 1, ruleOf({ ...window, buckets: 4 })).allowed).toBe(false);
  });

  it('a reset of a limiter name or a key it never saw resolves and changes nothing', async () => {
    const store = memoryRateLimitStore({ clock: new FakeClock() });
    await expect(store.reset('k', rule)).resolves.toBeUndefined();
    store.takeSync('k', 2, rule);
    await store.reset('other', rule);
    expect(store.takeSync('k', 1, rule).allowed).toBe(false);
    expect(store.size).toBe(1);
  });

  it('keeps 10 000 keys per limiter name by default, then evicts the least recently used', () => {
    const store = memoryRateLimitStore({ clock: new FakeClock() });
    for (let i = 0; i < 10_000; i++) store.takeSync(`k${i}`, 2, rule);
    expect(store.size).toBe(10_000);
    expect(store.takeSync('k0', 1, rule).allowed).toBe(false); // k0 is the most recent now
    store.takeSync('new', 1, rule); // evicts k1
    expect(store.size).toBe(10_000);
    expect(store.takeSync('k1', 1, rule)).toMatchObject({ allowed: true, remaining: 1 });
  });

  it('decides on the system clock when given none', async () => {
    const store = memoryRateLimitStore();
    const perMinute = ruleOf({ limit: 1, periodMs: 60_000 });
    expect(store.takeSync('k', 1, perMinute).allowed).toBe(true);
    const refused = store.takeSync('k', 1, perMinute);
    expect(refused.allowed).toBe(false);
    expect(refused.retryAfterMs).toBeGreaterThan(0);
    expect(refused.retryAfterMs).toBeLessThanOrEqual(60_000);
  });

  it.each([
    [{ maxKeys: 0 }, /"maxKeys".*0/],
    [{ maxKeys: 1.5 }, /"maxKeys".*1.5/],
    [{ maxKeys: Number.NaN }, /"maxKeys".*NaN/],
    [{ clock: { now: () => 0 } }, /"clock"/],
    [{ maxkeys: 5 }, 'unknown option "maxkeys" in memoryRateLimitStore options; did you mean "maxKeys"?'],
  ])('rejects %o', (options, message) => {
    expect(() => memoryRateLimitStore(options as never)).toThrow(message);
  });
});
