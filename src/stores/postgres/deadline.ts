/**
 * A deadline of our own for every PostgreSQL store call, measured on the store's clock. Calls of one
 * store set all last `timeoutMs`, so their deadlines arrive in order and share one timer (a
 * `DeadlineQueue`): a query costs no timer of its own. What happens to the work in flight at the
 * deadline (a pg client destroyed and its backend cancelled; a PGlite answer dropped) is the
 * database adapter's business; this file only says when, and with which error.
 */
import type { Clock, TimerHandle } from '../../core/clock.js';
import { DeadlineQueue, type Expiring } from '../../core/deadline-queue.js';
import { isStoreUnavailableError, StoreUnavailableError, TimeoutError } from '../../core/errors.js';

/** Default deadline of one PostgreSQL store call, in milliseconds. */
export const DEFAULT_POSTGRES_TIMEOUT_MS = 1_000;

/**
 * One call's deadline, from {@link QueryDeadline.begin}. `release()` when the answer arrives: false
 * if the deadline already passed (the call was failed; drop the answer and clean up).
 */
export class QueryTicket implements Expiring {
  settled = false;
  queueNext: Expiring | undefined = undefined;
  /** The call's own timer, only when the shared queue could not take it. */
  timer: TimerHandle | undefined = undefined;
  private passed = false;

  constructor(
    readonly deadline: number,
    private readonly owner: QueryDeadline,
    private readonly timeoutMs: number,
    private readonly onExpire: (error: StoreUnavailableError) => void,
  ) {}

  /** Whether the deadline passed (the call was failed). */
  get expired(): boolean {
    return this.passed;
  }

  /** Called at the deadline, by the queue or the call's own timer. */
  expire(): void {
    this.settled = true;
    this.passed = true;
    this.onExpire(this.owner.timeoutError(this.timeoutMs));
  }

  /** Ends the deadline; false when it had already passed (the call was failed). */
  release(): boolean {
    if (this.settled) return false;
    this.owner.release(this);
    return true;
  }
}

/** SQLSTATEs of a missing schema, table or function: what an unmigrated schema answers. */
const NOT_MIGRATED: ReadonlySet<string> = new Set(['3F000', '42P01', '42883']);

/**
 * Starts deadlines of store calls and names their failures: a call that misses its deadline fails
 * with `StoreUnavailableError` (cause a `TimeoutError`); any other failure of the database is a
 * `StoreUnavailableError` with the driver's error as `cause`.
 */
export class QueryDeadline {
  private readonly queue: DeadlineQueue;

  /**
   * @param clock the clock of the deadline timers
   * @param timeoutMs the deadline of each call
   * @param what names the database in error messages (`PostgreSQL`, `PGlite`)
   */
  constructor(
    readonly clock: Clock,
    readonly timeoutMs: number,
    readonly what: string,
  ) {
    this.queue = new DeadlineQueue(clock);
  }

  /**
   * Starts the deadline of one call: `onExpire` is called once, at the deadline, unless
   * `ticket.release()` came first. `timeoutMs` (default the store's) gives a longer call, such as a
   * migration, a deadline of its own.
   */
  begin(onExpire: (error: StoreUnavailableError) => void, timeoutMs = this.timeoutMs): QueryTicket {
    const ticket = new QueryTicket(this.clock.now() + timeoutMs, this, timeoutMs, onExpire);
    if (timeoutMs !== this.timeoutMs || !this.queue.add(ticket)) {
      ticket.timer = this.clock.setTimer(() => ticket.expire(), timeoutMs);
    }
    return ticket;
  }

  /**
   * `error` as the store failure it is (a `StoreUnavailableError` is passed on as is). A schema,
   * table or function that does not exist (SQLSTATE 3F000, 42P01, 42883) most likely means a schema
   * not migrated (or not to this version): the message says to run `migrate()`.
   */
  failure(error: unknown): StoreUnavailableError {
    if (isStoreUnavailableError(error)) return error;
    const message = error instanceof Error ? error.message : String(error);
    const code = (error as { code?: unknown } | null)?.code;
    const hint = NOT_MIGRATED.has(code as string)
      ? ' (has `await stores.migrate()` run on this schema?)'
      : '';
    return new StoreUnavailableError(`${this.what} failed: ${message}${hint}`, error);
  }

  /** The error of a call that missed its deadline of `timeoutMs`. */
  timeoutError(timeoutMs = this.timeoutMs): StoreUnavailableError {
    return new StoreUnavailableError(
      `${this.what} did not answer within ${timeoutMs} ms`,
      new TimeoutError(timeoutMs),
    );
  }

  /** Stops the shared timer when no call is in flight (for `close()`). */
  stop(): void {
    this.queue.stopIfIdle();
  }

  /** @internal Ends `ticket`'s deadline (see {@link QueryTicket.release}). */
  release(ticket: QueryTicket): void {
    if (ticket.timer === undefined) this.queue.settle(ticket);
    else {
      ticket.settled = true;
      this.clock.clearTimer(ticket.timer);
    }
  }
}
