import type { Clock } from '../core/clock.js';
import { type Disposer, type Listener, Listeners } from '../core/events.js';
import {
  clockField,
  nonNegativeNumber,
  positiveNumber,
  readOptions,
  required,
  type Schema,
  withDefault,
} from '../core/read-options.js';
import { SlidingWindow } from '../core/sliding-window.js';

/** Options of {@link retryBudget}. */
export interface RetryBudgetOptions {
  /** Retries allowed per successful call in the window (0.1 = one retry per ten successes). */
  readonly ratio: number;
  /** Retries always allowed per second of the window, even with no successes (the floor). */
  readonly minPerSecond: number;
  /** The sliding window the counts cover. @default 10_000 */
  readonly windowMs?: number | undefined;
  /** @default systemClock */
  readonly clock?: Clock | undefined;
}

const retryBudgetSchema = {
  ratio: required(nonNegativeNumber),
  minPerSecond: required(nonNegativeNumber),
  windowMs: withDefault(10_000, positiveNumber),
  clock: clockField,
} satisfies Schema<RetryBudgetOptions>;

/** Emitted when a retry is refused because the budget is spent. */
export interface BudgetExhaustedEvent {
  /** Retries already taken in the window. */
  readonly retries: number;
  /** Successful calls in the window. */
  readonly successes: number;
}

const SUCCESSES = 0;
const RETRIES = 1;

/**
 * A retry budget shared by many retry (and hedge) policies: over a sliding window, retries may be
 * at most `ratio × successful calls + minPerSecond × window seconds` (the gRPC / Finagle design).
 * When a dependency fails hard there are no successes to earn retries from, so retries fall to
 * the floor instead of multiplying the load (a retry storm). Memory is O(10 buckets).
 */
export class RetryBudget {
  private readonly ratio: number;
  private readonly floor: number;
  private readonly window: SlidingWindow;
  private readonly exhausted = new Listeners<BudgetExhaustedEvent>();

  /** Use {@link retryBudget}. */
  constructor(options: RetryBudgetOptions) {
    const { ratio, minPerSecond, windowMs, clock } = readOptions(
      'retryBudget options',
      options,
      retryBudgetSchema,
    );
    this.ratio = ratio;
    this.window = new SlidingWindow(clock, 2, windowMs);
    this.floor = (minPerSecond * windowMs) / 1000;
  }

  /** Records one successful call; retry policies call it for you. */
  deposit(): void {
    this.window.add(SUCCESSES);
  }

  /**
   * Takes one retry from the budget. Returns false (and emits `onExhausted`) when the window's
   * retries already reach `ratio × successes + floor`.
   */
  tryWithdraw(): boolean {
    const retries = this.window.total(RETRIES);
    const successes = this.window.total(SUCCESSES);
    if (retries + 1 > this.ratio * successes + this.floor) {
      // Stryker disable next-line ConditionalExpression: (true) emitting with no listener does nothing; the guard only skips building the event
      if (this.exhausted.active) this.exhausted.emit({ retries, successes });
      return false;
    }
    this.window.add(RETRIES);
    return true;
  }

  /** Whole retries that could be taken now. */
  get available(): number {
    const allowed = this.ratio * this.window.total(SUCCESSES) + this.floor;
    return Math.max(0, Math.floor(allowed - this.window.total(RETRIES)));
  }

  /** Subscribes to refusals; returns a disposer. */
  onExhausted(listener: Listener<BudgetExhaustedEvent>): Disposer {
    return this.exhausted.add(listener);
  }
}

/**
 * Creates a {@link RetryBudget} to share between retry policies (`retry({ budget })`) and hedges.
 * Throws a `TypeError` for a negative, NaN or infinite `ratio`/`minPerSecond`, or a bad `windowMs`.
 *
 * @example
 * const budget = retryBudget({ ratio: 0.1, minPerSecond: 10 });
 * const payments = retry({ maxAttempts: 3, budget });
 * const ledger = retry({ maxAttempts: 5, budget }); // both draw from the same budget
 */
export function retryBudget(options: RetryBudgetOptions): RetryBudget {
  return new RetryBudget(options);
}
