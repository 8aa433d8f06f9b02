import type { Clock, TimerHandle } from './clock.js';
import type { DeadlineQueue, Expiring } from './deadline-queue.js';
import type { QueueNode } from './linked-queue.js';

/**
 * A caller in the waiting room: a node of a `LinkedQueue` (its place in line, O(1) to leave from
 * anywhere) and an entry of a `DeadlineQueue` (its deadline on the timer all waiters share). It gets
 * a timer of its own only when the shared queue cannot take it (its deadline is earlier than the
 * last one queued). The bulkhead's and `rateLimiter.wait`'s waiters extend it; a subclass says what
 * its deadline is and what happens when it passes.
 */
export abstract class WaitingEntry implements QueueNode, Expiring {
  prevNode: QueueNode | undefined = undefined;
  nextNode: QueueNode | undefined = undefined;
  /** True while in a `LinkedQueue`. */
  linked = false;
  /** False only while the deadline is on the shared timer (so releasing it twice is harmless). */
  settled = true;
  queueNext: Expiring | undefined = undefined;
  private timer: TimerHandle | undefined = undefined;

  /** Absolute time (on the queue's clock) at which {@link WaitingEntry.expire} is called. */
  abstract readonly deadline: number;

  /** The deadline passed while the entry was watched. */
  abstract expire(): void;

  /**
   * Calls {@link WaitingEntry.expire} at the deadline, `ms` from now: on the shared timer of
   * `deadlines`, or on a timer of its own when that queue cannot take it. Watch once per entry.
   */
  watchDeadline(deadlines: DeadlineQueue, clock: Clock, ms: number): void {
    this.settled = false;
    if (deadlines.add(this)) return;
    this.settled = true;
    this.timer = clock.setTimer(() => this.expire(), ms);
  }

  /** Stops watching the deadline (shared or own timer); does nothing if it is not watched. */
  unwatchDeadline(deadlines: DeadlineQueue, clock: Clock): void {
    if (this.timer !== undefined) {
      clock.clearTimer(this.timer);
      this.timer = undefined;
    } else deadlines.settle(this);
  }
}
