import { describe, expect, it } from 'vitest';
import { FakeClock } from '../testing/fake-clock.js';
import { DeadlineQueue } from './deadline-queue.js';
import { LinkedQueue } from './linked-queue.js';
import { WaitingEntry } from './waiting-entry.js';

class Entry extends WaitingEntry {
  expired = 0;
  constructor(readonly deadline: number) {
    super();
  }
  expire(): void {
    this.expired++;
  }
}

describe('WaitingEntry', () => {
  it('shares one timer for deadlines in order, takes its own for an earlier one, and expires each on time', async () => {
    const clock = new FakeClock();
    const deadlines = new DeadlineQueue(clock);
    const late = new Entry(100);
    const later = new Entry(200);
    const early = new Entry(50); // earlier than the last queued: its own timer
    late.watchDeadline(deadlines, clock, 100);
    later.watchDeadline(deadlines, clock, 200);
    expect(clock.pendingTimers).toBe(1);
    early.watchDeadline(deadlines, clock, 50);
    expect(clock.pendingTimers).toBe(2);
    await clock.advance(50);
    expect([early.expired, late.expired, later.expired]).toEqual([1, 0, 0]);
    await clock.advance(150);
    expect([early.expired, late.expired, later.expired]).toEqual([1, 1, 1]);
    expect(clock.pendingTimers).toBe(0);
  });

  it('unwatching stops either timer; unwatching twice, or an entry never watched, is harmless', async () => {
    const clock = new FakeClock();
    const deadlines = new DeadlineQueue(clock);
    const shared = new Entry(100);
    const own = new Entry(10);
    const never = new Entry(5);
    shared.watchDeadline(deadlines, clock, 100);
    own.watchDeadline(deadlines, clock, 10);
    own.unwatchDeadline(deadlines, clock);
    own.unwatchDeadline(deadlines, clock);
    shared.unwatchDeadline(deadlines, clock);
    shared.unwatchDeadline(deadlines, clock);
    never.unwatchDeadline(deadlines, clock);
    deadlines.stopIfIdle();
    expect(clock.pendingTimers).toBe(0);
    await clock.advance(1_000);
    expect([shared.expired, own.expired, never.expired]).toEqual([0, 0, 0]);
  });

  it('a new entry is in no line: removing it from a queue is refused and leaves the queue as it was', () => {
    const queue = new LinkedQueue<Entry>();
    const waiting = new Entry(100);
    queue.push(waiting);
    expect(queue.remove(new Entry(50))).toBe(false);
    expect(queue.size).toBe(1);
    expect(queue.first).toBe(waiting);
    expect(queue.shift()).toBe(waiting);
  });
});
