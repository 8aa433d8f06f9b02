/**
 * The edges of a limiter's rule options: the largest and smallest values accepted, and the names
 * a limiter may have (the rest of the option checks are in rate-limiter.test.ts).
 */
import { describe, expect, it } from 'vitest';
import { rateLimiter } from './rate-limiter.js';
import { localRuleOf, ruleOf, sameRule } from './rule.js';

describe('rule options at their bounds', () => {
  it('names the rule options in the error for an option it does not know', () => {
    expect(() => ruleOf({ limit: 1, periodMs: 1_000, burts: 2 } as never)).toThrow(
      'unknown option "burts" in rule options; did you mean "burst"?',
    );
  });

  it('accepts 1000 sub-windows for the sliding window, and refuses 1001 with its bounds', () => {
    expect(ruleOf({ algorithm: 'sliding-window', limit: 10, periodMs: 1_000, buckets: 1_000 }).buckets).toBe(
      1_000,
    );
    expect(() => ruleOf({ algorithm: 'sliding-window', limit: 10, periodMs: 1_000, buckets: 1_001 })).toThrow(
      'expected "buckets" to be an integer from 1 to 1000, got 1001',
    );
  });

  it('accepts burst × periodMs of exactly 2^53 − 1, and refuses one more', () => {
    const max = Number.MAX_SAFE_INTEGER;
    expect(ruleOf({ limit: 1, periodMs: max }).periodMs).toBe(max);
    expect(() => ruleOf({ limit: 1, periodMs: (max + 1) / 2, burst: 2 })).toThrow(
      `expected "burst" × "periodMs" to be at most 2^53 − 1 (for exact arithmetic), got 2 × ${(max + 1) / 2}`,
    );
  });

  it('accepts a sliding-window burst equal to its limit', () => {
    expect(ruleOf({ algorithm: 'sliding-window', limit: 7, periodMs: 1_000, burst: 7 })).toMatchObject({
      limit: 7,
      burst: 7,
    });
  });

  it('names the option and the algorithm when refusing burst or buckets', () => {
    expect(() => ruleOf({ algorithm: 'sliding-window', limit: 10, periodMs: 1_000, burst: 5 })).toThrow(
      'expected "burst" to be omitted or equal to "limit" (10) for the sliding-window algorithm, got 5',
    );
    expect(() => ruleOf({ algorithm: 'token-bucket', limit: 10, periodMs: 1_000, buckets: 4 })).toThrow(
      'expected "buckets" to be omitted for the token-bucket algorithm (it applies to sliding-window), got 4',
    );
  });
});

describe('limiter names', () => {
  it.each(['a', 'Z', '0', 'AZaz09_.:-', 'x'.repeat(64)])('accepts %j', (name) => {
    expect(rateLimiter({ name, limit: 1, periodMs: 1_000 }).rule.name).toBe(name);
  });

  it.each(['', 'x'.repeat(65), 'has space', ' lead', 'trail ', 'a/b', 'ä', 'key{tag}'])(
    'refuses %j, naming the characters allowed',
    (name) => {
      expect(() => rateLimiter({ name, limit: 1, periodMs: 1_000 })).toThrow(
        `expected "name" to be 1–64 characters from A–Z a–z 0–9 _ . : -, got ${JSON.stringify(name)}`,
      );
    },
  );
});

describe('the local fallback rule', () => {
  const rule = ruleOf({ limit: 10, periodMs: 1_000, burst: 4 });

  it('is the rule itself for one instance', () => {
    expect(localRuleOf(rule, 1)).toBe(rule);
  });

  it('stretches the period and divides the burst for the token bucket and GCRA, never below 1', () => {
    expect(localRuleOf(rule, 2)).toMatchObject({ limit: 10, periodMs: 2_000, burst: 2 });
    expect(localRuleOf(rule, 3)).toMatchObject({ limit: 10, periodMs: 3_000, burst: 1 });
    expect(localRuleOf(rule, 8)).toMatchObject({ limit: 10, periodMs: 8_000, burst: 1 });
  });

  it('divides the limit of the sliding window and keeps its period, never below 1', () => {
    const window = ruleOf({ algorithm: 'sliding-window', limit: 10, periodMs: 1_000, buckets: 5 });
    expect(localRuleOf(window, 3)).toMatchObject({ limit: 3, burst: 3, periodMs: 1_000, buckets: 5 });
    expect(localRuleOf(window, 20)).toMatchObject({ limit: 1, burst: 1, periodMs: 1_000 });
  });
});

describe('sameRule', () => {
  it('ignores the name and compares every parameter that decides', () => {
    const base = { limit: 5, periodMs: 1_000 };
    expect(sameRule(ruleOf({ ...base, name: 'a' }), ruleOf({ ...base, name: 'b' }))).toBe(true);
    expect(sameRule(ruleOf(base), ruleOf({ ...base, algorithm: 'token-bucket' }))).toBe(false);
    expect(sameRule(ruleOf(base), ruleOf({ ...base, limit: 6, burst: 5 }))).toBe(false);
    expect(sameRule(ruleOf(base), ruleOf({ ...base, periodMs: 999 }))).toBe(false);
    expect(sameRule(ruleOf(base), ruleOf({ ...base, burst: 6 }))).toBe(false);
    const window = { ...base, algorithm: 'sliding-window' } as const;
    expect(sameRule(ruleOf({ ...window, buckets: 2 }), ruleOf({ ...window, buckets: 3 }))).toBe(false);
  });
});
