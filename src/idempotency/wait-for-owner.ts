/**
 * A duplicate request waiting for the first one: woken by the store's `watch` when it can, and
 * polling as well (a notification may be lost), with a growing delay that never passes the first
 * request's lease or the waiter's own limit.
 */
import type { Clock, TimerHandle } from '../core/clock.js';
import type { IdempotencyStore } from './store.js';

/** First poll delay, doubled after each poll up to {@link MAX_POLL_MS}. */
const FIRST_POLL_MS = 25;
const MAX_POLL_MS = 1_000;

/** One waiter: `next()` resolves when it is time to claim again. */
export class OwnerWait {
  private pollMs = FIRST_POLL_MS;
  private woken = false;
  private wakeUp: (() => void) | undefined;
  private readonly unwatch: (() => void) | undefined;

  constructor(
    store: IdempotencyStore<unknown>,
    key: string,
    private readonly clock: Clock,
    /** When the waiter gives up (`clock` time). */
    readonly until: number,
  ) {
    this.unwatch = store.watch?.(key, () => {
      this.woken = true;
      this.wakeUp?.();
    });
  }

  /** Time left before {@link until}, in ms (0 when it has passed). */
  remaining(): number {
    return Math.max(0, this.until - this.clock.now());
  }

  /**
   * Resolves after a wake-up, after the next poll delay (at most `retryAfterMs`, the first
   * request's remaining lease, and at most the time left), or rejects when `signal` aborts.
   */
  next(retryAfterMs: number, signal: AbortSignal | undefined): Promise<void> {
    const delay = Math.min(this.pollMs, retryAfterMs, this.remaining());
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
