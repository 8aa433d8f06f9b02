import { type Clock, sleepWith, type TimerHandle } from '../core/clock.js';
import { nonNegative } from '../core/validate.js';

interface FakeTimer {
  readonly time: number;
  readonly seq: number;
  readonly callback: () => void;
}

// Lets every queued microtask (and the promise chains they start) run before the next timer fires.
const flush: () => Promise<void> =
  typeof setImmediate === 'function'
    ? () => new Promise((resolve) => setImmediate(resolve))
    : () => new Promise((resolve) => setTimeout(resolve, 0));

/**
 * A manual clock for deterministic tests. Time stands still until {@link FakeClock.advance} moves
 * it; sleepers and timers then fire in time order (ties in the order they were set), with all
 * pending microtasks run before and after each one, so code awaiting a sleep resumes before the
 * next timer fires.
 *
 * @example
 * const clock = new FakeClock();
 * const call = retry({ clock, backoff: constant(100) }).execute(flaky);
 * await clock.advance(100); // the retry sleeps exactly 100 ms, no real time passes
 */
export class FakeClock implements Clock {
  private current: number;
  private timers: FakeTimer[] = [];
  private seq = 0;

  /** @param startMs the initial value of `now()` (default 0). */
  constructor(startMs = 0) {
    this.current = nonNegative('startMs', startMs);
  }

  /** The fake current time in milliseconds. */
  now(): number {
    return this.current;
  }

  /** Resolves when the clock has been advanced by `ms`; rejects with `signal.reason` on abort. */
  sleep(ms: number, signal?: AbortSignal): Promise<void> {
    return sleepWith(this, ms, signal);
  }

  /** Registers `callback` to run when the clock reaches now + `ms` (negative or NaN counts as 0). */
  setTimer(callback: () => void, ms: number): TimerHandle {
    // biome-ignore lint/complexity/useMathMinMax: the ternary maps NaN to 0 (Math.max keeps NaN)
    const delay = ms > 0 ? ms : 0;
    const timer: FakeTimer = { time: this.current + delay, seq: this.seq++, callback };
    // Keep the list sorted by (time, seq): insert after every timer due at or before this one.
    let i = this.timers.length;
    while (i > 0 && this.timers[i - 1]!.time > timer.time) i--;
    this.timers.splice(i, 0, timer);
    return timer;
  }

  /** Cancels a timer; unknown, fired or cleared handles are ignored. */
  clearTimer(handle: TimerHandle): void {
    const i = this.timers.indexOf(handle as FakeTimer);
    if (i !== -1) this.timers.splice(i, 1);
  }

  /** How many timers and sleepers are waiting: a test can assert none leaked. */
  get pendingTimers(): number {
    return this.timers.length;
  }

  /**
   * Moves time forward by `ms`, firing every timer due on the way in time order and letting
   * microtasks run between them. Timers set while advancing fire too when they fall due within
   * the same advance.
   */
  async advance(ms: number): Promise<void> {
    nonNegative('ms', ms);
    const target = this.current + ms;
    await flush();
    for (;;) {
      const next = this.timers[0];
      if (next === undefined || next.time > target) break;
      this.timers.shift();
      if (next.time > this.current) this.current = next.time;
      next.callback();
      await flush();
    }
    this.current = target;
    await flush();
  }

  /** Advances to the next due timer (if any) and fires it; returns false when none is waiting. */
  async next(): Promise<boolean> {
    const next = this.timers[0];
    if (next === undefined) return false;
    await this.advance(Math.max(0, next.time - this.current));
    return true;
  }
}
