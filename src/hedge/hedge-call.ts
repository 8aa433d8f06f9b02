/**
 * One hedged call: starts tries, staggers them, picks the winner, aborts the rest. Internal to
 * `hedge()`; see hedge.ts for the rules it implements.
 */
import type { Clock, TimerHandle } from '../core/clock.js';
import {
  type Context,
  contextAborted,
  contextAbortReason,
  type Operation,
  unwatchContext,
  watchContext,
} from '../core/context.js';
import type { Listeners } from '../core/events.js';
import { failure, type Outcome } from '../core/outcome.js';
import { invoke, type Step } from '../core/policy.js';
import { retryAfterOf } from '../core/retry-after.js';
import type { RetryBudget } from '../retry/budget.js';
import { HedgeCanceledError } from './errors.js';
import { TryContext } from './try-context.js';

/** Why a hedge started: the tries before it were still running after the delay, or a try failed. */
export type HedgeTrigger = 'delay' | 'failure';

/** Emitted when a hedge (a try after the first) starts. */
export interface HedgeEvent {
  /** The try that starts: 2 for the first hedge. It sees this as `context.attempt`. */
  readonly attempt: number;
  /**
   * `delay`: the tries before it had not settled after `delayMs` (with `delayMs: 0`, every try
   * starts at once with this trigger). `failure`: a try failed with an error that is not fatal,
   * so the next one started without waiting out the delay.
   */
  readonly trigger: HedgeTrigger;
  /**
   * How long the policy waited before starting this try: `delayMs` for `delay`; 0 for `failure`,
   * or the failed try's `retryAfterMs` / `Retry-After` when it asked for a pause.
   */
  readonly delayMs: number;
  /** For `failure`: the error of the try whose failure started this one. */
  readonly error?: unknown;
}

/** What a call needs from its policy. */
export interface HedgeSettings {
  /** Counts a hedge started (the error that triggered it, if any) in telemetry. */
  readonly count: (error: unknown) => void;
  readonly attempts: number;
  readonly delayMs: number;
  readonly variants: readonly Operation<unknown>[] | undefined;
  readonly budget: RetryBudget | undefined;
  readonly clock: Clock;
  readonly isFatal: (error: unknown) => boolean;
  readonly hedged: Listeners<HedgeEvent>;
}

/** The state of one call with at least two tries allowed. */
export class HedgeCall<T> {
  /** Tries started and not yet settled, in start order. */
  private readonly inFlight: TryContext[] = [];
  /** Tries started so far (a hedge started when above 1). */
  started = 0;
  /** No further try may start (the budget refused one, or the deadline passed). */
  private stopped = false;
  private done = false;
  private lastError: unknown = undefined;
  private timer: TimerHandle | undefined = undefined;
  private fire: (() => void) | undefined = undefined;
  // Stryker disable next-line StringLiteral: schedule sets it before any timer can fire
  private pendingTrigger: HedgeTrigger = 'delay';
  private pendingDelayMs = 0;
  private pendingError: unknown = undefined;
  private resolve: (outcome: Outcome<T>) => void = noop;

  constructor(
    private readonly settings: HedgeSettings,
    private readonly next: Step<T>,
    private readonly context: Context,
  ) {}

  /** Starts the first try (and, with `delayMs: 0`, every other) and resolves with the call's outcome. */
  run(): Promise<Outcome<T>> {
    // The caller's context has not aborted: the policy checked before creating the call.
    const promise = new Promise<Outcome<T>>((resolve) => {
      this.resolve = resolve;
    });
    // An EventListener object: no closure per call; calls sharing a signal share its one listener,
    // and an enclosing timeout is watched without creating its signal.
    watchContext(this.context, this);
    this.launch(1);
    const { attempts, delayMs } = this.settings;
    if (delayMs === 0) {
      // Each refuses once the call is over or stopped (a try that failed at once may have started one).
      for (let n = 2; n <= attempts; n++) this.startHedge('delay', 0, undefined);
    } else {
      this.schedule(delayMs, 'delay', undefined);
    }
    return promise;
  }

  /** The caller's signal aborted: every try stops and the call rejects with the reason at once. */
  handleEvent(): void {
    // Stryker disable next-line ConditionalExpression: finish unsubscribed it; a second finish of a failure would change nothing anyway (the promise is settled, no timer or try is left)
    if (this.done) return;
    this.finish(failure(contextAbortReason(this.context)), 0);
  }

  private launch(attempt: number): void {
    const tryContext = new TryContext(this.context, attempt);
    this.inFlight.push(tryContext);
    this.started = attempt;
    let step: Promise<Outcome<T>>;
    try {
      const variants = this.settings.variants;
      step =
        variants === undefined
          ? this.next(tryContext)
          : (invoke(variants[attempt - 1]!, tryContext) as Promise<Outcome<T>>);
    } catch (error) {
      step = Promise.resolve(failure(error));
    }
    step.then(
      (outcome) => this.settled(tryContext, outcome),
      (error: unknown) => this.settled(tryContext, failure(error)),
    );
  }

  /**
   * Starts the next try if the rules allow: tries left, not stopped, not past the deadline, and
   * the budget (if any) grants it.
   */
  private startHedge(trigger: HedgeTrigger, delayMs: number, error: unknown): void {
    const { attempts, budget, hedged, clock } = this.settings;
    if (this.done || this.stopped || this.started >= attempts) return;
    if (clock.now() >= (this.context.deadline ?? Infinity)) {
      // Stryker disable next-line BooleanLiteral: every later start meets this same check again (systemClock is monotonic, FakeClock only advances)
      this.stopped = true;
      return;
    }
    if (budget !== undefined && !budget.tryWithdraw()) {
      this.stopped = true;
      return;
    }
    const attempt = this.started + 1;
    // Stryker disable next-line ConditionalExpression: with no listener, emitting does nothing and nothing can abort the caller; the check only saves building the event
    if (hedged.active) {
      hedged.emit(
        trigger === 'failure' ? { attempt, trigger, delayMs, error } : { attempt, trigger, delayMs },
      );
      if (this.done) return; // a listener aborted the caller
    }
    this.settings.count(error);
    this.launch(attempt);
    const stagger = this.settings.delayMs;
    if (stagger > 0) this.schedule(stagger, 'delay', undefined);
  }

  /** Arms the timer for the next try, unless no try may start or it would start at or after the deadline. */
  private schedule(ms: number, trigger: HedgeTrigger, error: unknown): void {
    this.cancelTimer();
    if (this.done || this.stopped || this.started >= this.settings.attempts) return;
    const clock = this.settings.clock;
    if (clock.now() + ms >= (this.context.deadline ?? Infinity)) return;
    this.pendingTrigger = trigger;
    this.pendingDelayMs = ms;
    this.pendingError = error;
    this.fire ??= () => this.onTimer();
    this.timer = clock.setTimer(this.fire, ms);
  }

  private onTimer(): void {
    this.timer = undefined;
    const error = this.pendingError;
    this.pendingError = undefined;
    // Not done: finishing clears the timer.
    this.startHedge(this.pendingTrigger, this.pendingDelayMs, error);
    this.finishIfIdle();
  }

  private settled(tryContext: TryContext, outcome: Outcome<T>): void {
    if (this.done) return; // finishing aborted and forgot every try still in flight
    this.inFlight.splice(this.inFlight.indexOf(tryContext), 1);
    if (outcome.ok) {
      this.finish(outcome, tryContext.attempt);
      return;
    }
    const error = outcome.error;
    this.lastError = error;
    let fatal: boolean;
    try {
      fatal = this.settings.isFatal(error);
    } catch (predicateError) {
      this.finish(failure(predicateError), tryContext.attempt);
      return;
    }
    if (fatal) {
      this.finish(outcome, tryContext.attempt);
      return;
    }
    // A failed try will not get faster by waiting: start the next one now, or after the pause the
    // failure asked for (server pushback), as gRPC hedging does with non-fatal status codes. Both
    // refuse when the call is stopped or has no try left (and no timer is armed then).
    const wait = retryAfterOf(error, this.settings.clock.now()) ?? 0;
    if (wait > 0) this.schedule(wait, 'failure', error);
    else {
      this.cancelTimer();
      this.startHedge('failure', 0, error);
    }
    this.finishIfIdle();
  }

  /** Nothing runs and nothing will start: the call fails with the last error to arrive. */
  private finishIfIdle(): void {
    if (!this.done && this.inFlight.length === 0 && this.timer === undefined) {
      this.finish(failure(this.lastError), 0);
    }
  }

  /**
   * Settles the call: clears the timer, stops listening to the caller, aborts every try still in
   * flight (with the caller's reason, or a {@link HedgeCanceledError} naming the try that settled
   * the call), deposits a success in the budget.
   */
  private finish(outcome: Outcome<T>, settledBy: number): void {
    this.done = true;
    this.cancelTimer();
    unwatchContext(this.context, this);
    const losers = this.inFlight;
    // Stryker disable next-line ConditionalExpression,EqualityOperator: (true) with no loser the reason is built for nobody
    if (losers.length > 0) {
      const context = this.context;
      const reason = contextAborted(context)
        ? contextAbortReason(context)
        : new HedgeCanceledError(settledBy);
      for (const loser of losers) loser.abort(reason);
      losers.length = 0;
    }
    if (outcome.ok) this.settings.budget?.deposit();
    this.resolve(outcome);
  }

  private cancelTimer(): void {
    if (this.timer !== undefined) {
      this.settings.clock.clearTimer(this.timer);
      this.timer = undefined;
    }
  }
}

function noop(): void {}
