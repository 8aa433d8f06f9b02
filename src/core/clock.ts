/**
 * Time for every pattern. Nothing else in bulwark reads the wall clock or starts a timer directly,
 * so tests can substitute {@link FakeClock} (from `bulwark/testing`) and never sleep.
 */

import { canAbort, offAbort, onAbort } from './abort.js';

/** An opaque handle returned by {@link Clock.setTimer}. */
export type TimerHandle = unknown;

/**
 * A source of time and timers.
 *
 * All times are milliseconds. `now()` and every `deadline` in bulwark are absolute times on the
 * same clock, so every policy of one pipeline must share one clock.
 */
export interface Clock {
  /** The current time in milliseconds (epoch-based for {@link systemClock}). */
  now(): number;
  /**
   * Resolves after `ms` milliseconds. Rejects at once with `signal.reason` if the signal is
   * already aborted or aborts while sleeping, and the timer is cleared.
   */
  sleep(ms: number, signal?: AbortSignal): Promise<void>;
  /**
   * Calls `callback` once after `ms` milliseconds. The cheap primitive behind timeouts: no promise
   * and no AbortController. Cancel it with {@link Clock.clearTimer}. Any delay is honoured, also
   * past 2^31-1 ms (a runtime timer's limit); a negative or NaN `ms` means 0 and `Infinity` never
   * fires (it can still be cleared).
   */
  setTimer(callback: () => void, ms: number): TimerHandle;
  /** Cancels a timer from {@link Clock.setTimer}; a fired or cleared timer is ignored. */
  clearTimer(handle: TimerHandle): void;
  /**
   * Optional: whether a pending timer keeps the process alive (Node's `ref`/`unref`). Shared
   * timers that only guard finished calls are released this way, so an idle process can exit.
   */
  keepAlive?(handle: TimerHandle, alive: boolean): void;
}

/**
 * Sleeps `ms` on any clock that can set and clear timers, honouring `signal`: rejects with
 * `signal.reason` at once if it is already aborted, or as soon as it aborts (clearing the timer).
 * Shared by {@link systemClock} and `FakeClock` so both abort the same way. Sleepers sharing one
 * signal share one real listener on it (`onAbort`), removed when the last of them wakes.
 */
export function sleepWith(clock: Clock, ms: number, signal?: AbortSignal): Promise<void> {
  if (signal === undefined) return new Promise((resolve) => clock.setTimer(resolve, ms));
  // Stryker disable next-line ConditionalExpression: a fast path: on the never-aborting signal the abortable path below subscribes nothing and wakes the same
  if (!canAbort(signal)) return new Promise((resolve) => clock.setTimer(resolve, ms));
  if (signal.aborted) return Promise.reject(signal.reason);
  return new Promise((resolve, reject) => {
    const aborted = (): void => {
      clock.clearTimer(handle);
      reject(signal.reason);
    };
    const handle = clock.setTimer(() => {
      offAbort(signal, aborted);
      resolve();
    }, ms);
    onAbort(signal, aborted);
  });
}

// performance.now() is monotonic; anchoring it to timeOrigin keeps values epoch-based, so a
// caller's `deadline: Date.now() + 500` means what it says.
// Read once: in Node the global `performance` is an accessor, a getter call on every read.
const runtimePerformance = performance;
const origin = runtimePerformance.timeOrigin;

/**
 * The longest delay a runtime timer takes as given. Node (like browsers) stores it as a signed
 * 32-bit integer and fires a longer `setTimeout` after 1 ms.
 */
export const MAX_TIMER_MS = 2_147_483_647;

/** The runtime timer functions {@link chainedTimers} builds on (injectable, so tests can drive them). */
export interface RuntimeTimers {
  setTimeout(callback: () => void, ms: number): unknown;
  clearTimeout(handle: unknown): void;
}

/** Sets whether a runtime timer keeps the process alive (Node's ref/unref); elsewhere a no-op. */
function refTimer(timer: unknown, alive: boolean): void {
  const t = timer as { ref?: () => unknown; unref?: () => unknown };
  if (alive) t.ref?.();
  else t.unref?.();
}

/**
 * A delay longer than {@link MAX_TIMER_MS}, waited out as a chain of runtime timers of at most that
 * length each; the last one calls back. It holds one runtime timer at a time, so clearing it and
 * setting its keep-alive act on whichever is current.
 */
class ChainedTimer {
  private readonly runtime: RuntimeTimers;
  private readonly callback: () => void;
  private remainingMs: number;
  private current: unknown;
  private alive = true;
  private cleared = false;

  constructor(runtime: RuntimeTimers, callback: () => void, ms: number) {
    this.runtime = runtime;
    this.callback = callback;
    this.remainingMs = ms;
    this.current = this.arm();
  }

  clear(): void {
    this.cleared = true;
    this.runtime.clearTimeout(this.current);
  }

  keepAlive(alive: boolean): void {
    this.alive = alive;
    refTimer(this.current, alive);
  }

  /** Arms the next link. Infinity stays Infinity, so an infinite delay re-arms forever and never fires. */
  private arm(): unknown {
    const ms = Math.min(this.remainingMs, MAX_TIMER_MS);
    this.remainingMs -= ms;
    const timer = this.runtime.setTimeout(this.fire, ms);
    if (!this.alive) refTimer(timer, false);
    return timer;
  }

  private readonly fire = (): void => {
    if (this.cleared) return;
    if (this.remainingMs > 0) this.current = this.arm();
    else this.callback();
  };
}

/**
 * Clock timers on a runtime's `setTimeout`/`clearTimeout` that honour any delay:
 *
 * - up to {@link MAX_TIMER_MS}: the runtime's own timer, returned as the handle (nothing added);
 * - longer: a chain of timers of at most MAX_TIMER_MS each (one re-arm per ~24.8 days), behind a
 *   handle of ours that `clearTimer` and `keepAlive` accept like any other;
 * - `Infinity`: never fires (re-arms as above), keeps the process alive like any timer unless
 *   `keepAlive(handle, false)`, and is cleared like any other;
 * - negative or NaN: 0, as Node treats them.
 *
 * Never throws for a numeric delay; what a runtime does with a non-number is the runtime's.
 */
export function chainedTimers(
  runtime: RuntimeTimers,
): Pick<Required<Clock>, 'setTimer' | 'clearTimer' | 'keepAlive'> {
  return {
    setTimer(callback, ms) {
      if (ms > MAX_TIMER_MS) return new ChainedTimer(runtime, callback, ms);
      // Stryker disable next-line EqualityOperator: they differ only for 0 and -0, and a runtime waits 0 ms for either
      // biome-ignore lint/complexity/useMathMinMax: the ternary maps NaN to 0 (Math.max keeps NaN)
      return runtime.setTimeout(callback, ms > 0 ? ms : 0);
    },
    clearTimer(handle) {
      if (handle instanceof ChainedTimer) handle.clear();
      else runtime.clearTimeout(handle);
    },
    keepAlive(handle, alive) {
      if (handle instanceof ChainedTimer) handle.keepAlive(alive);
      else refTimer(handle, alive);
    },
  };
}

// The globals are looked up at each call, so a runtime (or a test) that replaces them is honoured.
const runtimeTimers = chainedTimers({
  setTimeout: (callback, ms) => setTimeout(callback, ms),
  clearTimeout: (handle) => clearTimeout(handle as ReturnType<typeof setTimeout>),
});

/**
 * The real clock: monotonic, epoch-based milliseconds and the runtime's timers. Any delay is
 * honoured, also past 2^31-1 ms (which Node would fire after 1 ms): see {@link chainedTimers}.
 */
export const systemClock: Clock = {
  now: () => origin + runtimePerformance.now(),
  sleep(ms, signal) {
    return sleepWith(systemClock, ms, signal);
  },
  ...runtimeTimers,
};
