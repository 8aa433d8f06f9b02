import { canAbort } from '../core/abort.js';
import type { Clock, TimerHandle } from '../core/clock.js';
import { isThenable } from '../core/policy.js';
import { RateLimitedError } from './errors.js';
import type { RateLimitResult } from './store.js';

/** Takes `cost` from `key` (the limiter's take, store failures and all). */
export type Take = (key: string, cost: number) => RateLimitResult | Promise<RateLimitResult>;

interface Waiter {
  readonly cost: number;
  /** Absolute time (limiter clock) after which the waiter gives up; Infinity for none. */
  readonly deadline: number;
  readonly signal: AbortSignal | undefined;
  readonly resolve: (result: RateLimitResult) => void;
  readonly reject: (error: unknown) => void;
  done: boolean;
  timer: TimerHandle | undefined;
  onAbort: (() => void) | undefined;
  /** The last refusal seen for this waiter, for the error when it gives up. */
  lastRefusal: RateLimitResult | undefined;
}

/** The waiters of one key, served first come, first served. */
interface KeyQueue {
  readonly waiters: Waiter[];
  /** Ends the pump's current sleep early (the head left). */
  wake: (() => void) | undefined;
  sleepTimer: TimerHandle | undefined;
}

/**
 * `limiter.wait()`: per key, a FIFO of waiters of which only the head asks the store, sleeping
 * exactly `retryAfterMs` between refusals. A key with 100 waiters therefore costs one store call per
 * refill, not 100 (no thundering herd), and waiters are served in arrival order (a large cost at
 * the head holds back smaller ones behind it, as with Go's `rate.Limiter.Wait`). Fairness holds
 * within one process; waiters in other processes poll the shared store independently.
 *
 * The queue map holds only keys that have waiters; each waiter leaves by success, refusal (its
 * next chance is after its deadline), its deadline timer, or its signal.
 */
export class WaitQueue {
  private readonly queues = new Map<string, KeyQueue>();

  constructor(
    private readonly take: Take,
    private readonly clock: Clock,
    private readonly limit: number,
  ) {}

  /** Resolves with the allowed decision, or rejects (RateLimitedError, store error, abort reason). */
  wait(
    key: string,
    cost: number,
    maxWaitMs: number,
    signal: AbortSignal | undefined,
  ): Promise<RateLimitResult> {
    if (signal?.aborted) return Promise.reject(signal.reason);
    return new Promise<RateLimitResult>((resolve, reject) => {
      const waiter: Waiter = {
        cost,
        deadline: maxWaitMs === Infinity ? Infinity : this.clock.now() + maxWaitMs,
        signal: signal !== undefined && canAbort(signal) ? signal : undefined,
        resolve,
        reject,
        done: false,
        timer: undefined,
        onAbort: undefined,
        lastRefusal: undefined,
      };
      let queue = this.queues.get(key);
      const start = queue === undefined;
      if (queue === undefined) {
        queue = { waiters: [], wake: undefined, sleepTimer: undefined };
        this.queues.set(key, queue);
      }
      queue.waiters.push(waiter);
      const q = queue;
      if (waiter.signal !== undefined) {
        const abortSignal = waiter.signal;
        waiter.onAbort = () => this.leave(q, waiter, abortSignal.reason);
        abortSignal.addEventListener('abort', waiter.onAbort, { once: true });
      }
      // A waiter behind the head leaves at its deadline. The head's deadline is the pump's to
      // enforce (it never sleeps past it and refuses when the next chance comes later), so a head
      // whose quota comes back exactly at its deadline is still served.
      if (waiter.deadline !== Infinity && maxWaitMs > 0) {
        waiter.timer = this.clock.setTimer(() => {
          if (q.waiters[0] !== waiter) this.leave(q, waiter, this.refusal(key, waiter, 'deadline'));
        }, maxWaitMs);
      }
      if (start) void this.pump(key, q);
    });
  }

  /** Waiters queued now, over all keys. */
  get size(): number {
    let size = 0;
    for (const queue of this.queues.values()) size += queue.waiters.length;
    return size;
  }

  private async pump(key: string, queue: KeyQueue): Promise<void> {
    const waiters = queue.waiters;
    while (waiters.length > 0) {
      const head = waiters[0]!;
      let result: RateLimitResult;
      try {
        const pending = this.take(key, head.cost);
        result = isThenable<RateLimitResult>(pending) ? await pending : pending;
      } catch (error) {
        this.finish(queue, head);
        head.reject(error);
        continue;
      }
      // The head left (abort, deadline) while its take was in flight: an allowed take is then
      // spent for nobody, which errs on the side of admitting less.
      if (head.done) continue;
      if (result.allowed) {
        this.finish(queue, head);
        head.resolve(result);
        continue;
      }
      head.lastRefusal = result;
      const now = this.clock.now();
      if (now + result.retryAfterMs > head.deadline) {
        this.finish(queue, head);
        head.reject(this.refusal(key, head, 'refused'));
        continue;
      }
      await this.sleep(queue, result.retryAfterMs);
    }
    this.queues.delete(key);
  }

  /** Sleeps `ms`, or less if the head leaves meanwhile. */
  private sleep(queue: KeyQueue, ms: number): Promise<void> {
    return new Promise<void>((resolve) => {
      const wake = (): void => {
        if (queue.wake !== wake) return;
        queue.wake = undefined;
        if (queue.sleepTimer !== undefined) this.clock.clearTimer(queue.sleepTimer);
        queue.sleepTimer = undefined;
        resolve();
      };
      queue.wake = wake;
      queue.sleepTimer = this.clock.setTimer(wake, ms);
    });
  }

  /** A waiter leaves before being served: rejects it and, if it was the head, wakes the pump. */
  private leave(queue: KeyQueue, waiter: Waiter, reason: unknown): void {
    if (waiter.done) return;
    const wasHead = queue.waiters[0] === waiter;
    this.finish(queue, waiter);
    waiter.reject(reason);
    if (wasHead) queue.wake?.();
  }

  /** Removes a waiter from its queue and releases its timer and listener. */
  private finish(queue: KeyQueue, waiter: Waiter): void {
    waiter.done = true;
    const index = queue.waiters.indexOf(waiter);
    if (index !== -1) queue.waiters.splice(index, 1);
    if (waiter.timer !== undefined) this.clock.clearTimer(waiter.timer);
    if (waiter.onAbort !== undefined) waiter.signal?.removeEventListener('abort', waiter.onAbort);
  }

  private refusal(key: string, waiter: Waiter, why: 'refused' | 'deadline'): RateLimitedError {
    const last = waiter.lastRefusal;
    const retryAfterMs = last === undefined ? 0 : Math.max(0, Math.ceil(last.retryAfterMs));
    return new RateLimitedError(key, retryAfterMs, {
      limit: this.limit,
      remaining: last?.remaining ?? 0,
      message:
        why === 'refused'
          ? `rate limit exceeded: quota for this cost comes back in ${retryAfterMs} ms, after the wait limit`
          : 'rate limit exceeded: no quota came back within the wait limit',
    });
  }
}
