import { describe, expect, it } from 'vitest';
import { FakeClock } from './fake-clock.js';
import { seededRandom } from './seeded-random.js';

describe('FakeClock', () => {
  it('starts at the given time and stands still until advanced', async () => {
    const clock = new FakeClock(1_000);
    expect(clock.now()).toBe(1_000);
    await clock.advance(250);
    expect(clock.now()).toBe(1_250);
  });

  it('fires sleepers in time order, ties in the order they were set, with now() at each due time', async () => {
    const clock = new FakeClock();
    const seen: string[] = [];
    for (const [name, ms] of [
      ['c', 30],
      ['a', 10],
      ['b1', 20],
      ['b2', 20],
    ] as const) {
      void clock.sleep(ms).then(() => seen.push(`${name}@${clock.now()}`));
    }
    await clock.advance(25);
    expect(seen).toEqual(['a@10', 'b1@20', 'b2@20']);
    await clock.advance(5);
    expect(seen).toEqual(['a@10', 'b1@20', 'b2@20', 'c@30']);
    expect(clock.pendingTimers).toBe(0);
  });

  it('lets microtasks run between timers, so a chain of sleeps completes within one advance', async () => {
    const clock = new FakeClock();
    const times: number[] = [];
    const chain = (async () => {
      for (let i = 0; i < 3; i++) {
        await clock.sleep(10);
        await Promise.resolve();
        times.push(clock.now());
      }
    })();
    await clock.advance(30);
    await chain;
    expect(times).toEqual([10, 20, 30]);
  });

  it('does not fire timers due after the target', async () => {
    const clock = new FakeClock();
    let fired = false;
    clock.setTimer(() => {
      fired = true;
    }, 100);
    await clock.advance(99);
    expect(fired).toBe(false);
    await clock.advance(1);
    expect(fired).toBe(true);
  });

  it('rejects a sleep with the abort reason at once and clears its timer', async () => {
    const clock = new FakeClock();
    const controller = new AbortController();
    const sleeping = clock.sleep(1_000, controller.signal);
    const reason = new Error('stop');
    controller.abort(reason);
    await expect(sleeping).rejects.toBe(reason);
    expect(clock.pendingTimers).toBe(0);
  });

  it('rejects a sleep on an already-aborted signal without setting a timer', async () => {
    const clock = new FakeClock();
    const reason = new Error('gone');
    await expect(clock.sleep(10, AbortSignal.abort(reason))).rejects.toBe(reason);
    expect(clock.pendingTimers).toBe(0);
  });

  it('clearTimer cancels; clearing twice or an unknown handle is harmless', async () => {
    const clock = new FakeClock();
    let fired = 0;
    const handle = clock.setTimer(() => fired++, 5);
    clock.clearTimer(handle);
    clock.clearTimer(handle);
    clock.clearTimer({});
    await clock.advance(10);
    expect(fired).toBe(0);
  });

  it('next() jumps to the next timer', async () => {
    const clock = new FakeClock();
    let fired = false;
    clock.setTimer(() => {
      fired = true;
    }, 42);
    expect(await clock.next()).toBe(true);
    expect(fired).toBe(true);
    expect(clock.now()).toBe(42);
    expect(await clock.next()).toBe(false);
  });

  it('rejects invalid input', async () => {
    expect(() => new FakeClock(-1)).toThrow(/"startMs".*-1/);
    await expect(new FakeClock().advance(Number.NaN)).rejects.toThrow(/"ms".*NaN/);
  });
});

describe('seededRandom', () => {
  it('is repeatable and in [0, 1)', () => {
    const a = seededRandom(7);
    const b = seededRandom(7);
    for (let i = 0; i < 1_000; i++) {
      const x = a();
      expect(x).toBe(b());
      expect(x).toBeGreaterThanOrEqual(0);
      expect(x).toBeLessThan(1);
    }
  });
});
