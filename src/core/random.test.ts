import { afterEach, describe, expect, it, vi } from 'vitest';
import { cryptoRandom } from './random.js';

afterEach(() => {
  vi.restoreAllMocks();
});

describe('cryptoRandom', () => {
  it('draws finite, distinct values in [0, 1), across several refills of its pool', () => {
    const values = Array.from({ length: 1_000 }, () => cryptoRandom());
    for (const value of values) {
      expect(Number.isFinite(value)).toBe(true);
      expect(value).toBeGreaterThanOrEqual(0);
      expect(value).toBeLessThan(1);
    }
    // 1 000 draws of 32 random bits: a repeat is a one-in-ten-thousand event, a few would be a bug.
    expect(new Set(values).size).toBeGreaterThan(990);
    expect(values.some((v) => v < 0.5) && values.some((v) => v >= 0.5)).toBe(true);
  });

  it('asks the platform CSPRNG once per batch of draws, not once per draw', () => {
    const fill = vi.spyOn(crypto, 'getRandomValues');
    for (let i = 0; i < 1_024; i++) cryptoRandom();
    expect(fill.mock.calls.length).toBeGreaterThanOrEqual(4);
    expect(fill.mock.calls.length).toBeLessThanOrEqual(5);
  });

  it('maps the 32 random bits onto [0, 1): all zeros give 0, all ones just under 1', () => {
    let bits = 0;
    vi.spyOn(crypto, 'getRandomValues').mockImplementation(
      <T extends ArrayBufferView | null>(array: T): T => {
        (array as unknown as Uint32Array).fill(bits);
        return array;
      },
    );
    // Whatever is left in the pool (at most one batch) comes first; the last batch drawn is all new.
    const draw = (): number[] => Array.from({ length: 512 }, () => cryptoRandom()).slice(-256);
    const zeros = draw();
    expect(new Set(zeros)).toEqual(new Set([0]));
    bits = 0xffff_ffff;
    const ones = draw();
    expect(new Set(ones)).toEqual(new Set([0xffff_ffff / 2 ** 32]));
    expect(ones[0]).toBeLessThan(1);
  });
});
