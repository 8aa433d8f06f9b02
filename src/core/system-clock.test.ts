import { afterEach, describe, expect, it, vi } from 'vitest';
import { hedge } from '../hedge/hedge.js';
import { rateLimiter } from '../rate-limit/rate-limiter.js';
import { timeout } from '../timeout/timeout.js';
import { chainedTimers, MAX_TIMER_MS, type RuntimeTimers, systemClock } from './clock.js';

const day = 86_400_000;

/** A runtime whose timers fire only when the test says so; records every arm and clear. */
function manualRuntime() {
  const armed: { callback: () => void; ms: number; refed: boolean; cleared: boolean }[] = [];
  const runtime: RuntimeTimers = {
    setTimeout(callback, ms) {
      const timer = {
        callback,
        ms,
        refed: true,
        cleared: false,
        ref() {
          timer.refed = true;
        },
        unref() {
          timer.refed = false;
        },
      };
      armed.push(timer);
      return timer;
    },
    clearTimeout(handle) {
      (handle as { cleared: boolean }).cleared = true;
    },
  };
  /** Fires the most recently armed timer (the one a chain is waiting on). */
  const fireLatest = () => {
    const timer = armed.at(-1)!;
    expect(timer.cleared).toBe(false);
    timer.callback();
  };
  return { runtime, armed, fireLatest };
}

const realDelay = (ms: number) => new Promise<void>((resolve) => systemClock.setTimer(resolve, ms));

/** Watches the real timers armed for more than a second (the long ones) and which were cleared. */
function watchLongRealTimers() {
  const set = vi.spyOn(globalThis, 'setTimeout');
  const clear = vi.spyOn(globalThis, 'clearTimeout');
  const long = () => set.mock.results.filter((_, i) => (set.mock.calls[i]![1] ?? 0) > 1_000);
  return {
    /** How many long real timers were armed. */
    armed: () => long().length,
    /** How many long real timers are neither cleared nor fired (none of these fire within a test). */
    pending: () => long().filter((r) => !clear.mock.calls.some(([handle]) => handle === r.value)).length,
    /** The real timer armed last. */
    latest: () => set.mock.results.at(-1)!.value as NodeJS.Timeout,
  };
}

describe('chainedTimers (the chaining logic behind systemClock)', () => {
  it('hands a delay up to MAX_TIMER_MS straight to the runtime and returns its own handle', () => {
    const { runtime, armed } = manualRuntime();
    const timers = chainedTimers(runtime);
    const handle = timers.setTimer(() => {}, MAX_TIMER_MS);
    expect(armed.map((t) => t.ms)).toEqual([MAX_TIMER_MS]);
    expect(handle).toBe(armed[0]);
  });

  it('chains max-length timers for a longer delay and calls back once, after the last', () => {
    const { runtime, armed, fireLatest } = manualRuntime();
    const callback = vi.fn();
    chainedTimers(runtime).setTimer(callback, 2 * MAX_TIMER_MS + 5);
    fireLatest();
    fireLatest();
    expect(callback).not.toHaveBeenCalled();
    fireLatest();
    expect(callback).toHaveBeenCalledTimes(1);
    expect(armed.map((t) => t.ms)).toEqual([MAX_TIMER_MS, MAX_TIMER_MS, 5]);
  });

  it('clearTimer stops a chain mid-way: the current runtime timer is cleared, nothing re-arms', () => {
    const { runtime, armed, fireLatest } = manualRuntime();
    const timers = chainedTimers(runtime);
    const callback = vi.fn();
    const handle = timers.setTimer(callback, 3 * MAX_TIMER_MS);
    fireLatest();
    timers.clearTimer(handle);
    expect(armed).toHaveLength(2);
    expect(armed[1]!.cleared).toBe(true);
    armed[1]!.callback(); // a runtime that fires a cleared timer anyway changes nothing
    expect(armed).toHaveLength(2);
    expect(callback).not.toHaveBeenCalled();
    timers.clearTimer(handle); // clearing twice is harmless
  });

  it('keepAlive applies to whichever runtime timer is current, also the ones armed later', () => {
    const { runtime, armed, fireLatest } = manualRuntime();
    const timers = chainedTimers(runtime);
    const handle = timers.setTimer(() => {}, 3 * MAX_TIMER_MS);
    timers.keepAlive(handle, false);
    expect(armed[0]!.refed).toBe(false);
    fireLatest();
    expect(armed[1]!.refed).toBe(false);
    timers.keepAlive(handle, true);
    expect(armed[1]!.refed).toBe(true);
    fireLatest();
    expect(armed[2]!.refed).toBe(true);
  });

  it('Infinity never fires, re-arms one max-length timer at a time and stays clearable', () => {
    const { runtime, armed, fireLatest } = manualRuntime();
    const timers = chainedTimers(runtime);
    const callback = vi.fn();
    const handle = timers.setTimer(callback, Infinity);
    for (let i = 0; i < 5; i++) fireLatest();
    expect(callback).not.toHaveBeenCalled();
    expect(armed.map((t) => t.ms)).toEqual(Array(6).fill(MAX_TIMER_MS));
    timers.clearTimer(handle);
    expect(armed.at(-1)!.cleared).toBe(true);
  });

  it('clearTimer and keepAlive on a delay up to MAX_TIMER_MS act on the runtime timer itself', () => {
    const { runtime, armed } = manualRuntime();
    const timers = chainedTimers(runtime);
    const handle = timers.setTimer(() => {}, 1_000);
    timers.keepAlive(handle, false);
    expect(armed[0]!.refed).toBe(false);
    timers.keepAlive(handle, true);
    expect(armed[0]!.refed).toBe(true);
    timers.clearTimer(handle);
    expect(armed[0]!.cleared).toBe(true);
  });

  it('keepAlive is a no-op on a runtime whose timers have no ref/unref (a browser, a plain number)', () => {
    let next = 0;
    const runtime: RuntimeTimers = { setTimeout: () => ++next, clearTimeout: () => {} };
    const timers = chainedTimers(runtime);
    const short = timers.setTimer(() => {}, 1_000);
    const long = timers.setTimer(() => {}, 2 * MAX_TIMER_MS);
    for (const alive of [false, true]) {
      expect(() => timers.keepAlive(short, alive)).not.toThrow();
      expect(() => timers.keepAlive(long, alive)).not.toThrow();
    }
  });

  it.each([NaN, -1, -Infinity])('%d ms means 0 ms, as in Node', (ms) => {
    const { runtime, armed } = manualRuntime();
    chainedTimers(runtime).setTimer(() => {}, ms);
    expect(armed.map((t) => t.ms)).toEqual([0]);
  });
});

describe('systemClock.now()', () => {
  it('is epoch-based milliseconds, as Date.now() is, and moves forward with real time', async () => {
    const before = systemClock.now();
    expect(Math.abs(before - Date.now())).toBeLessThan(1_000);
    await realDelay(5);
    expect(systemClock.now()).toBeGreaterThan(before);
  });
});

describe('systemClock with delays past 2^31-1 ms (real time)', () => {
  afterEach(() => {
    vi.restoreAllMocks();
  });

  it('2^31 ms and 30 days have not fired after 50 ms; each armed one real timer; clearTimer frees them', async () => {
    const real = watchLongRealTimers();
    const fired = vi.fn();
    const handles = [systemClock.setTimer(fired, 2 ** 31), systemClock.setTimer(fired, 30 * day)];
    await realDelay(50);
    expect(fired).not.toHaveBeenCalled();
    expect(real.armed()).toBe(2); // no re-arming while waiting
    expect(real.pending()).toBe(2);
    for (const handle of handles) systemClock.clearTimer(handle);
    expect(real.pending()).toBe(0);
  });

  it('keepAlive(handle, false) unrefs the real timer behind a long delay', () => {
    const real = watchLongRealTimers();
    const handle = systemClock.setTimer(() => {}, 45 * day);
    const timer = real.latest();
    expect(timer.hasRef()).toBe(true);
    systemClock.keepAlive!(handle, false);
    expect(timer.hasRef()).toBe(false);
    systemClock.clearTimer(handle);
  });

  it('an Infinity delay never fires and is clearable; NaN and negative fire at once', async () => {
    const real = watchLongRealTimers();
    const never = vi.fn();
    const handle = systemClock.setTimer(never, Infinity);
    await Promise.all([
      new Promise<void>((resolve) => systemClock.setTimer(resolve, NaN)),
      new Promise<void>((resolve) => systemClock.setTimer(resolve, -5)),
      realDelay(50),
    ]);
    expect(never).not.toHaveBeenCalled();
    expect(real.pending()).toBe(1);
    systemClock.clearTimer(handle);
    expect(real.pending()).toBe(0);
  });

  it('a sleep of 30 days does not resolve within 50 ms and its abort clears it', async () => {
    const real = watchLongRealTimers();
    const controller = new AbortController();
    const slept = vi.fn();
    const sleeping = systemClock.sleep(30 * day, controller.signal).then(slept, (e: unknown) => e);
    await realDelay(50);
    expect(slept).not.toHaveBeenCalled();
    controller.abort(new Error('enough'));
    expect(await sleeping).toMatchObject({ message: 'enough' });
    expect(real.armed()).toBe(1);
    expect(real.pending()).toBe(0);
  });

  it('hedge({ delayMs: 30 days }) on systemClock does not hedge within 50 ms', async () => {
    const onHedge = vi.fn();
    const policy = hedge({ delayMs: 30 * day, onHedge });
    const op = vi.fn(() => realDelay(50).then(() => 'primary'));
    expect(await policy.execute(op)).toBe('primary');
    expect(op).toHaveBeenCalledTimes(1);
    expect(onHedge).not.toHaveBeenCalled();
  });

  it('a 30-day timeout re-arms its shared timer a bounded number of times (not every ms)', async () => {
    const real = watchLongRealTimers();
    const policy = timeout(30 * day);
    expect(await policy.execute(() => realDelay(50).then(() => 'done'))).toBe('done');
    await realDelay(20);
    expect(real.armed()).toBe(1);
  });

  it('rateLimiter.wait with maxWaitMs of 45 days waits (no early refusal, no re-arm loop) until aborted', async () => {
    const real = watchLongRealTimers();
    const limiter = rateLimiter({ algorithm: 'token-bucket', limit: 1, periodMs: 30 * day });
    expect((await limiter.take('k')).allowed).toBe(true);
    const controller = new AbortController();
    const settled = vi.fn();
    const waiting = limiter
      .wait('k', { maxWaitMs: 45 * day, signal: controller.signal })
      .then(settled, (e) => e);
    await realDelay(50);
    expect(settled).not.toHaveBeenCalled();
    expect(real.armed()).toBeLessThanOrEqual(2); // its sleep (and at most a deadline timer), never a loop
    controller.abort(new Error('gave up waiting'));
    expect(await waiting).toMatchObject({ message: 'gave up waiting' });
    expect(real.pending()).toBe(0);
  });
});
