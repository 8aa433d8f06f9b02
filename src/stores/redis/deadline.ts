/**
 * A deadline of our own for every Redis call. ioredis queues commands while disconnected (its
 * offline queue) and retries them for tens of seconds; a paused server never answers at all. Every
 * Redis store call goes through {@link StoreDeadline.run}, so a dead or paused Redis costs at most
 * `timeoutMs`, and the failure is a `StoreUnavailableError` (kind `unavailable`), never a disguised
 * refusal or cache miss.
 */
import type { Clock, TimerHandle } from '../../core/clock.js';
import type { Expiring } from '../../core/deadline-queue.js';
import { DeadlineQueue } from '../../core/deadline-queue.js';
import { isStoreUnavailableError, StoreUnavailableError, TimeoutError } from '../../core/errors.js';

/** Default deadline of one Redis store call, in milliseconds. */
export const DEFAULT_STORE_TIMEOUT_MS = 100;

/** What the deadline needs to know of a client: its ioredis connection status, if any. */
export interface StatusSource {
  readonly status?: string | undefined;
}

/**
 * ioredis statuses in which a command would only wait in the offline queue: we refuse at once
 * instead, so that nothing queued now executes minutes later against fresh state.
 */
export const deadStatuses: ReadonlySet<string> = new Set(['reconnecting', 'close', 'end', 'disconnecting']);

/**
 * One call's deadline, from {@link StoreDeadline.begin}. `release()` when the reply arrives: it
 * returns false if the deadline already passed (the call was failed; drop the reply).
 */
export class DeadlineTicket implements Expiring {
  settled = false;
  queueNext: Expiring | undefined = undefined;
  /** The call's own timer, only when the shared queue could not take it. */
  timer: TimerHandle | undefined = undefined;

  constructor(
    readonly deadline: number,
    private readonly owner: StoreDeadline,
    private readonly fail: (error: unknown) => void,
  ) {}

  /** Called by the queue at the deadline. */
  expire(): void {
    this.settled = true;
    this.fail(this.owner.timeoutError());
  }

  /** Ends the deadline; false when it had already passed (the call was failed). */
  release(): boolean {
    // Stryker disable next-line ConditionalExpression,BooleanLiteral: every caller acts on true by settling a promise the deadline already rejected, which ignores it; the check only skips that work
    if (this.settled) return false;
    this.owner.release(this);
    return true;
  }
}

/**
 * Runs store calls against a deadline. Calls of one instance all last `timeoutMs`, so their
 * deadlines arrive in order and share one timer (a `DeadlineQueue`): a call costs no timer of its
 * own.
 *
 * A call that misses its deadline fails with `StoreUnavailableError` (its `cause` a
 * `TimeoutError`). Its reply, should it still arrive, is dropped: nothing reads it, so a late reply
 * cannot change any state on our side. The command itself may still execute on the server (Redis
 * cannot cancel it); a store must therefore only send commands whose late execution is safe (a
 * rate-limit take that lands late only consumes quota, so it errs on the side of admitting less).
 */
export class StoreDeadline {
  private readonly queue: DeadlineQueue;

  /**
   * @param clock the clock of the deadline timers
   * @param timeoutMs the deadline of each call
   * @param what names the store in error messages, e.g. `Redis`
   */
  constructor(
    private readonly clock: Clock,
    readonly timeoutMs: number,
    private readonly what = 'Redis',
  ) {
    this.queue = new DeadlineQueue(clock);
  }

  /**
   * Starts the deadline of one call. `fail` is called once with a `StoreUnavailableError` if the
   * deadline passes before `ticket.release()`. When `client.status` says the connection is down
   * (ioredis `reconnecting`, `close`, `end`), calls `fail` at once and returns undefined: do not
   * send the command (it would wait in ioredis's offline queue and run much later).
   */
  begin(client: StatusSource, fail: (error: unknown) => void): DeadlineTicket | undefined {
    const status = client.status;
    // Stryker disable next-line ConditionalExpression: (true) the set holds no undefined either
    if (status !== undefined && deadStatuses.has(status)) {
      fail(new StoreUnavailableError(`${this.what} connection is ${status}`));
      return undefined;
    }
    const ticket = new DeadlineTicket(this.clock.now() + this.timeoutMs, this, fail);
    if (!this.queue.add(ticket)) ticket.timer = this.clock.setTimer(() => ticket.expire(), this.timeoutMs);
    return ticket;
  }

  /**
   * Starts `call` and settles with it, unless `timeoutMs` passes first (see {@link begin}). Errors of
   * the call are wrapped in `StoreUnavailableError` with the original as `cause`.
   */
  run<T>(client: StatusSource, call: () => PromiseLike<T>): Promise<T> {
    return new Promise<T>((resolve, reject) => {
      const ticket = this.begin(client, reject);
      if (ticket === undefined) return;
      let pending: PromiseLike<T>;
      try {
        pending = call();
      } catch (error) {
        // Stryker disable next-line ConditionalExpression: (true) a deadline passes only in a timer, never during this synchronous call, and a late reject is ignored anyway
        if (ticket.release()) reject(this.failure(error));
        return;
      }
      pending.then(
        (value) => {
          if (ticket.release()) resolve(value);
        },
        (error: unknown) => {
          if (ticket.release()) reject(this.failure(error));
        },
      );
    });
  }

  /** `error` as the store failure it is (a `StoreUnavailableError` is passed on as is). */
  failure(error: unknown): StoreUnavailableError {
    if (isStoreUnavailableError(error)) return error;
    const message = error instanceof Error ? error.message : String(error);
    return new StoreUnavailableError(`${this.what} failed: ${message}`, error);
  }

  /** The error of a call that missed its deadline. */
  timeoutError(): StoreUnavailableError {
    return new StoreUnavailableError(
      `${this.what} did not answer within ${this.timeoutMs} ms`,
      new TimeoutError(this.timeoutMs),
    );
  }

  /** @internal Ends `ticket`'s deadline (see {@link DeadlineTicket.release}). */
  release(ticket: DeadlineTicket): void {
    if (ticket.timer === undefined) this.queue.settle(ticket);
    else {
      // Stryker disable next-line BooleanLiteral: (false) the timer is cleared below, so it cannot expire the ticket; no caller releases a ticket twice
      ticket.settled = true;
      this.clock.clearTimer(ticket.timer);
    }
  }
}
