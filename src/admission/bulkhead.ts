import type { Clock } from '../core/clock.js';
import {
  type Context,
  contextAborted,
  contextAbortReason,
  unwatchContext,
  watchContext,
} from '../core/context.js';
import { DeadlineQueue } from '../core/deadline-queue.js';
import { GatedPolicy } from '../core/gate.js';
import { type Admission, type ParkedCall, Refusal, type Resume } from '../core/gate-types.js';
import { LinkedQueue } from '../core/linked-queue.js';
import type { RejectedEvent } from '../core/policy-events.js';
import { WaitingEntry } from '../core/waiting-entry.js';
import { BulkheadFullError, type BulkheadRejection } from './errors.js';
import { type BulkheadOptions, readBulkheadOptions } from './options.js';

/**
 * Emitted when a {@link bulkhead} refuses a call: `{ policy, reason, error }`, `reason` being
 * `queue-full` (refused on arrival) or `queue-timeout` (left the queue after `queueTimeoutMs`).
 */
export type BulkheadRejectedEvent = RejectedEvent<BulkheadRejection>;

/**
 * A caller waiting for a slot: a {@link WaitingEntry} (its place in the FIFO, its deadline on the
 * shared timer) on which the gate parks the call (see {@link ParkedCall}), so waiting costs no
 * promise besides the caller's own.
 */
class Waiter extends WaitingEntry implements ParkedCall {
  parkedWork: unknown = undefined;
  parkedContext: Context | undefined = undefined;
  resolveParked: ((value: unknown) => void) | undefined = undefined;
  rejectParked: ((error: unknown) => void) | undefined = undefined;
  parkedAt = 0;
  /** The caller's context, while this waiter watches it for an abort. */
  watching: Context | undefined = undefined;

  constructor(
    private readonly slots: Slots,
    readonly deadline: number,
  ) {
    super();
  }

  /** The queue timeout passed (called by the deadline queue or the own timer). */
  expire(): void {
    this.slots.timedOut(this);
  }

  /** The caller's context aborted. (An EventListener object: no closure per waiter.) */
  handleEvent(): void {
    this.slots.abandoned(this);
  }
}

/** The bulkhead's slots and queue. Kept apart from the public class so its internals stay private. */
class Slots {
  active = 0;
  readonly waiting = new LinkedQueue<Waiter>();
  private readonly deadlines: DeadlineQueue | undefined;

  constructor(
    readonly maxConcurrent: number,
    readonly maxQueue: number,
    readonly queueTimeoutMs: number,
    private readonly clock: Clock,
    /** Decides the waiters' parked calls. */
    private readonly resume: Resume<BulkheadRejection>,
  ) {
    this.deadlines = queueTimeoutMs === Infinity ? undefined : new DeadlineQueue(clock);
  }

  /** A free slot, a place in the queue (a parked call, decided later), or a refusal. */
  admit(context: Context): Admission<BulkheadRejection> {
    if (this.active < this.maxConcurrent) {
      // A free slot implies an empty queue: release() hands slots to waiters before freeing them.
      this.active++;
      return 0;
    }
    if (this.waiting.size >= this.maxQueue) return this.full('queue-full');
    if (contextAborted(context)) return Promise.reject(contextAbortReason(context));
    return this.wait(context);
  }

  /**
   * Frees a slot, or hands it straight to the oldest waiter (whose call starts now, in this turn)
   * so no newcomer can take it first.
   */
  release(): void {
    const next = this.waiting.shift();
    if (next === undefined) {
      this.active--;
      return;
    }
    this.unwatch(next);
    this.resume.admit(next, 0);
  }

  private wait(context: Context): Waiter {
    const deadlines = this.deadlines;
    const waiter = new Waiter(
      this,
      // Stryker disable next-line ConditionalExpression: (false) without deadlines queueTimeoutMs is Infinity, and now + Infinity is Infinity too; (true) is killed
      deadlines === undefined ? Infinity : this.clock.now() + this.queueTimeoutMs,
    );
    this.waiting.push(waiter);
    // A deadline earlier than the last one queued (a clock that went backwards) gets its own timer.
    if (deadlines !== undefined) waiter.watchDeadline(deadlines, this.clock, this.queueTimeoutMs);
    // One real listener per caller signal however many waiters share it (a request fanned out);
    // an enclosing timeout is watched without creating its signal.
    waiter.watching = context;
    watchContext(context, waiter);
    return waiter;
  }

  /** A waiter's queue timeout passed: it leaves without a slot. */
  timedOut(waiter: Waiter): void {
    if (!this.waiting.remove(waiter)) return;
    this.unwatch(waiter);
    this.resume.refuse(waiter, this.full('queue-timeout'));
  }

  /** A waiter's caller aborted: it leaves without a slot, failing with the signal's reason. */
  abandoned(waiter: Waiter): void {
    if (!this.waiting.remove(waiter)) return;
    // Stryker disable next-line ConditionalExpression: (false) only a watched waiter hears the abort, so `watching` is set here; (true) is killed
    const reason = waiter.watching === undefined ? undefined : contextAbortReason(waiter.watching);
    this.unwatch(waiter);
    this.resume.fail(waiter, reason);
  }

  private full(reason: BulkheadRejection): Refusal<BulkheadRejection> {
    return new Refusal(reason, new BulkheadFullError(reason, this));
  }

  /** Stops the waiter's timeout and abort listener. */
  private unwatch(waiter: Waiter): void {
    if (this.deadlines !== undefined) waiter.unwatchDeadline(this.deadlines, this.clock);
    // Stryker disable next-line ConditionalExpression: (true) a waiter leaves the queue only after wait() set `watching` (its timer and abort fire later, a slot comes on release); (false) is killed
    if (waiter.watching !== undefined) {
      unwatchContext(waiter.watching, waiter);
      waiter.watching = undefined;
    }
  }
}

/**
 * A bulkhead policy: at most `maxConcurrent` calls running, at most `maxQueue` waiting in FIFO
 * order, the rest refused. Create one with {@link bulkhead}.
 */
export class BulkheadPolicy extends GatedPolicy<BulkheadRejection> {
  private readonly slots: Slots;

  /** Use {@link bulkhead}. */
  constructor(options: BulkheadOptions) {
    super('bulkhead');
    const o = readBulkheadOptions(options);
    this.configure(o, o.clock);
    this.slots = new Slots(o.maxConcurrent, o.maxQueue, o.queueTimeoutMs, o.clock, this.resume());
  }

  /** The most calls running at once. */
  get maxConcurrent(): number {
    return this.slots.maxConcurrent;
  }

  /** The most callers waiting for a slot. */
  get maxQueue(): number {
    return this.slots.maxQueue;
  }

  /** The longest a caller waits for a slot (`Infinity` = no limit). */
  get queueTimeoutMs(): number {
    return this.slots.queueTimeoutMs;
  }

  /** Calls holding a slot (running, or just handed a slot and about to run). */
  get inFlight(): number {
    return this.slots.active;
  }

  /** Callers waiting for a slot. */
  get queued(): number {
    return this.slots.waiting.size;
  }

  /** A free slot, a place in the queue, or a {@link BulkheadFullError} (`queue-full`). */
  protected override admit(context: Context): Admission<BulkheadRejection> {
    return this.slots.admit(context);
  }

  /** Frees the slot (or hands it to the oldest waiter) when the operation settles. */
  protected override release(): void {
    this.slots.release();
  }
}

/**
 * Isolates a dependency: at most `maxConcurrent` calls run at once, up to `maxQueue` more wait in
 * FIFO order, and anyone beyond that is refused at once with a {@link BulkheadFullError}
 * (`reason: 'queue-full'`, kind `overloaded`, code `ERR_BULKHEAD_FULL`).
 *
 * Promises:
 * - **FIFO and no queue jumping.** A freed slot goes straight to the oldest waiter; a newcomer
 *   never overtakes the queue.
 * - **Waiters never leak slots.** A queued caller whose signal aborts leaves the queue at once and
 *   rejects with `signal.reason`; one whose `queueTimeoutMs` passes leaves with a
 *   `BulkheadFullError` (`reason: 'queue-timeout'`). Neither ever takes a slot or runs. Waiters
 *   sharing one signal put a single abort listener on it between them. A `signal` that is not an
 *   `AbortSignal` is a `TypeError` rejection before anything is queued.
 * - **A slot is released exactly once** when the operation settles, whichever way (value,
 *   rejection, synchronous throw, abort). An operation that ignores its signal keeps its slot
 *   until it ends: the slot stands for work actually running.
 * - **O(1) per call** however deep the queue: a linked list (leaving from the middle is O(1)) and
 *   one shared timer for every queue timeout. A call that finds a free slot starts no timer and
 *   creates no AbortController (inside a pipeline it does not even read the context's signal).
 *
 * The bulkhead does not enforce `context.deadline` while queued; put a `timeout()` outside it to
 * bound the wait and the work together (its abort makes a waiter leave).
 *
 * Throws a `TypeError` for a missing or invalid `maxConcurrent` (positive integer), `maxQueue`
 * (integer ≥ 0), `queueTimeoutMs` (positive or Infinity), `clock` or `onRejected`.
 *
 * @example
 * // One bulkhead per dependency, so a slow payments API cannot take every socket.
 * const payments = bulkhead({ maxConcurrent: 16, maxQueue: 64, queueTimeoutMs: 250 });
 * payments.onRejected(({ reason }) => metrics.increment('payments.bulkhead.rejected', { reason }));
 * const receipt = await payments.execute(({ signal }) => charge(order, { signal }), { signal: req.signal });
 */
export function bulkhead(options: BulkheadOptions): BulkheadPolicy {
  return new BulkheadPolicy(options);
}
