/**
 * The gate: the one place where a built-in policy admits a call (or refuses it, as data), runs it,
 * releases what admission took on every outcome, and reports the call's uniform events. Both the
 * `execute` fast path and the pipeline step come from here; each policy only fills in the hooks
 * (failsafe-go's executor with pre/post hooks, written once). Internal to bulwark.
 */
import { classify } from './classify.js';
import { type Clock, systemClock } from './clock.js';
import type { Context, Operation } from './context.js';
import { type Disposer, type Listener, Listeners } from './events.js';
import type { Kind } from './kind.js';
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
import { isFunction, show } from './validate.js';

/** A call a policy ran that resolved. */
export interface SuccessEvent {
  /** The policy's `name`. */
  readonly policy: string;
  /** From the moment the policy took the call (waiting for admission included) until it settled. */
  readonly durationMs: number;
}

/** A call a policy ran (or let wait) that ended in an error. */
export interface FailureEvent {
  /** The policy's `name`. */
  readonly policy: string;
  /** The error the call ended with, as this policy saw it (a fallback: the error it answered). */
  readonly error: unknown;
  /** `classify(error)`. */
  readonly kind: Kind;
  /** From the moment the policy took the call (waiting for admission included) until it settled. */
  readonly durationMs: number;
  /**
   * Whether this policy acted on the failure: retry retried it, the breaker counted it toward
   * tripping, fallback answered it, timeout timed the call out, hedge started a hedge for it.
   */
  readonly handled: boolean;
}

/** A call a policy refused without running it. */
export interface RejectedEvent<Reason extends string = string> {
  /** The policy's `name`. */
  readonly policy: string;
  /** Why, in the policy's words (`'queue-full'`, `'open'`, `'shed'`, ...). */
  readonly reason: Reason;
  /** The refusal the call rejects with (a `RejectedError`). */
  readonly error: unknown;
}

/** The options every policy takes: its name and the uniform events. */
export interface PolicyOptions<Reason extends string = string> {
  /** Names the policy in its events (and in telemetry). A non-empty string. @default the pattern's name */
  readonly name?: string | undefined;
  /** Subscribes to successful calls, as `policy.onSuccess(listener)`. */
  readonly onSuccess?: Listener<SuccessEvent> | undefined;
  /** Subscribes to failed calls, as `policy.onFailure(listener)`. */
  readonly onFailure?: Listener<FailureEvent> | undefined;
  /** Subscribes to refusals, as `policy.onRejected(listener)`. */
  readonly onRejected?: Listener<RejectedEvent<Reason>> | undefined;
}

/** The keys of {@link PolicyOptions}, for each factory's set of known option names. */
export const policyOptionKeys = {
  name: true,
  onSuccess: true,
  onFailure: true,
  onRejected: true,
} as const satisfies { readonly [K in keyof PolicyOptions]-?: true };

/** What every built-in policy offers: its name and the uniform events. */
export interface PolicyEvents<Reason extends string = string> {
  /** The name the policy's events carry (the `name` option; by default the pattern's name). */
  readonly name: string;
  /** Subscribes to calls that resolved; returns a disposer. */
  onSuccess(listener: Listener<SuccessEvent>): Disposer;
  /** Subscribes to calls that ended in an error (or whose error a fallback answered); returns a disposer. */
  onFailure(listener: Listener<FailureEvent>): Disposer;
  /** Subscribes to calls refused without running; returns a disposer. */
  onRejected(listener: Listener<RejectedEvent<Reason>>): Disposer;
}

/** A call the policy turned away: the event's `reason` and the error the call fails with. */
export class Refusal<Reason extends string = string> {
  constructor(
    readonly reason: Reason,
    readonly error: unknown,
  ) {}
}

/**
 * What admission hands to {@link GatedPolicy.settle} for an admitted call: a plain number, so
 * admission allocates nothing (the breaker packs its state generation and "is a probe" into it).
 */
export type Ticket = number;

/** Admitted (a {@link Ticket}), refused, or decided later (a queue, a remote store). */
export type Admission<Reason extends string> = Ticket | Refusal<Reason> | Promise<Ticket | Refusal<Reason>>;

/**
 * Passed to {@link GatedPolicy.run} only while someone listens to `onFailure`, for `run` to say
 * what the policy did with the call's failure.
 */
export interface CallNote {
  /** Set when the policy acted on the failure (retried it, timed the call out, hedged it). */
  handled: boolean;
  /**
   * Set when the policy answered a failure with a substitute value (fallback): the call resolves,
   * and is reported as this failure, handled.
   */
  answered: { readonly error: unknown } | undefined;
}

const noTicket: Ticket = 0;

/**
 * The base of every built-in policy. The hooks, each with a default that does nothing:
 * - {@link admit} (before): admit the call (a ticket), refuse it (a {@link Refusal}) or decide
 *   later (a promise of either; a rejection fails the call without running it);
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
  #name: string;
  // The gate's own state and steps use ES private names, so no policy member can clash with them.
  /** Times `durationMs`; a policy that has a `clock` option passes it to {@link configure}. */
  #clock: Clock = systemClock;
  readonly #succeeded = new Listeners<SuccessEvent>();
  readonly #failed = new Listeners<FailureEvent>();
  readonly #refused = new Listeners<RejectedEvent<Reason>>();
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
    this.#name = patternName;
    const base = GatedPolicy.prototype;
    this.#releases = this.release !== base.release;
    this.#settles = this.settle !== base.settle;
    this.#recovers = this.recover !== base.recover;
  }

  /**
   * Applies the {@link PolicyOptions} (validated: a `TypeError` names the bad one) and the clock
   * that times `durationMs`. Called once from the policy's constructor.
   */
  protected configure(options: PolicyOptions<Reason>, clock: Clock | undefined): void {
    const { name, onSuccess, onFailure, onRejected } = options;
    if (name !== undefined) {
      if (typeof name !== 'string' || name === '') {
        throw new TypeError(`expected "name" to be a non-empty string, got ${show(name)}`);
      }
      this.#name = name;
    }
    if (clock !== undefined) this.#clock = clock;
    if (onSuccess !== undefined) this.#succeeded.add(isFunction('onSuccess', onSuccess));
    if (onFailure !== undefined) this.#failed.add(isFunction('onFailure', onFailure));
    if (onRejected !== undefined) this.#refused.add(isFunction('onRejected', onRejected));
  }

  /** The name the policy's events carry (the `name` option; by default the pattern's name). */
  get name(): string {
    return this.#name;
  }

  /** Subscribes to calls that resolved; returns a disposer. */
  onSuccess(listener: Listener<SuccessEvent>): Disposer {
    return this.#succeeded.add(listener);
  }

  /** Subscribes to calls that ended in an error (or whose error a fallback answered); returns a disposer. */
  onFailure(listener: Listener<FailureEvent>): Disposer {
    return this.#failed.add(listener);
  }

  /** Subscribes to calls refused without running; returns a disposer. */
  onRejected(listener: Listener<RejectedEvent<Reason>>): Disposer {
    return this.#refused.add(listener);
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

  /** Whether someone listens to the events that need the call's duration. */
  get #observed(): boolean {
    return this.#succeeded.active || this.#failed.active;
  }

  /**
   * Runs `operation` through the gate (see {@link Policy.execute}): bad arguments and an
   * already-aborted signal reject before admission; a refusal rejects with its error without
   * calling the operation.
   */
  override execute<T>(operation: Operation<T>, options?: ExecuteOptions): Promise<T> {
    const context = openEdge(operation, options);
    if (context instanceof Promise) return context;
    if (this.#observed || !this.direct(context)) {
      return this.#enter((ctx: Context) => invoke(operation, ctx), context).then(settle);
    }
    const admission = this.admit(context);
    if (typeof admission === 'number') return this.#call(operation, context, admission);
    if (admission instanceof Refusal) return Promise.reject(this.#refuse(admission));
    return admission.then((later) => {
      if (typeof later !== 'number') return Promise.reject(this.#refuse(later));
      return context.signal.aborted
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
      if (this.#releases) this.release();
      else if (this.#settles) this.settle(ticket, false, undefined, context);
      return Promise.resolve(this.passValue === undefined ? result : this.passValue(result));
    }
    // Promise.resolve adopts a foreign thenable once, whatever it does: one release exactly.
    const promise = Promise.resolve(result);
    if (!this.#recovers) {
      if (this.#releases) return promise.then(this.#releaseValue, this.#releaseError);
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
    if (this.#releases) this.release();
    else if (this.#settles) this.settle(ticket, true, error, context);
    return this.recover(operation, context, error);
  }

  /** The step path (and observed calls): admit, run, release, report. Never rejects. */
  #enter<T>(next: Step<T>, context: Context): Promise<Outcome<T>> {
    const startedAt = this.#observed ? this.#clock.now() : 0;
    const admission = this.admit(context);
    if (typeof admission === 'number') return this.#pass(next, context, admission, startedAt);
    if (admission instanceof Refusal) return Promise.resolve(failure(this.#refuse(admission)));
    return admission.then(
      (later) => {
        if (typeof later !== 'number') return failure<T>(this.#refuse(later));
        if (!context.signal.aborted) return this.#pass(next, context, later, startedAt);
        return this.#report(failure<T>(this.#abandon(later, context)), startedAt, undefined, false);
      },
      (error: unknown) => this.#report(failure<T>(error), startedAt, undefined, false),
    );
  }

  /**
   * The caller aborted while its admission was being decided (between a queue handing it a slot
   * and the call starting): the operation must not run. Gives the ticket back; returns the reason.
   */
  #abandon(ticket: Ticket, context: Context): unknown {
    const reason: unknown = context.signal.reason;
    if (this.#releases) this.release();
    else if (this.#settles) this.settle(ticket, true, reason, context);
    return reason;
  }

  /** Runs an admitted step and releases its ticket when it settles. */
  #pass<T>(next: Step<T>, context: Context, ticket: Ticket, startedAt: number): Promise<Outcome<T>> {
    const note: CallNote | undefined = this.#failed.active
      ? { handled: false, answered: undefined }
      : undefined;
    let running: Promise<Outcome<T>>;
    try {
      running = this.run(next, context, ticket, note);
    } catch (error) {
      // Steps report failures as outcomes; this guards a broken foreign step.
      running = Promise.resolve(failure(error));
    }
    if (!this.#observed) {
      if (this.#releases) return running.then(this.#releaseOutcome, this.#releaseBroken<T>);
      if (!this.#settles) return running;
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
    let handled = false;
    if (this.#releases) this.release();
    else if (this.#settles)
      handled = this.settle(ticket, !outcome.ok, outcome.ok ? undefined : outcome.error, context);
    return this.#report(outcome, startedAt, note, handled);
  }

  /** Fires onSuccess or onFailure (when someone listens) for a call that ended. */
  #report<T>(
    outcome: Outcome<T>,
    startedAt: number,
    note: CallNote | undefined,
    handled: boolean,
  ): Outcome<T> {
    if (!this.#observed) return outcome;
    const durationMs = this.#clock.now() - startedAt;
    const answered = note?.answered;
    if (outcome.ok && answered === undefined) {
      if (this.#succeeded.active) this.#succeeded.emit({ policy: this.#name, durationMs });
    } else if (this.#failed.active) {
      const error = answered === undefined ? (outcome as { error: unknown }).error : answered.error;
      const acted = handled || answered !== undefined || note?.handled === true;
      this.#failed.emit({ policy: this.#name, error, kind: classify(error), durationMs, handled: acted });
    }
    return outcome;
  }

  /** Fires onRejected for a refusal and returns the error the call fails with. */
  #refuse(refusal: Refusal<Reason>): unknown {
    if (this.#refused.active) {
      this.#refused.emit({ policy: this.#name, reason: refusal.reason, error: refusal.error });
    }
    return refusal.error;
  }
}
