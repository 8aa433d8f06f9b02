/**
 * The algorithms at their edges, through the in-memory store on a FakeClock: the slack of a
 * billionth of a unit, clocks that step back, and fractional times and periods. The invariants over
 * random traffic are in algorithms.property.test.ts.
 */
import { describe, expect, it } from 'vitest';
import { FakeClock } from '../testing/fake-clock.js';
import { memoryRateLimitStore } from './memory-store.js';
import { ruleOf } from './rule.js';

describe.each(['gcra', 'token-bucket'] as const)('%s: the slack of a billionth of a unit', (algorithm) => {
  // One unit per 1e9 ms: a billionth of a unit is exactly 1 ms, so the slack decides at whole ms.
  const rule = ruleOf({ algorithm, limit: 1, periodMs: 1e9 });

  it('allows a take short of its unit by exactly a billionth, and refuses one short by more', async () => {
    const clock = new FakeClock();
    const store = memoryRateLimitStore({ clock });
    expect(store.takeSync('k', 1, rule).allowed).toBe(true);
    await clock.advance(1e9 - 2);
    expect(store.takeSync('k', 1, rule)).toEqual({
      allowed: false,
      remaining: 0,
      retryAfterMs: 1,
      resetMs: 1,
      limit: 1,
    });
    await clock.advance(1);
    expect(store.takeSync('k', 1, rule)).toEqual({
      allowed: true,
      remaining: 0,
      retryAfterMs: 0,
      resetMs: 1e9,
      limit: 1,
    });
  });

  it('carries a shortfall within the slack: a client early by a billionth at every take is refused the second time', async () => {
    const clock = new FakeClock();
    const store = memoryRateLimitStore({ clock });
    expect(store.takeSync('k', 1, rule).allowed).toBe(true);
    await clock.advance(1e9 - 1);
    expect(store.takeSync('k', 1, rule).allowed).toBe(true); // a billionth early: within the slack
    await clock.advance(1e9 - 1);
    // Two billionths early in all: beyond the slack, however early the last take alone is.
    expect(store.takeSync('k', 1, rule)).toEqual({
      allowed: false,
      remaining: 0,
      retryAfterMs: 1,
      resetMs: 1,
      limit: 1,
    });
    await clock.advance(1);
    expect(store.takeSync('k', 1, rule).allowed).toBe(true);
  });

  it('a peek a billionth short of full capacity reports it full', async () => {
    const clock = new FakeClock();
    const store = memoryRateLimitStore({ clock });
    store.takeSync('k', 1, rule);
    await clock.advance(1e9 - 1);
    expect(store.takeSync('k', 0, rule)).toEqual({
      allowed: true,
      remaining: 1,
      retryAfterMs: 0,
      resetMs: 0,
      limit: 1,
    });
  });
});

/** A clock the test sets to any time, backwards included (no timers: the store starts none). */
function settableClock(start = 0) {
  let time = start;
  const clock = {
    now: () => time,
    sleep: () => Promise.reject(new Error('not used')),
    setTimer: () => {
      throw new Error('not used');
    },
    clearTimer: () => {},
  };
  return {
    clock,
    set: (ms: number) => {
      time = ms;
    },
  };
}

describe.each(['gcra', 'token-bucket', 'sliding-window'] as const)(
  '%s: a clock that steps back',
  (algorithm) => {
    const rule = ruleOf({
      algorithm,
      limit: 1,
      periodMs: 1_000,
      ...(algorithm === 'sliding-window' ? { buckets: 1 } : {}),
    });

    it('a peek changes nothing, even when the clock then steps back', () => {
      const { clock, set } = settableClock(10_000);
      const store = memoryRateLimitStore({ clock });
      const watched = memoryRateLimitStore({ clock });
      for (const s of [store, watched]) expect(s.takeSync('k', 1, rule).allowed).toBe(true);
      set(15_000);
      expect(watched.takeSync('k', 0, rule)).toMatchObject({ allowed: true, remaining: 1 });
      set(10_500); // back to half a period after the take
      expect(watched.takeSync('k', 1, rule)).toEqual(store.takeSync('k', 1, rule));
    });
  },
);

describe.each(['gcra', 'token-bucket'] as const)('%s: decisions when the clock steps back', (algorithm) => {
  const rule = ruleOf({ algorithm, limit: 10, periodMs: 1_000 });

  it('quota taken later on the clock is not given back early, and retryAfterMs is enough', () => {
    const { clock, set } = settableClock(10_000);
    const store = memoryRateLimitStore({ clock });
    expect(store.takeSync('k', 10, rule).allowed).toBe(true); // empty until 10 000, full at 11 000
    set(9_000); // a second before the take
    // The same decision from both algorithms: the unit taken at 10 000 comes back at 10 100.
    expect(store.takeSync('k', 1, rule)).toEqual({
      allowed: false,
      remaining: 0,
      retryAfterMs: 1_100,
      resetMs: 2_000,
      limit: 10,
    });
    set(10_099);
    expect(store.takeSync('k', 1, rule)).toMatchObject({ allowed: false, retryAfterMs: 1 });
    set(10_100);
    expect(store.takeSync('k', 1, rule)).toMatchObject({ allowed: true, remaining: 0 });
  });

  it('a take made at a later time on the clock still counts once the clock steps back before it', () => {
    const { clock, set } = settableClock(10_000);
    const store = memoryRateLimitStore({ clock });
    store.takeSync('k', 5, rule);
    set(20_000); // full again since 10 500
    expect(store.takeSync('k', 1, rule)).toMatchObject({ allowed: true, remaining: 9 });
    set(19_000);
    expect(store.takeSync('k', 0, rule)).toMatchObject({ remaining: 0 });
    expect(store.takeSync('k', 10, rule)).toMatchObject({ allowed: false, retryAfterMs: 1_100 });
  });
});

describe.each(['gcra', 'token-bucket'] as const)('%s: fractional clock times', (algorithm) => {
  // One unit per 250 ms, on a clock that reads fractions of a millisecond (as systemClock does).
  const rule = ruleOf({ algorithm, limit: 4, periodMs: 1_000, burst: 1 });

  it('a unit comes back exactly one emission interval after the fractional time it was taken', async () => {
    const clock = new FakeClock(1_000_000.25);
    const store = memoryRateLimitStore({ clock });
    expect(store.takeSync('k', 1, rule)).toMatchObject({ allowed: true, resetMs: 250 });
    await clock.advance(249.7);
    expect(store.takeSync('k', 1, rule)).toEqual({
      allowed: false,
      remaining: 0,
      retryAfterMs: 1,
      resetMs: 1,
      limit: 1,
    });
    await clock.advance(0.3);
    expect(store.takeSync('k', 1, rule)).toMatchObject({ allowed: true, remaining: 0, resetMs: 250 });
    await clock.advance(100.5);
    expect(store.takeSync('k', 0, rule)).toMatchObject({ allowed: true, remaining: 0, resetMs: 150 });
    expect(store.takeSync('k', 1, rule)).toMatchObject({ allowed: false, retryAfterMs: 150 });
  });
});

describe('sliding-window: the first sub-windows of the clock', () => {
  it('at time 0, resetMs counts the sub-window 0 itself', async () => {
    const clock = new FakeClock(0);
    const store = memoryRateLimitStore({ clock });
    const rule = ruleOf({ algorithm: 'sliding-window', limit: 2, periodMs: 1_000, buckets: 4 });
    expect(store.takeSync('k', 0, rule)).toEqual({
      allowed: true,
      remaining: 2,
      retryAfterMs: 0,
      resetMs: 0,
      limit: 2,
    });
    // Sub-window 0 is [0, 250): its units stop counting when sub-window 5 begins, at 1 250 ms.
    expect(store.takeSync('k', 2, rule)).toMatchObject({ allowed: true, remaining: 0, resetMs: 1_250 });
    await clock.advance(300);
    expect(store.takeSync('k', 1, rule)).toEqual({
      allowed: false,
      remaining: 0,
      retryAfterMs: 950,
      resetMs: 950,
      limit: 2,
    });
  });
});

describe.each(['gcra', 'token-bucket', 'sliding-window'] as const)(
  '%s: a key at full capacity',
  (algorithm) => {
    const rule = ruleOf({ algorithm, limit: 3, periodMs: 900 });

    it('reports resetMs 0 (a whole 0, not -0) when fresh and once refilled', async () => {
      const clock = new FakeClock(5_000);
      const store = memoryRateLimitStore({ clock });
      const full = { allowed: true, remaining: 3, retryAfterMs: 0, resetMs: 0, limit: 3 };
      expect(store.takeSync('k', 0, rule)).toEqual(full);
      store.takeSync('k', 1, rule);
      await clock.advance(2_000);
      expect(store.takeSync('k', 0, rule)).toEqual(full);
    });
  },
);

describe('sliding-window: a sub-window width that is not a whole number of ms', () => {
  // 1 000 ms over 29 sub-windows: index × width rounds to a hair either side of a whole ms, so the
  // wait computed from it is one ms off unless corrected against floor(time / width) itself.
  const rule = ruleOf({ algorithm: 'sliding-window', limit: 1, periodMs: 1_000, buckets: 29 });

  it.each([
    [3_966, 1_034], // index × width lands just above a whole ms: ceil would say one ms too many
    [15_966, 1_035], // just below: ceil would say one ms too few
  ])('at %i ms a refusal says exactly %i ms: one ms less is still refused', async (start, wait) => {
    const clock = new FakeClock(start);
    const store = memoryRateLimitStore({ clock });
    expect(store.takeSync('k', 1, rule).allowed).toBe(true);
    const refused = store.takeSync('k', 1, rule);
    expect(refused).toMatchObject({ allowed: false, retryAfterMs: wait, resetMs: wait });
    await clock.advance(wait - 1);
    expect(store.takeSync('k', 1, rule).allowed).toBe(false);
    await clock.advance(1);
    expect(store.takeSync('k', 1, rule).allowed).toBe(true);
  });
});

describe('sliding-window: decisions when the clock steps back', () => {
  it('counts into the newest sub-window, so a unit taken later on the clock is not forgotten', () => {
    const rule = ruleOf({ algorithm: 'sliding-window', limit: 2, periodMs: 1_000, buckets: 10 });
    const { clock, set } = settableClock(550);
    const store = memoryRateLimitStore({ clock });
    expect(store.takeSync('k', 1, rule).allowed).toBe(true); // sub-window 5
    set(150); // back into sub-window 1
    expect(store.takeSync('k', 1, rule)).toMatchObject({ allowed: true, remaining: 0 });
    set(560);
    // Both units are in sub-window 5 and count until 1 600 ms: none is given back yet.
    expect(store.takeSync('k', 1, rule)).toMatchObject({ allowed: false, retryAfterMs: 1_040 });
  });
});

describe('sliding-window: resetMs', () => {
  it('counts from the newest sub-window that holds units, also when the current one is empty', async () => {
    const rule = ruleOf({ algorithm: 'sliding-window', limit: 3, periodMs: 1_000, buckets: 10 });
    const clock = new FakeClock(0);
    const store = memoryRateLimitStore({ clock });
    store.takeSync('k', 1, rule); // sub-window 0
    await clock.advance(300);
    store.takeSync('k', 1, rule); // sub-window 3, which stops counting at 1 400 ms
    await clock.advance(400);
    expect(store.takeSync('k', 0, rule)).toMatchObject({ allowed: true, remaining: 1, resetMs: 700 });
  });
});
