/**
 * Time for every pattern. Nothing else in bulwark reads the wall clock or starts a timer directly,
 * so tests can substitute {@link FakeClock} (from `bulwark/testing`) and never sleep.
 */

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
   * and no AbortController. Cancel it with {@link Clock.clearTimer}.
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
 * Sleeps `ms` on any clock that can set and clear timers, honouring `signal`. Shared by
 * {@link systemClock} and `FakeClock` so both abort the same way.
 */
export function sleepWith(clock: Clock, ms: number, signal?: AbortSignal): Promise<void> {
  if (signal === undefined) return new Promise((resolve) => clock.setTimer(resolve, ms));
  if (signal.aborted) return Promise.reject(signal.reason);
  return new Promise((resolve, reject) => {
    const onAbort = (): void => {
      clock.clearTimer(handle);
      reject(signal.reason);
    };
    const handle = clock.setTimer(() => {
      signal.removeEventListener('abort', onAbort);
      resolve();
    }, ms);
    signal.addEventListener('abort', onAbort, { once: true });
  });
}

// performance.now() is monotonic; anchoring it to timeOrigin keeps values epoch-based, so a
// caller's `deadline: Date.now() + 500` means what it says.
const origin = performance.timeOrigin;

/** The real clock: monotonic, epoch-based milliseconds and the runtime's timers. */
export const systemClock: Clock = {
  now: () => origin + performance.now(),
  sleep(ms, signal) {
    return sleepWith(systemClock, ms, signal);
  },
  setTimer: (callback, ms) => setTimeout(callback, ms),
  clearTimer: (handle) => clearTimeout(handle as ReturnType<typeof setTimeout>),
  keepAlive(handle, alive) {
    const timer = handle as { ref?: () => unknown; unref?: () => unknown };
    if (alive) timer.ref?.();
    else timer.unref?.();
  },
};
