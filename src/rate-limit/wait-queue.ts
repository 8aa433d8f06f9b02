import { canAbort, offAbort, onAbort } from '../core/abort.js';
import type { Clock, TimerHandle } from '../core/clock.js';
import { DeadlineQueue } from '../core/deadline-queue.js';
import { LinkedQueue } from '../core/linked-queue.js';
import { isThenable } from '../core/policy.js';
import { WaitingEntry } from '../core/waiting-entry.js';
import type { RateLimitResult, RateLimitRule } from './store.js';
import { turnAt, waitRefusal } from './wait-turn.js';

/** Takes `cost` from `key` (the limiter's take, store failures and all). */
export type Take = (key: string, cost: number) => RateLimitResult | Promise<RateLimitResult>;

/**
 * One caller of `wait()`: a node of its key's FIFO and an entry of the shared deadline timer. It is
 * also its own abort listener (`handleEvent`), so a waiter with a signal costs no closure, and all
 * the waiters sharing a signal share one real listener on it.
 */
class Waiter extends WaitingEntry {
  constructor(
    readonly queue: KeyQueue,
    readonly cost: number,
    /** Absolute time (limiter clock) after which the waiter gives up; Infinity for none. */
    readonly deadline: number,
    readonly signal: AbortSignal | undefined,
    readonly resolve: (result: RateLimitResult) => void,
    readonly reject: (error: unknown) => void,
  ) {
    super();
  }

  /** Its deadline passed (called by the deadline queue or its own timer). */
  expire(): void {
    this.queue.expire(this);
  }

  handleEvent(): void {
    this.queue.leave(this, this.signal!.reason);
  }
}

/**
 * The waiters of one key, served first come, first served, by one pump: only the head asks the
 * store, sleeping exactly `retryAfterMs` between refusals.
 */
class KeyQueue {
  readonly waiters = new LinkedQueue<Waiter>();
  /** The sum of the queued waiters' costs. */
  units = 0;
  /** When the head's units come back (its last refusal); undefined while its first take is out. */
  readyAt: number | undefined = undefined;
  /** A waiter joined while `readyAt` was unknown: check everyone's turn once it is known. */
  // Stryker disable next-line BooleanLiteral: (true) before the first head's first answer every waiter that joins sets it anyway; with none, the check has nobody to check
  unchecked = false;
  /** Ends the pump's current sleep early (the head left). */
  private wake: (() => void) | undefined = undefined;
  private sleepTimer: TimerHandle | undefined = undefined;

  constructor(
    private readonly owner: WaitQueue,
    readonly key: string,
  ) {}

  /**
   * Queues `waiter` behind the others, or refuses it at once (false) when `maxQueue` callers
   * already wait or its turn is estimated after its deadline. `behind` counts the units after the
   * head up to and including its own.
   */
  join(waiter: Waiter, now: number): boolean {
    const head = this.waiters.first;
    if (head !== undefined) {
      const turn = turnAt(
        this.owner.rules,
        now,
        this.readyAt,
        head.cost,
        this.units - head.cost + waiter.cost,
      );
      const full = this.waiters.size >= this.owner.maxQueue;
      // One ms of slack: the head's readiness is known to whole milliseconds only.
      if (full || turn - 1 > waiter.deadline) {
        waiter.reject(waitRefusal(this.owner.burst, this.key, turn - now, 0, full ? 'queue-full' : 'turn'));
        return false;
      }
      if (this.readyAt === undefined) this.unchecked = true;
    }
    this.waiters.push(waiter);
    this.units += waiter.cost;
    return true;
  }

  async pump(): Promise<void> {
    const { clock, take } = this.owner;
    const waiters = this.waiters;
    for (let head = waiters.first; head !== undefined; head = waiters.first) {
      // The deadline is judged from when the store was asked (it decided then or later, so a round
      // trip never refuses a waiter whose quota comes back in time), in whole milliseconds like
      // retryAfterMs itself: a clock that reads fractions of a millisecond (systemClock, Redis
      // TIME) moves on between the wait's start and the ask, and the store rounds its wait up.
      const asked = clock.now();
      let result: RateLimitResult;
      try {
        const pending = take(this.key, head.cost);
        result = isThenable<RateLimitResult>(pending) ? await pending : pending;
      } catch (error) {
        this.finish(head);
        head.reject(error);
        continue;
      }
      // The head left (abort, deadline) while its take was in flight: an allowed take is then
      // spent for nobody, which errs on the side of admitting less.
      if (!head.linked) continue;
      if (result.allowed) {
        this.finish(head);
        head.resolve(result);
        continue;
      }
      this.readyAt = asked + result.retryAfterMs;
      if (result.retryAfterMs > Math.ceil(head.deadline - asked)) {
        this.finish(head);
        head.reject(waitRefusal(result.limit, this.key, result.retryAfterMs, result.remaining, 'refused'));
        continue;
      }
      if (this.unchecked) this.checkTurns();
      await this.sleep(result.retryAfterMs);
    }
    this.owner.drop(this);
  }

  /** Refuses the waiters behind the head whose turn now turns out to come after their deadline. */
  private checkTurns(): void {
    this.unchecked = false;
    const now = this.owner.clock.now();
    const waiters = this.waiters;
    const head = waiters.first!;
    let behind = 0;
    for (let waiter = waiters.after(head); waiter !== undefined; ) {
      const next = waiters.after(waiter);
      behind += waiter.cost;
      const turn = turnAt(this.owner.rules, now, this.readyAt, head.cost, behind);
      if (turn - 1 > waiter.deadline) {
        this.finish(waiter);
        waiter.reject(waitRefusal(this.owner.burst, this.key, turn - now, 0, 'turn'));
        behind -= waiter.cost;
      }
      waiter = next;
    }
  }

  /** A waiter behind the head reached its deadline: it leaves with the estimate of its turn. */
  expire(waiter: Waiter): void {
    const waiters = this.waiters;
    // Stryker disable next-line ConditionalExpression: unreachable: a waiter's deadline is released (settled or its timer cleared) as it leaves the queue
    if (!waiter.linked) return;
    const head = waiters.first!;
    if (head === waiter) return; // the head's deadline is the pump's to enforce
    let behind = 0;
    for (let w = waiters.after(head); w !== undefined; w = w === waiter ? undefined : waiters.after(w)) {
      behind += w.cost;
    }
    const now = this.owner.clock.now();
    const turn = turnAt(this.owner.rules, now, this.readyAt, head.cost, behind);
    // Stryker disable next-line StringLiteral: waitRefusal gives its last message to any reason but 'refused' and 'turn'
    this.leave(waiter, waitRefusal(this.owner.burst, this.key, turn - now, 0, 'deadline'));
  }

  /** A waiter leaves before being served: rejects it and, if it was the head, wakes the pump. */
  leave(waiter: Waiter, reason: unknown): void {
    // Stryker disable next-line ConditionalExpression: (false) a waiter that is gone is not the head, finish ignores it and its promise is settled: nothing happens either way
    if (!waiter.linked) return;
    const wasHead = this.waiters.first === waiter;
    this.finish(waiter);
    waiter.reject(reason);
    if (wasHead) this.wake?.();
  }

  /** Removes a waiter from the queue and releases its deadline and abort subscription. */
  private finish(waiter: Waiter): void {
    const waiters = this.waiters;
    if (waiters.first === waiter) this.readyAt = undefined; // the next head has not asked yet
    if (!waiters.remove(waiter)) return; // already gone (it left while its take was in flight)
    this.units -= waiter.cost;
    this.owner.unwatch(waiter);
  }

  /** Sleeps `ms`, or less if the head leaves meanwhile. */
  private sleep(ms: number): Promise<void> {
    const clock = this.owner.clock;
    return new Promise<void>((resolve) => {
      const wake = (): void => {
        // Stryker disable next-line ConditionalExpression: (false) unreachable: a sleep's wake runs once, its timer cleared when the head wakes it first
        if (this.wake !== wake) return;
        this.wake = undefined;
        // Stryker disable next-line ConditionalExpression: (true) the timer is set before wake can run, so it is never undefined here
        if (this.sleepTimer !== undefined) clock.clearTimer(this.sleepTimer);
        this.sleepTimer = undefined;
        resolve();
      };
      this.wake = wake;
      this.sleepTimer = clock.setTimer(wake, ms);
    });
  }
}

/**
 * `limiter.wait()`: per key, a FIFO of waiters of which only the head asks the store, sleeping
 * exactly `retryAfterMs` between refusals. A key with 100 waiters therefore costs one store call per
 * refill, not 100 (no thundering herd), and waiters are served in arrival order (a large cost at
 * the head holds back smaller ones behind it, as with Go's `rate.Limiter.Wait`). Fairness holds
 * within one process; waiters in other processes poll the shared store independently.
 *
 * Every waiter's turn is estimated from its queue position (see {@link turnAt}): one whose turn
 * comes after its deadline is refused at once, and one that leaves at its deadline carries the
 * estimate as `retryAfterMs` (at least 1 ms: it could not be served yet). At most `maxQueue`
 * waiters queue on one key; one more is refused at once (`reason` `queue-full`), with the estimate
 * of the turn it would have had.
 *
 * Each key's waiters queue in the one waiting room ({@link LinkedQueue}: O(1) to join and to leave
 * from anywhere), and the deadlines of every waiter of every key share one timer (a
 * {@link DeadlineQueue}; a waiter due before the last one queued gets a timer of its own), stopped
 * when the last waiter leaves. The queue map holds only keys that have waiters; each waiter leaves
 * by success, refusal (its turn is after its deadline), its deadline, or its signal.
 */
export class WaitQueue {
  private readonly queues = new Map<string, KeyQueue>();
  private readonly deadlines: DeadlineQueue;
  /** Waiters queued now, over all keys. */
  private waiting = 0;

  /** The smallest burst of `rules`: the `limit` of a refusal made without asking the store. */
  readonly burst: number;

  /**
   * @param rules the limiter's rule, or every rule of a combined limiter (a turn is estimated under
   * each)
   * @param maxQueue most waiters queued on one key at once (a positive integer or `Infinity`); one
   * more is refused at once
   */
  constructor(
    readonly take: Take,
    readonly clock: Clock,
    readonly rules: readonly RateLimitRule[],
    readonly maxQueue: number,
  ) {
    this.deadlines = new DeadlineQueue(clock);
    this.burst = Math.min(...rules.map((rule) => rule.burst));
  }

  /** Resolves with the allowed decision, or rejects (RateLimitedError, store error, abort reason). */
  wait(
    key: string,
    cost: number,
    maxWaitMs: number,
    signal: AbortSignal | undefined,
  ): Promise<RateLimitResult> {
    if (signal?.aborted) return Promise.reject(signal.reason);
    return new Promise<RateLimitResult>((resolve, reject) => {
      const now = this.clock.now();
      let queue = this.queues.get(key);
      const start = queue === undefined;
      if (queue === undefined) {
        queue = new KeyQueue(this, key);
        this.queues.set(key, queue);
      }
      const waiter = new Waiter(
        queue,
        cost,
        // Stryker disable next-line ConditionalExpression: (false) now + Infinity is Infinity
        maxWaitMs === Infinity ? Infinity : now + maxWaitMs,
        // Stryker disable next-line ConditionalExpression,LogicalOperator: onAbort and offAbort ignore a signal that cannot abort, and an undefined signal stays undefined
        signal !== undefined && canAbort(signal) ? signal : undefined,
        resolve,
        reject,
      );
      if (!queue.join(waiter, now)) return;
      this.waiting++;
      if (waiter.signal !== undefined) onAbort(waiter.signal, waiter);
      // A waiter behind the head leaves at its deadline. The head's deadline is the pump's to
      // enforce (it never sleeps past it and refuses when the next chance comes later), so a head
      // whose quota comes back exactly at its deadline is still served.
      if (waiter.deadline !== Infinity && maxWaitMs > 0) {
        waiter.watchDeadline(this.deadlines, this.clock, maxWaitMs);
      }
      if (start) void queue.pump();
    });
  }

  /**
   * A waiter left its queue (served, refused or gone): releases its deadline and abort
   * subscription, and the shared deadline timer once no waiter is left.
   */
  unwatch(waiter: Waiter): void {
    waiter.unwatchDeadline(this.deadlines, this.clock);
    // Stryker disable next-line ConditionalExpression: (true) offAbort ignores a signal it has no subscription for
    if (waiter.signal !== undefined) offAbort(waiter.signal, waiter);
    // Stryker disable next-line ConditionalExpression: (true) stopIfIdle does nothing while a deadline is live; with none live, stopping the timer early only costs arming it again
    if (--this.waiting === 0) this.deadlines.stopIfIdle();
  }

  /** Forgets a queue whose last waiter left. */
  drop(queue: KeyQueue): void {
    this.queues.delete(queue.key);
  }
}
