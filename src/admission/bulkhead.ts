import { canAbort, offAbort, onAbort } from '../core/abort.js';
import { type Clock, systemClock, type TimerHandle } from '../core/clock.js';
import type { Context, Operation } from '../core/context.js';
import { DeadlineQueue, type Expiring } from '../core/deadline-queue.js';
import { type Disposer, type Listener, Listeners } from '../core/events.js';
import { failure, type Outcome } from '../core/outcome.js';
import { BasePolicy, type ExecuteOptions, isThenable, openEdge, runStep, type Step } from '../core/policy.js';
import {
  isClock,
  isFunction,
  optionKeys,
  optionsObject,
  positive,
  positiveInteger,
  show,
} from '../core/validate.js';
import { BulkheadFullError, type BulkheadRejection } from './errors.js';
import { LinkedQueue, type QueueNode } from './linked-queue.js';

/** Options of {@link bulkhead}. */
export interface BulkheadOptions {
  /** The most calls running at once (a positive integer). Required. */
  readonly maxConcurrent: number;
  /**
   * The most callers waiting for a slot (an integer ≥ 0; 0 = no queue, refuse when all slots are
   * busy). Required: every queue has an explicit bound.
   */
  readonly maxQueue: number;
  /**
   * The longest a caller waits in the queue; when it passes the caller leaves with a
   * `BulkheadFullError` whose `reason` is `queue-timeout`. Positive, or `Infinity` for no limit.
   * All waiters share one timer.
   * @default Infinity
   */
  readonly queueTimeoutMs?: number | undefined;
  /** Times the queue timeout. @default systemClock */
  readonly clock?: Clock | undefined;
  /** Called for each refusal (same as subscribing with `onRejected`). */
  readonly onRejected?: Listener<BulkheadRejectedEvent> | undefined;
}

const bulkheadOptionKeys = optionKeys<BulkheadOptions>({
  maxConcurrent: true,
  maxQueue: true,
  queueTimeoutMs: true,
  clock: true,
  onRejected: true,
});

/** Emitted when a {@link bulkhead} refuses a call. */
export interface BulkheadRejectedEvent {
  /** `queue-full` (refused on arrival) or `queue-timeout` (left the queue after `queueTimeoutMs`). */
  readonly reason: BulkheadRejection;
  /** Calls running at the refusal. */
  readonly inFlight: number;
  /** Callers waiting at the refusal (the refused one not included). */
  readonly queued: number;
}

/** A caller waiting for a slot: a node of the FIFO and an entry of the shared deadline timer. */
class Waiter implements QueueNode, Expiring {
  prevNode: QueueNode | undefined = undefined;
  nextNode: QueueNode | undefined = undefined;
  linked = false;
  settled = false;
  queueNext: Expiring | undefined = undefined;
  /** A timer of its own, only when the shared deadline queue could not take this waiter. */
  timer: TimerHandle | undefined = undefined;
  /** The caller's signal, while this waiter listens to it. */
  signal: AbortSignal | undefined = undefined;

  constructor(
    private readonly gate: Gate,
    /** The user's `Operation` (from `execute`, when `reject` is set) or a `Step` (in a pipeline). */
    readonly work: Operation<unknown> | Step<unknown>,
    readonly context: Context,
    /** Settles the caller's promise: with the value (`execute`) or with an outcome (a step). */
    readonly resolve: (value: unknown) => void,
    /** Set for `execute` callers, whose promise rejects; a step's failures are outcomes. */
    readonly reject: ((error: unknown) => void) | undefined,
    readonly deadline: number,
  ) {}

  /** The queue timeout passed (called by the deadline queue or the own timer). */
  expire(): void {
    this.gate.timedOut(this);
  }

  /** The caller's signal aborted. (An EventListener object: no closure per waiter.) */
  handleEvent(): void {
    this.gate.abandoned(this);
  }
}

/** The bulkhead's state. Kept apart from the public class so its internals stay private. */
class Gate {
  active = 0;
  readonly waiting = new LinkedQueue<Waiter>();
  private readonly deadlines: DeadlineQueue | undefined;

  // Bound once: releasing a slot allocates no closure per call.
  readonly releaseValue = (value: unknown): unknown => {
    this.release();
    return value;
  };
  readonly releaseError = (error: unknown): never => {
    this.release();
    throw error;
  };
  readonly releaseOutcome = (outcome: Outcome<unknown>): Outcome<unknown> => {
    this.release();
    return outcome;
  };
  readonly releaseBroken = (error: unknown): Outcome<unknown> => {
    this.release();
    return failure(error);
  };

  constructor(
    readonly maxConcurrent: number,
    readonly maxQueue: number,
    readonly queueTimeoutMs: number,
    private readonly clock: Clock,
    readonly rejected: Listeners<BulkheadRejectedEvent>,
  ) {
    this.deadlines = queueTimeoutMs === Infinity ? undefined : new DeadlineQueue(clock);
  }

  /** Frees a slot, or hands it straight to the oldest waiter so no newcomer can take it first. */
  release(): void {
    const next = this.waiting.shift();
    if (next === undefined) {
      this.active--;
      return;
    }
    this.unwatch(next);
    if (next.reject === undefined) {
      next.resolve(this.runStep(next.work as Step<unknown>, next.context));
      return;
    }
    let result: unknown;
    try {
      result = (next.work as Operation<unknown>)(next.context);
    } catch (error) {
      result = Promise.reject(error);
    }
    // Released in a later tick even for a synchronous result: handing slots on never recurses.
    Promise.resolve(result).then(this.releaseValue, this.releaseError).then(next.resolve, next.reject);
  }

  /** Runs a step that holds a slot; the slot is released when the step settles. */
  runStep<T>(step: Step<T>, context: Context): Promise<Outcome<T>> {
    let outcome: Promise<Outcome<T>>;
    try {
      outcome = step(context);
    } catch (error) {
      // Steps report failures as outcomes; this guards a broken foreign step.
      outcome = Promise.resolve(failure(error));
    }
    return outcome.then(
      this.releaseOutcome as (outcome: Outcome<T>) => Outcome<T>,
      this.releaseBroken as (error: unknown) => Outcome<T>,
    );
  }

  /** The pipeline path: run, queue or refuse a step. */
  admitStep<T>(step: Step<T>, context: Context): Promise<Outcome<T>> {
    if (this.active < this.maxConcurrent) {
      // A free slot implies an empty queue: release() hands slots to waiters before freeing them.
      this.active++;
      return this.runStep(step, context);
    }
    if (this.waiting.size >= this.maxQueue) return Promise.resolve(failure(this.refuse('queue-full')));
    const signal = context.signal;
    if (signal.aborted) return Promise.resolve(failure(signal.reason));
    return new Promise<Outcome<T>>((resolve) => {
      this.wait(step as Step<unknown>, context, signal, resolve as (value: unknown) => void, undefined);
    });
  }

  /** The `execute` path when every slot is busy: queue or refuse. */
  queue<T>(operation: Operation<T>, context: Context): Promise<T> {
    if (this.waiting.size >= this.maxQueue) return Promise.reject(this.refuse('queue-full'));
    const signal = context.signal;
    return new Promise<T>((resolve, reject) => {
      this.wait(operation, context, signal, resolve as (value: unknown) => void, reject);
    });
  }

  private wait(
    work: Operation<unknown> | Step<unknown>,
    context: Context,
    signal: AbortSignal,
    resolve: (value: unknown) => void,
    reject: ((error: unknown) => void) | undefined,
  ): void {
    const deadline = this.deadlines === undefined ? Infinity : this.clock.now() + this.queueTimeoutMs;
    const waiter = new Waiter(this, work, context, resolve, reject, deadline);
    this.waiting.push(waiter);
    if (this.deadlines !== undefined && !this.deadlines.add(waiter)) {
      // Only a clock that went backwards gets here: the waiter times itself.
      waiter.timer = this.clock.setTimer(() => waiter.expire(), this.queueTimeoutMs);
    }
    if (canAbort(signal)) {
      // One real listener per signal however many waiters share it (a request fanned out).
      waiter.signal = signal;
      onAbort(signal, waiter);
    }
  }

  /** A waiter's queue timeout passed: it leaves without a slot. */
  timedOut(waiter: Waiter): void {
    if (!this.waiting.remove(waiter)) return;
    this.unwatch(waiter);
    this.leave(waiter, this.refuse('queue-timeout'));
  }

  /** A waiter's caller aborted: it leaves without a slot, rejecting with the signal's reason. */
  abandoned(waiter: Waiter): void {
    if (!this.waiting.remove(waiter)) return;
    const reason = waiter.signal?.reason;
    this.unwatch(waiter);
    this.leave(waiter, reason);
  }

  private leave(waiter: Waiter, error: unknown): void {
    if (waiter.reject === undefined) waiter.resolve(failure(error));
    else waiter.reject(error);
  }

  refuse(reason: BulkheadRejection): BulkheadFullError {
    if (this.rejected.active) {
      this.rejected.emit({ reason, inFlight: this.active, queued: this.waiting.size });
    }
    return new BulkheadFullError(reason, this);
  }

  /** Stops the waiter's timeout and abort listener. */
  private unwatch(waiter: Waiter): void {
    if (waiter.timer !== undefined) {
      this.clock.clearTimer(waiter.timer);
      waiter.timer = undefined;
    } else if (this.deadlines !== undefined) {
      this.deadlines.settle(waiter);
    }
    if (waiter.signal !== undefined) {
      offAbort(waiter.signal, waiter);
      waiter.signal = undefined;
    }
  }
}

function nonNegativeInteger(name: string, value: unknown): number {
  if (typeof value !== 'number' || !Number.isInteger(value) || value < 0) {
    throw new TypeError(`expected "${name}" to be a non-negative integer, got ${show(value)}`);
  }
  return value;
}

/**
 * A bulkhead policy: at most `maxConcurrent` calls running, at most `maxQueue` waiting in FIFO
 * order, the rest refused. Create one with {@link bulkhead}.
 */
export class BulkheadPolicy extends BasePolicy {
  private readonly gate: Gate;
  private readonly rejected = new Listeners<BulkheadRejectedEvent>();

  /** Use {@link bulkhead}. */
  constructor(options: BulkheadOptions) {
    super();
    const o = optionsObject('bulkhead options', options, bulkheadOptionKeys);
    const maxConcurrent = positiveInteger('maxConcurrent', o.maxConcurrent);
    const maxQueue = nonNegativeInteger('maxQueue', o.maxQueue);
    const queueTimeoutMs = positive('queueTimeoutMs', o.queueTimeoutMs ?? Infinity, true);
    const clock = o.clock === undefined ? systemClock : isClock<Clock>('clock', o.clock);
    if (o.onRejected !== undefined) this.rejected.add(isFunction('onRejected', o.onRejected));
    this.gate = new Gate(maxConcurrent, maxQueue, queueTimeoutMs, clock, this.rejected);
  }

  /** The most calls running at once. */
  get maxConcurrent(): number {
    return this.gate.maxConcurrent;
  }

  /** The most callers waiting for a slot. */
  get maxQueue(): number {
    return this.gate.maxQueue;
  }

  /** The longest a caller waits for a slot (`Infinity` = no limit). */
  get queueTimeoutMs(): number {
    return this.gate.queueTimeoutMs;
  }

  /** Calls holding a slot (running, or just handed a slot and about to run). */
  get inFlight(): number {
    return this.gate.active;
  }

  /** Callers waiting for a slot. */
  get queued(): number {
    return this.gate.waiting.size;
  }

  /** Subscribes to refusals (`queue-full`, `queue-timeout`); returns a disposer. */
  onRejected(listener: Listener<BulkheadRejectedEvent>): Disposer {
    return this.rejected.add(listener);
  }

  /**
   * Runs `operation` in a free slot, or waits in the queue for one, or rejects with a
   * {@link BulkheadFullError}. A caller abort while queued rejects with the signal's reason and
   * never takes a slot; an already-aborted signal rejects at once.
   */
  override execute<T>(operation: Operation<T>, options?: ExecuteOptions): Promise<T> {
    const context = openEdge(operation, options);
    if (context instanceof Promise) return context;
    const gate = this.gate;
    if (gate.active >= gate.maxConcurrent) return gate.queue(operation, context);
    // Fast path: a free slot and no queue; call the operation directly, no outcome objects.
    gate.active++;
    let result: T | PromiseLike<T>;
    let thenable: boolean;
    try {
      result = operation(context);
      thenable = isThenable<T>(result);
    } catch (error) {
      gate.release();
      return Promise.reject(error);
    }
    if (!thenable) {
      gate.release();
      return Promise.resolve(result as T);
    }
    return Promise.resolve(result).then(gate.releaseValue, gate.releaseError) as Promise<T>;
  }

  [runStep]<T>(next: Step<T>, context: Context): Promise<Outcome<T>> {
    return this.gate.admitStep(next, context);
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
