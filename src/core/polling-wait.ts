/**
 * Waiting for something another caller (maybe in another process) holds — a lock, an idempotency
 * key in progress: woken by the store's watch when it can, and polling as well (a notification may
 * be lost), with a growing delay that never passes the holder's lease or the waiter's own limit.
 */
import type { Clock, TimerHandle } from './clock.js';
import type { Random } from './random.js';

/** First poll delay, doubled after each poll up to {@link MAX_POLL_MS}. */
export const FIRST_POLL_MS = 25;
const MAX_POLL_MS = 1_000;

/**
 * A store's optional `watch(key, wake)`: calls `wake` (later, never synchronously) when `key` may
 * have become free, and returns the unsubscribe function.
 */
export type Watch = (key: string, wake: () => void) => () => void;

/** One waiter: `next()` resolves when it is time to try again. */
export class PollingWait {
  private pollMs = FIRST_POLL_MS;
  private woken = false;
  private wakeUp: (() => void) | undefined;
  private readonly unwatch: (() => void) | undefined;

  /**
   * Waits on `key` until `until` (`clock` time), watching it through `watch` when the store has
   * one (call it as the store's method: `store.watch?.bind(store)` or an arrow). With `random`,
   * each poll delay is jittered down to between half and all of itself (waiters on one key then
   * do not poll in step).
   */
  constructor(
    watch: Watch | undefined,
    key: string,
    private readonly clock: Clock,
    /** When the waiter gives up (`clock` time). */
    readonly until: number,
    private readonly random?: Random,
  ) {
    this.unwatch = watch?.(key, () => {
      this.woken = true;
      this.wakeUp?.();
    });
  }

  /** The next poll delay before jitter, in ms: a hint of when to try again. */
  get pollDelayMs(): number {
    return this.pollMs;
  }

  /** Time left before {@link until}, in ms (0 when it has passed). */
  remaining(): number {
    return Math.max(0, this.until - this.clock.now());
  }

  /**
   * Resolves after a wake-up, after the next poll delay (at most `retryAfterMs`, the holder's
   * remaining lease, and at most the time left), or rejects when `signal` aborts.
   */
  next(retryAfterMs: number, signal: AbortSignal | undefined): Promise<void> {
    const poll = this.random === undefined ? this.pollMs : this.pollMs * (0.5 + this.random() / 2);
    const delay = Math.min(poll, retryAfterMs, this.remaining());
    this.pollMs = Math.min(this.pollMs * 2, MAX_POLL_MS);
    return new Promise<void>((resolve, reject) => {
      let timer: TimerHandle | undefined;
      const done = (): void => {
        this.wakeUp = undefined;
        // A user's Clock need not take undefined.
        // Stryker disable next-line ConditionalExpression: (true) the bundled clocks ignore clearTimer(undefined)
        if (timer !== undefined) this.clock.clearTimer(timer);
        signal?.removeEventListener('abort', onAbort);
      };
      const onAbort = (): void => {
        done();
        reject((signal as AbortSignal).reason);
      };
      if (signal?.aborted) return onAbort();
      if (this.woken) {
        this.woken = false;
        return resolve();
      }
      this.wakeUp = () => {
        this.woken = false;
        done();
        resolve();
      };
      timer = this.clock.setTimer(() => {
        done();
        resolve();
      }, delay);
      signal?.addEventListener('abort', onAbort);
    });
  }

  /** Stops watching. */
  close(): void {
    this.unwatch?.();
  }
}
