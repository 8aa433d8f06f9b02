import { describe, expect, it } from 'vitest';
import { FakeClock } from '../testing/fake-clock.js';
import { SlidingWindow } from './sliding-window.js';

describe('SlidingWindow', () => {
  it('sums each counter over the window and drops buckets that slide out', async () => {
    const clock = new FakeClock();
    const window = new SlidingWindow(clock, 2, 1_000, 10);
    window.add(0);
    window.add(1, 3);
    await clock.advance(500);
    window.add(0, 2);
    expect([window.total(0), window.total(1)]).toEqual([3, 3]);
    await clock.advance(500); // the bucket of t=0 falls out
    expect([window.total(0), window.total(1)]).toEqual([2, 0]);
    await clock.advance(5_000);
    expect(window.total(0)).toBe(0);
  });

  it('stays exact across many rotations (no drift)', async () => {
    const clock = new FakeClock();
    const window = new SlidingWindow(clock, 1, 100, 4);
    for (let i = 0; i < 1_000; i++) {
      window.add(0);
      await clock.advance(25);
    }
    // one add per 25 ms bucket; the window holds the current bucket and three before it
    expect(window.total(0)).toBe(3);
  });

  it('keeps counting into the newest bucket if the clock steps back, and clear() forgets', () => {
    let now = 10_000;
    const clock = { now: () => now, sleep: async () => {}, setTimer: () => 0, clearTimer: () => {} };
    const window = new SlidingWindow(clock, 1, 1_000);
    window.add(0);
    now = 5_000;
    window.add(0);
    expect(window.total(0)).toBe(2);
    window.clear();
    expect(window.total(0)).toBe(0);
  });

  it('a window made on a clock far from zero counts from then and drops what slides out', async () => {
    const clock = new FakeClock(1_000_000);
    const window = new SlidingWindow(clock, 1, 1_000, 10);
    window.add(0, 2);
    await clock.advance(900);
    window.add(0);
    expect(window.total(0)).toBe(3);
    await clock.advance(100); // the bucket of the first add falls out
    expect(window.total(0)).toBe(1);
    await clock.advance(1_000);
    expect(window.total(0)).toBe(0);
  });

  it('a clock that steps back and then forward again loses none of the counts still in the window', () => {
    let now = 10_000;
    const clock = { now: () => now, sleep: async () => {}, setTimer: () => 0, clearTimer: () => {} };
    const window = new SlidingWindow(clock, 1, 1_000, 10);
    window.add(0);
    now = 5_100; // steps back to a different bucket of the ring
    window.add(0);
    now = 10_000;
    window.add(0);
    expect(window.total(0)).toBe(3);
    now = 10_999; // still the newest bucket: nothing dropped
    expect(window.total(0)).toBe(3);
    now = 10_900; // the last bucket of the window that still holds t=10 000
    expect(window.total(0)).toBe(3);
    now = 11_000; // the bucket of t=10 000 falls out
    expect(window.total(0)).toBe(0);
  });
});
