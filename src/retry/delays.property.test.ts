/**
 * `delays(list)`: the delay before retry n is exactly `list[min(n − 1, length − 1)]`, for any list
 * and any retry number; a bad list is a TypeError naming the entry.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { FakeClock } from '../testing/fake-clock.js';
import { delays } from './backoff.js';
import { retry } from './retry.js';

const list = fc.array(fc.double({ min: 0, max: 1e9, noNaN: true }), { minLength: 1, maxLength: 50 });

describe('delays(list)', () => {
  it('returns exactly list[min(n − 1, length − 1)] for any list and retry number n ≥ 1', () => {
    fc.assert(
      fc.property(list, fc.integer({ min: 1, max: 1_000 }), (ms, n) => {
        expect(delays(ms)(n)).toBe(ms[Math.min(n - 1, ms.length - 1)]);
      }),
    );
  });

  it('is an entry of the list for any number at all (below 1, fractional, NaN, Infinity)', () => {
    fc.assert(
      fc.property(list, fc.double(), (ms, n) => {
        expect(ms).toContain(delays(ms)(n));
      }),
    );
    expect([0, 1.9, Number.NaN, Infinity].map((n) => delays([10, 20, 30])(n))).toEqual([10, 10, 10, 30]);
  });

  it('copies the list: changing it afterwards changes nothing', () => {
    const ms = [100, 500];
    const backoff = delays(ms);
    ms[0] = 9_999;
    ms.push(7);
    expect([1, 2, 3].map((n) => backoff(n))).toEqual([100, 500, 500]);
  });

  it.each([
    [[], /"delays" to be a non-empty array of milliseconds, got an array/],
    [undefined, /"delays" to be a non-empty array of milliseconds, got undefined/],
    [100, /"delays" to be a non-empty array of milliseconds, got 100/],
    [[100, -5], /"delays\[1\]" to be a non-negative finite number, got -5/],
    [[Number.NaN], /"delays\[0\]" to be a non-negative finite number, got NaN/],
    [[1, Infinity], /"delays\[1\]" to be a non-negative finite number, got Infinity/],
    [[1, '2'], /"delays\[1\]" to be a non-negative finite number, got "2"/],
    // biome-ignore lint/suspicious/noSparseArray: a hole is the case under test
    [[1, , 3], /"delays\[1\]" to be a non-negative finite number, got undefined/],
  ])('refuses %o with a TypeError naming it', (bad, message) => {
    expect(() => delays(bad as never)).toThrow(TypeError);
    expect(() => delays(bad as never)).toThrow(message);
  });

  it('drives a retry: waits 100, 500, then 2 000 ms for every later retry; maxAttempts decides how many', async () => {
    const clock = new FakeClock();
    const starts: number[] = [];
    const call = retry({ clock, maxAttempts: 5, backoff: delays([100, 500, 2_000]) })
      .execute(() => {
        starts.push(clock.now());
        throw Object.assign(new Error('reset'), { code: 'ECONNRESET' });
      })
      .catch(() => undefined);
    await clock.advance(10_000);
    await call;
    expect(starts).toEqual([0, 100, 600, 2_600, 4_600]);
  });
});
