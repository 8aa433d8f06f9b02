/**
 * The gate: the one place where a built-in policy admits a call (or refuses it, as data), runs it,
 * releases what admission took on every outcome, and reports the call's uniform events. Both the
 * `execute` fast path and the pipeline step come from here; each policy only fills in the hooks
 * (failsafe-go's executor with pre/post hooks, written once). Internal to bulwark.
 */
import type { Clock } from './clock.js';
import { type Context, contextAborted, contextAbortReason, type Operation } from './context.js';
import type { Disposer, Listener } from './events.js';
import {
  type Admission,
  type CallNote,
  type ParkedCall,
  Refusal,
  type Resume,
  type Ticket,
} from './gate-types.js';
import { failure, type Outcome } from './outcome.js';
import {
  BasePolicy,
  type ExecuteOptions,
  invoke,
  isThenable,
  openEdge,
  runStep,
  type Step,
  settle,
} from './policy.js';
import {
  CallEvents,
  type FailureEvent,
  type PolicyEvents,
  type PolicyOptions,
  type RejectedEvent,
  type SuccessEvent,
} from './policy-events.js';
import { countEvent, type TelemetryEvent, telemetry } from './telemetry.js';
import { reportGauges } from './telemetry-gauges.js';

const noTicket: Ticket = 0;

// The promise executors of parked calls: module functions reading the call being parked, so
// parking a call allocates no executor closure.
let parking: ParkedCall | undefined;
function parkCall(resolve: (value: unknown) => void, reject: (error: unknown) => void): void {
  parking!.resolveParked = resolve;
  parking!.rejectParked = reject;
}
function parkStep(resolve: (value: unknown) => void): void {
  parking!.resolveParked = resolve;
  parking!.rejectParked = undefined;
}

/**
 * The base of every built-in policy. The hooks, each with a default that does nothing:
 * - {@link admit} (before): admit the call (a ticket), refuse it (a {@link Refusal}) or decide
 *   later: park it on a waiter ({@link ParkedCall}, decided through {@link resume}; the way for a
 *   queue) or return a promise of either (a remote store; a rejection fails the call unrun);
 * - {@link run} (around, on the pipeline path and for observed calls): run what is inside;
 * - {@link release} (after, on every outcome, when nothing about the call matters) or
 *   {@link settle} (after, with the ticket and how the call ended; says whether the policy acted);
 * - {@link direct}, {@link recover} and {@link passValue}: whether `execute` may call the
 *   operation itself (one promise, no outcome objects, no closure unless `settle` or `recover`
 *   need the call's state), how that fast path carries on after a failure (retry retries,
 *   fallback answers), and what it does with a value.
 *
 * With no `onSuccess`/`onFailure` listener the gate reads no clock and builds no event; a throwing
 * listener is reported and never breaks the call.
 */
export abstract class GatedPolicy<Reason extends string = never>
  extends BasePolicy
  implements PolicyEvents<Reason>
{
  // The gate's own state and steps use ES private names, so no policy member can clash with them.
  readonly #events: CallEvents<Reason>;
  // Which hooks the policy filled in, read once instead of on every call.
  readonly #releases: boolean;
  readonly #settles: boolean;
  readonly #recovers: boolean;
  /** Called with each value of the fast path (bound once; retry deposits in its budget). */
  protected passValue: (<T>(value: T) => T) | undefined = undefined;
  // Bound once: releasing on the fast path allocates no closure per call.
  readonly #releaseValue = <T>(value: T): T => {
    this.release();
    return value;
  };
  readonly #releaseError = (error: unknown): never => {
    this.release();
    throw error;
  };
  readonly #releaseOutcome = <T>(outcome: Outcome<T>): Outcome<T> => {
    this.release();
    return outcome;
  };
  readonly #releaseBroken = <T>(error: unknown): Outcome<T> => {
    this.release();
    return failure(error);
  };

  /** @param patternName the default `name` (`'retry'`, `'bulkhead'`, ...). */
  constructor(patternName: string) {
    super();
    this.#events = new CallEvents(patternName);
    const base = GatedPolicy.prototype;
    this.#releases = this.release !== base.release;
    this.#settles = this.settle !== base.settle;
    // Stryker disable next-line ConditionalExpression: a policy without its own recover on #follow's general path gets the default one, which rejects with the same error
    this.#recovers = this.recover !== base.recover;
  }

  /**
   * Applies the {@link PolicyOptions} (validated: a `TypeError` names the bad one) and the clock
   * that times `durationMs`. Called once from the policy's constructor.
   */
  protected configure(options: PolicyOptions<Reason>, clock: Clock | undefined): void {
    this.#events.configure(options, clock);
    reportGauges(this, this.#events.pattern, this.#events.name);
  }

  /**
   * Counts `event` of this policy on the `bulwark.events` telemetry counter (with `error.type` when
   * `error` is given); nothing while no OpenTelemetry MeterProvider is registered.
   */
  protected count(event: TelemetryEvent, error?: unknown): void {
    countEvent(event, this.#events.pattern, this.#events.name, error);
  }

  /** The name the policy's events carry (the `name` option; by default the pattern's name). */
  get name(): string {
    return this.#events.name;
  }

  /** Subscribes to calls that resolved; returns a disposer. */
  onSuccess(listener: Listener<SuccessEvent>): Disposer {
    return this.#events.succeeded.add(listener);
  }

  /** Subscribes to calls that ended in an error (or whose error a fallback answered); returns a disposer. */
  onFailure(listener: Listener<FailureEvent>): Disposer {
    return this.#events.failed.add(listener);
  }

  /** Subscribes to calls refused without running; returns a disposer. */
  onRejected(listener: Listener<RejectedEvent<Reason>>): Disposer {
    return this.#events.refused.add(listener);
  }

  /** Admission (before the call). Default: every call is admitted. */
  protected admit(_context: Context): Admission<Reason> {
    return noTicket;
  }

  /** The call proper, inside the gate. Default: what is inside, as is. */
  protected run<T>(
    next: Step<T>,
    context: Context,
    _ticket: Ticket,
    _note: CallNote | undefined,
  ): Promise<Outcome<T>> {
    return next(context);
  }

  /** Gives back what admission took, on every outcome, when nothing else about the call matters. */
  protected release(): void {}

  /**
   * Gives back what admission took, knowing the ticket and how the call ended (`failed`, and
   * `error` when it did). Returns whether the policy acted on the failure.
   */
  protected settle(_ticket: Ticket, _failed: boolean, _error: unknown, _context: Context): boolean {
    return false;
  }

  /** Whether `execute` may call the operation itself for this call (`run` would add nothing). */
  protected direct(_context: Context): boolean {
    return true;
  }

  /** The fast path's failure, after release: by default the call fails with it. */
  protected recover<T>(_operation: Operation<T>, _context: Context, error: unknown): Promise<T> {
    return Promise.reject(error);
  }

  /**
   * The {@link Resume} through which this policy decides its {@link ParkedCall}s. Call it once (in
   * the constructor): each call builds it anew.
   */
  protected resume(): Resume<Reason> {
    return {
      admit: (call, ticket) => this.#admitParked(call, ticket),
      refuse: (call, refusal) => this.#settleParked(call, this.#refuse(refusal), false),
      fail: (call, error) => this.#settleParked(call, error, true),
    };
  }

  /**
   * Runs `operation` through the gate (see {@link Policy.execute}): bad arguments and an
   * already-aborted signal reject before admission; a refusal rejects with its error without
   * calling the operation.
   */
  override execute<T>(operation: Operation<T>, options?: ExecuteOptions): Promise<T> {
    const context = openEdge(operation, options);
    if (context instanceof Promise) return context;
    if (this.#events.observed || !this.direct(context)) {
      return this.#enter((ctx: Context) => invoke(operation, ctx), context).then(settle);
    }
    const admission = this.admit(context);
    if (typeof admission === 'number') return this.#call(operation, context, admission);
    if (admission instanceof Refusal) return Promise.reject(this.#refuse(admission));
    if (!(admission instanceof Promise)) return this.#park(admission, operation, context, 0, parkCall);
    return admission.then((later) => {
      if (typeof later !== 'number') return Promise.reject(this.#refuse(later));
      return contextAborted(context)
        ? Promise.reject(this.#abandon(later, context))
        : this.#call(operation, context, later);
    });
  }

  [runStep]<T>(next: Step<T>, context: Context): Promise<Outcome<T>> {
    return this.#enter(next, context);
  }

  /** The fast path of an admitted call: the operation itself, released on every outcome. */
  #call<T>(operation: Operation<T>, context: Context, ticket: Ticket): Promise<T> {
    let result: T | PromiseLike<T>;
    try {
      result = operation(context);
    } catch (error) {
      return this.#fail(operation, context, ticket, error);
    }
    if (!isThenable<T>(result)) {
      this.#giveBack(ticket, false, undefined, context);
      return Promise.resolve(this.passValue === undefined ? result : this.passValue(result));
    }
    // Promise.resolve adopts a foreign thenable once, whatever it does: one release exactly.
    return this.#follow(Promise.resolve(result), operation, context, ticket);
  }

  /** Releases (or settles) an admitted call's ticket when its promise settles; then `recover`. */
  #follow<T>(promise: Promise<T>, operation: Operation<T>, context: Context, ticket: Ticket): Promise<T> {
    // Stryker disable next-line ConditionalExpression,BlockStatement: without a recover hook the general path below ends the same way (the default recover rejects with the error)
    if (!this.#recovers) {
      if (this.#releases) return promise.then(this.#releaseValue, this.#releaseError);
      // Stryker disable next-line ConditionalExpression: (false) the general path, or promise.then(undefined), settles the same way; skipping settle or passValue is killed
      if (!this.#settles) return this.passValue === undefined ? promise : promise.then(this.passValue);
    }
    return promise.then(
      this.#settles
        ? (value: T) => {
            this.settle(ticket, false, undefined, context);
            return value;
          }
        : this.#releases
          ? this.#releaseValue
          : this.passValue,
      (error: unknown) => this.#fail(operation, context, ticket, error),
    );
  }

  #fail<T>(operation: Operation<T>, context: Context, ticket: Ticket, error: unknown): Promise<T> {
    this.#giveBack(ticket, true, error, context);
    return this.recover(operation, context, error);
  }

  /** The step path (and observed calls): admit, run, release, report. Never rejects. */
  #enter<T>(next: Step<T>, context: Context): Promise<Outcome<T>> {
    const startedAt = this.#events.start();
    const admission = this.admit(context);
    if (typeof admission === 'number') return this.#pass(next, context, admission, startedAt);
    if (admission instanceof Refusal) return Promise.resolve(failure(this.#refuse(admission)));
    if (!(admission instanceof Promise)) return this.#park(admission, next, context, startedAt, parkStep);
    return admission.then(
      (later) => {
        if (typeof later !== 'number') return failure<T>(this.#refuse(later));
        if (!contextAborted(context)) return this.#pass(next, context, later, startedAt);
        return this.#report(failure<T>(this.#abandon(later, context)), startedAt, undefined, false);
      },
      (error: unknown) => this.#report(failure<T>(error), startedAt, undefined, false),
    );
  }

  /** Parks a call on the policy's waiter: the caller's promise, settled by {@link Resume}. */
  #park<R>(
    call: ParkedCall,
    work: unknown,
    context: Context,
    startedAt: number,
    executor: (resolve: (value: unknown) => void, reject: (error: unknown) => void) => void,
  ): Promise<R> {
    call.parkedWork = work;
    call.parkedContext = context;
    call.parkedAt = startedAt;
    parking = call;
    const promise = new Promise(executor) as Promise<R>;
    parking = undefined;
    return promise;
  }

  /**
   * A parked call's turn came: it runs now. A result is released in a later tick even when the
   * operation returns or throws synchronously, so handing slots on down a queue never recurses.
   */
  #admitParked(call: ParkedCall, ticket: Ticket): void {
    const context = call.parkedContext!;
    const resolve = call.resolveParked!;
    if (contextAborted(context)) {
      this.#settleParked(call, this.#abandon(ticket, context), true);
    } else if (call.rejectParked === undefined) {
      resolve(this.#pass(call.parkedWork as Step<unknown>, context, ticket, call.parkedAt));
    } else {
      const operation = call.parkedWork as Operation<unknown>;
      let result: unknown;
      try {
        result = operation(context);
      } catch (error) {
        result = Promise.reject(error);
      }
      resolve(this.#follow(Promise.resolve(result), operation, context, ticket));
    }
  }

  /**
   * A parked call ends without running: refused (`failed` false: `onRejected` already fired) or
   * failed (`failed` true: on the step path, reported to `onFailure`).
   */
  #settleParked(call: ParkedCall, error: unknown, failed: boolean): void {
    if (call.rejectParked !== undefined) call.rejectParked(error);
    else if (failed) call.resolveParked!(this.#report(failure(error), call.parkedAt, undefined, false));
    else call.resolveParked!(failure(error));
  }

  /**
   * The caller aborted while its admission was being decided (between a queue handing it a slot
   * and the call starting): the operation must not run. Gives the ticket back; returns the reason.
   */
  #abandon(ticket: Ticket, context: Context): unknown {
    const reason: unknown = contextAbortReason(context);
    this.#giveBack(ticket, true, reason, context);
    return reason;
  }

  /** Runs an admitted step and releases its ticket when it settles. */
  #pass<T>(next: Step<T>, context: Context, ticket: Ticket, startedAt: number): Promise<Outcome<T>> {
    // Noted for whoever reports failures: an onFailure listener, or telemetry recording this call
    // (timed from its start): a failure a fallback answered is a failure there too.
    const note: CallNote | undefined =
      this.#events.failed.active || (!Number.isNaN(startedAt) && telemetry() !== undefined)
        ? { handled: false, answered: undefined }
        : undefined;
    let running: Promise<Outcome<T>>;
    try {
      running = this.run(next, context, ticket, note);
    } catch (error) {
      // Steps report failures as outcomes; this guards a broken foreign step.
      running = Promise.resolve(failure(error));
    }
    // Stryker disable next-line ConditionalExpression,BlockStatement: (false) #ended gives back and, unobserved, reports nothing: the same outcome, a broken run's rejection included
    if (!this.#events.observed) {
      if (this.#releases) return running.then(this.#releaseOutcome, this.#releaseBroken<T>);
      // A run that rejects still ends as a failed outcome, as it does when someone listens.
      // Stryker disable next-line ConditionalExpression: (false) #ended, unobserved and with nothing to give back, turns a rejection into the same failed outcome
      if (!this.#settles) return running.then(undefined, failure<T>);
    }
    return running.then(
      (outcome) => this.#ended(outcome, context, ticket, startedAt, note),
      (error: unknown) => this.#ended(failure<T>(error), context, ticket, startedAt, note),
    );
  }

  #ended<T>(
    outcome: Outcome<T>,
    context: Context,
    ticket: Ticket,
    startedAt: number,
    note: CallNote | undefined,
  ): Outcome<T> {
    const handled = this.#giveBack(ticket, !outcome.ok, outcome.ok ? undefined : outcome.error, context);
    return this.#report(outcome, startedAt, note, handled);
  }

  /**
   * Gives an admitted call's ticket back when it ended: `release`, or `settle` with how it ended.
   * Returns whether the policy acted on the failure.
   */
  #giveBack(ticket: Ticket, failed: boolean, error: unknown, context: Context): boolean {
    if (this.#releases) {
      this.release();
      return false;
    }
    // Stryker disable next-line ConditionalExpression: (false) settling a policy without a settle hook calls the default one, which does nothing and answers false
    if (!this.#settles) return false;
    return this.settle(ticket, failed, error, context);
  }

  /** Reports a call that ended, with what the policy did with its failure. */
  #report<T>(
    outcome: Outcome<T>,
    startedAt: number,
    note: CallNote | undefined,
    handled: boolean,
  ): Outcome<T> {
    const answered = note?.answered;
    return this.#events.report(
      outcome,
      startedAt,
      answered,
      handled || answered !== undefined || note?.handled === true,
    );
  }

  /** Fires onRejected for a refusal and returns the error the call fails with. */
  #refuse(refusal: Refusal<Reason>): unknown {
    return this.#events.reject(refusal.reason, refusal.error);
  }
}
