import type { Clock, TimerHandle } from './clock.js';

/** An entry of a {@link DeadlineQueue}: something that must be told when its deadline passes. */
export interface Expiring {
  /** Absolute time on the queue's clock. */
  readonly deadline: number;
  /** Set by {@link DeadlineQueue.settle} or when expired; a settled entry is never expired. */
  settled: boolean;
  /** Called once, at the deadline, unless settled first. */
  expire(): void;
  /** The queue's link; owned by the queue. */
  queueNext: Expiring | undefined;
}

/**
 * One timer shared by many deadlines that arrive in order (a timeout policy's calls all last the
 * same `ms`, so their deadlines only grow). Adding and settling are O(1) and start no timer while
 * one is armed for a time at or before the new head: the timer fires at the oldest live deadline,
 * expires what is due, drops what finished, and re-arms for the next. An entry that becomes the
 * head with a deadline earlier than the armed timer (everything before it settled, and it is due
 * sooner: a caller's tighter deadline, a shorter limit) re-arms the timer for itself, so every
 * queued entry expires at its own deadline, never later. While no entry is live the timer stops
 * keeping the process alive (`Clock.keepAlive`), so an idle service can exit.
 */
export class DeadlineQueue {
  private head: Expiring | undefined;
  private tail: Expiring | undefined;
  private timer: TimerHandle | undefined;
  /** The deadline the armed timer fires for (meaningful while `timer` is set). */
  private armedFor = 0;
  private live = 0;

  constructor(private readonly clock: Clock) {}

  /**
   * Queues `entry`. Returns false, queueing nothing, when its deadline is earlier than the last
   * queued one: the caller then needs a timer of its own.
   */
  add(entry: Expiring): boolean {
    while (this.head?.settled) this.head = this.head.queueNext;
    if (this.head === undefined) this.tail = undefined;
    else if (entry.deadline < this.tail!.deadline) return false;
    entry.queueNext = undefined;
    if (this.tail === undefined) this.head = entry;
    else this.tail.queueNext = entry;
    this.tail = entry;
    const head = this.head!;
    if (this.timer === undefined) this.arm(head.deadline);
    else if (head.deadline < this.armedFor) {
      // The timer was armed for entries that have all settled since: it would fire too late.
      this.clock.clearTimer(this.timer);
      this.arm(head.deadline);
    } else if (this.live === 0) this.clock.keepAlive?.(this.timer, true);
    this.live++;
    return true;
  }

  /** Marks `entry` finished: it will not expire. */
  settle(entry: Expiring): void {
    if (entry.settled) return;
    entry.settled = true;
    if (--this.live === 0 && this.timer !== undefined) this.clock.keepAlive?.(this.timer, false);
  }

  /**
   * Stops the timer and forgets every entry, when none is live (all settled): for an owner that goes
   * idle for long stretches (a wait queue that emptied), so it leaves no timer behind. Does nothing
   * while an entry is live. Not for per-call use: re-arming costs a timer, which sharing one saves.
   */
  stopIfIdle(): void {
    if (this.live !== 0 || this.timer === undefined) return;
    this.clock.clearTimer(this.timer);
    this.timer = undefined;
    this.head = undefined;
    this.tail = undefined;
  }

  private arm(deadline: number): void {
    this.armedFor = deadline;
    this.timer = this.clock.setTimer(this.fire, deadline - this.clock.now());
  }

  private readonly fire = (): void => {
    this.timer = undefined;
    const now = this.clock.now();
    // Read this.head each time round: expire() may synchronously add entries.
    for (
      let entry = this.head;
      entry !== undefined && (entry.settled || entry.deadline <= now);
      entry = this.head
    ) {
      this.head = entry.queueNext;
      // Stryker disable next-line ConditionalExpression: only lets go of the expired entry sooner: add() resets the tail whenever the head is empty
      if (this.head === undefined) this.tail = undefined;
      entry.queueNext = undefined;
      if (!entry.settled) {
        entry.settled = true;
        this.live--;
        entry.expire();
      }
    }
    if (this.head !== undefined && this.timer === undefined) this.arm(this.head.deadline);
  };
}
