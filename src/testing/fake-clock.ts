import { type Clock, sleepWith, type TimerHandle } from '../core/clock.js';
import { nonNegative } from '../core/validate.js';

interface FakeTimer {
  readonly time: number;
  readonly seq: number;
  readonly callback: () => void;
  /** Whether it keeps the process alive (see {@link FakeClock.keepAlive}); new timers do. */
  alive: boolean;
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
    const timer: FakeTimer = { time: this.current + delay, seq: this.seq++, callback, alive: true };
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

  /**
   * Records whether a pending timer keeps the process alive, as Node's `ref`/`unref` would (a
   * shared timer that only guards finished calls is released this way). Fired, cleared and unknown
   * handles are ignored. The timer fires the same either way: only {@link FakeClock.aliveTimers}
   * tells them apart.
   */
  keepAlive(handle: TimerHandle, alive: boolean): void {
    const timer = handle as FakeTimer;
    if (this.timers.includes(timer)) timer.alive = alive;
  }

  /**
   * How many timers and sleepers are waiting, released or not. A `timeout` keeps its shared
   * deadline timer armed after a call that finished in time (released, see
   * {@link FakeClock.aliveTimers}) until that deadline passes.
   */
  get pendingTimers(): number {
    return this.timers.length;
  }

  /**
   * How many waiting timers and sleepers would keep a real process alive: every pending timer
   * except those released with `keepAlive(handle, false)`. Once every call has settled this must be
   * 0, or something leaked a timer.
   */
  get aliveTimers(): number {
    let alive = 0;
    for (const timer of this.timers) if (timer.alive) alive++;
    return alive;
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
