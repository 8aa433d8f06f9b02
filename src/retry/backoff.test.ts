import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { seededRandom } from '../testing/seeded-random.js';
import {
  constant,
  decorrelatedJitter,
  exponential,
  exponentialJitter,
  fullJitter,
  linear,
} from './backoff.js';

const retryNumber = fc.integer({ min: 1, max: 10_000 });
const bounds = fc
  .tuple(fc.integer({ min: 0, max: 10_000 }), fc.integer({ min: 0, max: 1_000_000 }))
  .map(([baseMs, extra]) => ({ baseMs, maxMs: baseMs + extra }));
const seed = fc.integer();
const ceiling = (b: { baseMs: number; maxMs: number }, n: number) =>
  b.baseMs === 0 ? 0 : Math.min(b.maxMs, b.baseMs * 2 ** (n - 1));

describe('constant and linear', () => {
  it('constant returns the same delay', () => {
    const b = constant(250);
    expect([1, 2, 50].map(b)).toEqual([250, 250, 250]);
  });

  it('linear grows by step and stops at the cap', () => {
    expect([1, 2, 3, 4].map(linear(100, 50, 180))).toEqual([100, 150, 180, 180]);
    expect([1, 2, 3].map(linear(100))).toEqual([100, 200, 300]);
  });
});

describe('exponential', () => {
  it('doubles from baseMs and caps at maxMs', () => {
    expect([1, 2, 3, 4, 5].map(exponential({ baseMs: 100, maxMs: 1_000 }))).toEqual([
      100, 200, 400, 800, 1_000,
    ]);
    expect([1, 2, 3].map(exponential({ baseMs: 10, maxMs: 1_000, factor: 3 }))).toEqual([10, 30, 90]);
  });

  it('stays bounded for any retry number (no overflow to Infinity or NaN)', () => {
    fc.assert(
      fc.property(bounds, retryNumber, ({ baseMs, maxMs }, n) => {
        const d = exponential({ baseMs, maxMs })(n);
        return d >= 0 && d <= maxMs && Number.isFinite(d);
      }),
    );
  });
});

describe('exponentialJitter', () => {
  it('stays within ±jitter of the exponential value and never above maxMs', () => {
    fc.assert(
      fc.property(
        bounds,
        retryNumber,
        seed,
        fc.double({ min: 0, max: 1, noNaN: true }),
        (b, n, s, jitter) => {
          const d = exponentialJitter({ ...b, jitter, random: seededRandom(s) })(n);
          const center = ceiling(b, n);
          return d >= center * (1 - jitter) - 1e-9 && d <= Math.min(b.maxMs, center * (1 + jitter)) + 1e-9;
        },
      ),
    );
  });

  it('actually spreads delays (crypto random by default)', () => {
    const b = exponentialJitter({ baseMs: 1_000, maxMs: 10_000 });
    const samples = new Set(Array.from({ length: 50 }, () => b(1)));
    expect(samples.size).toBeGreaterThan(40);
    for (const d of samples) {
      expect(d).toBeGreaterThanOrEqual(700);
      expect(d).toBeLessThanOrEqual(1_300);
    }
  });
});

describe('fullJitter', () => {
  it('is uniform in [0, min(maxMs, baseMs·2^(n−1)))', () => {
    fc.assert(
      fc.property(bounds, retryNumber, seed, (b, n, s) => {
        const d = fullJitter({ ...b, random: seededRandom(s) })(n);
        return d >= 0 && d <= ceiling(b, n);
      }),
    );
  });
});

describe('decorrelatedJitter', () => {
  it('is non-negative, finite and capped for any retry number', () => {
    fc.assert(
      fc.property(bounds, retryNumber, seed, (b, n, s) => {
        const d = decorrelatedJitter({ ...b, random: seededRandom(s) })(n);
        return d >= 0 && d <= b.maxMs && Number.isFinite(d);
      }),
    );
  });

  it('grows roughly exponentially: the median delay of retry 5 exceeds that of retry 1 many times', () => {
    const random = seededRandom(1);
    const b = decorrelatedJitter({ baseMs: 100, maxMs: 1_000_000, random });
    const median = (n: number) => {
      const xs = Array.from({ length: 201 }, () => b(n)).sort((x, y) => x - y);
      return xs[100]!;
    };
    const first = median(1);
    expect(first).toBeGreaterThan(50);
    expect(first).toBeLessThan(200);
    expect(median(5)).toBeGreaterThan(8 * first);
  });
});

describe('retry numbers below 1', () => {
  it('count as the first retry', () => {
    for (const n of [0, -3]) {
      expect(linear(100, 50)(n)).toBe(100);
      expect(exponential({ baseMs: 100, maxMs: 1_000 })(n)).toBe(100);
      expect(exponentialJitter({ baseMs: 100, maxMs: 1_000, random: () => 0.5 })(n)).toBe(100);
      expect(fullJitter({ baseMs: 100, maxMs: 1_000, random: () => 0.5 })(n)).toBe(50);
    }
  });
});

describe('the random draw', () => {
  it('exponentialJitter: a draw of 0 gives (1 − jitter)·d, a draw near 1 gives near (1 + jitter)·d', () => {
    const at = (r: number) =>
      exponentialJitter({ baseMs: 1_000, maxMs: 10_000, jitter: 0.3, random: () => r })(2);
    expect(at(0)).toBeCloseTo(1_400, 9);
    expect(at(0.5)).toBeCloseTo(2_000, 9);
    expect(at(0.75)).toBeCloseTo(2_300, 9);
    expect(at(0.999_999)).toBeCloseTo(2_600, 2);
  });

  it('decorrelatedJitter: delay n is baseMs · (f(t) − f(t − 1)) / 1.4 with t = n − 1 + random()', () => {
    const f = (t: number) => (t <= 0 ? 0 : 2 ** t * Math.tanh(Math.sqrt(4 * t)));
    const b = decorrelatedJitter({ baseMs: 100, maxMs: 1_000_000, random: () => 0.5 });
    expect(b(1)).toBeCloseTo((100 * (f(0.5) - f(-0.5))) / 1.4, 9);
    expect(b(2)).toBeCloseTo((100 * (f(1.5) - f(0.5))) / 1.4, 9);
    expect(b(4)).toBeCloseTo((100 * (f(3.5) - f(2.5))) / 1.4, 9);
  });
});

describe('bad input', () => {
  it.each([
    ['exponential', () => exponential({ baseMs: 1, base: 2 } as never)],
    ['exponentialJitter', () => exponentialJitter({ baseMs: 1, base: 2 } as never)],
    ['fullJitter', () => fullJitter({ baseMs: 1, base: 2 } as never)],
    ['decorrelatedJitter', () => decorrelatedJitter({ baseMs: 1, base: 2 } as never)],
  ])('%s names itself when it refuses an unknown option', (name, make) => {
    expect(make).toThrow(new TypeError(`unknown option "base" in ${name} options; did you mean "baseMs"?`));
  });

  it('linear refuses a negative maxMs, naming it', () => {
    expect(() => linear(1, 1, -1)).toThrow(/"maxMs".*-1/);
  });

  it.each([
    ['constant(-1)', () => constant(-1), /"ms".*-1/],
    ['constant(NaN)', () => constant(Number.NaN), /"ms".*NaN/],
    ['linear(-1)', () => linear(-1), /"baseMs"/],
    ['linear step NaN', () => linear(1, Number.NaN), /"stepMs"/],
    [
      'exponential maxMs < baseMs',
      () => exponential({ baseMs: 10, maxMs: 5 }),
      /"maxMs" \(5\).*"baseMs" \(10\)/,
    ],
    ['exponential maxMs Infinity', () => exponential({ baseMs: 10, maxMs: Infinity }), /"maxMs".*Infinity/],
    [
      'exponential factor 0.5',
      () => exponential({ factor: 0.5 }),
      /"factor" to be a finite number of at least 1, got 0.5/,
    ],
    [
      'exponential factor Infinity',
      () => exponential({ factor: Infinity }),
      /"factor" to be a finite number of at least 1/,
    ],
    ['exponentialJitter jitter 1.5', () => exponentialJitter({ jitter: 1.5 }), /"jitter".*1.5/],
    ['fullJitter random 3', () => fullJitter({ random: 3 as never }), /"random".*3/],
    ['decorrelatedJitter baseMs "x"', () => decorrelatedJitter({ baseMs: 'x' as never }), /"baseMs".*"x"/],
    ['options not an object', () => exponentialJitter(7 as never), /options.*7/],
  ])('%s throws a TypeError naming the option', (_name, make, message) => {
    expect(make).toThrow(TypeError);
    expect(make).toThrow(message);
  });
});
