/**
 * The uniform events of every built-in policy: their shapes, the options that subscribe to them,
 * and the emitter the gate reports each call through. Internal to bulwark (the types are public).
 */
import { classify } from './classify.js';
import { type Clock, systemClock } from './clock.js';
import { type Disposer, type Listener, Listeners } from './events.js';
import type { Kind } from './kind.js';
import type { Outcome } from './outcome.js';
import { nonEmptyString } from './read-options.js';
import {
  type Attributes,
  countEvent,
  type TelemetryEvent,
  type TelemetryOutcome,
  telemetry,
} from './telemetry.js';
import { isFunction } from './validate.js';

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
} as const satisfies { readonly [K in keyof PolicyOptions]-?: boolean };

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

/**
 * A policy's name and its uniform events' listeners: reads no clock and builds no event while no
 * one listens; a throwing listener is reported and never breaks the call (see {@link Listeners}).
 */
export class CallEvents<Reason extends string> {
  readonly succeeded = new Listeners<SuccessEvent>();
  readonly failed = new Listeners<FailureEvent>();
  readonly refused = new Listeners<RejectedEvent<Reason>>();
  /** Times `durationMs`. */
  private clock: Clock = systemClock;

  /** The attributes of its telemetry records, made on first use (after `configure`). */
  private attributes: CallAttributes | undefined;

  /** @param pattern the pattern's name: the `bulwark.pattern` of its telemetry, and the default `name`. */
  constructor(readonly pattern: string) {
    this.name = pattern;
  }

  /** The policy's `name` (the `bulwark.policy` of its telemetry). */
  name: string;

  /**
   * Applies the {@link PolicyOptions} (validated: a `TypeError` names the bad one) and the clock
   * that times `durationMs`.
   */
  configure(options: PolicyOptions<Reason>, clock: Clock | undefined): void {
    const { name, onSuccess, onFailure, onRejected } = options;
    if (name !== undefined) this.name = nonEmptyString('name', name);
    if (clock !== undefined) this.clock = clock;
    if (onSuccess !== undefined) this.succeeded.add(isFunction('onSuccess', onSuccess));
    if (onFailure !== undefined) this.failed.add(isFunction('onFailure', onFailure));
    if (onRejected !== undefined) this.refused.add(isFunction('onRejected', onRejected));
  }

  /**
   * Whether someone listens to the events that need the call's duration: a listener, or a
   * registered OpenTelemetry MeterProvider.
   */
  get observed(): boolean {
    return this.succeeded.active || this.failed.active || telemetry() !== undefined;
  }

  /**
   * When a call starts, for its `durationMs`: the clock's time while observed, else `NaN` (a call
   * that began unobserved reports a duration of 0 to a listener added meanwhile, and none to
   * telemetry).
   */
  start(): number {
    return this.observed ? this.clock.now() : Number.NaN;
  }

  /**
   * Fires onSuccess or onFailure (when someone listens) for a call that ended: a failure, or a
   * value that `answered` a failure (fallback); `handled` says whether the policy acted on it.
   */
  report<T>(
    outcome: Outcome<T>,
    startedAt: number,
    answered: { readonly error: unknown } | undefined,
    handled: boolean,
  ): Outcome<T> {
    const timed = !Number.isNaN(startedAt); // the call began observed
    // A call that began unobserved has no duration for telemetry: only a listener added since
    // wants its event (and the telemetry check, the costliest part here, is skipped).
    // Stryker disable next-line ConditionalExpression: (false) the early return only saves work: unobserved and unlistened, the rest emits to nobody and returns outcome; (true), hidden too, is killed by the event tests
    if (timed ? !this.observed : !this.succeeded.active && !this.failed.active) return outcome;
    const durationMs = timed ? this.clock.now() - startedAt : 0;
    const t = timed ? telemetry() : undefined;
    if (t !== undefined) {
      const attributes = this.attributesOf();
      t.attemptDuration.record(
        durationMs / 1_000,
        outcome.ok && answered === undefined ? attributes.success : attributes.failure,
      );
    }
    if (outcome.ok && answered === undefined) {
      // Stryker disable next-line ConditionalExpression: (true) emit with no listener returns at once; only the event object is built for nothing
      if (this.succeeded.active) this.succeeded.emit({ policy: this.name, durationMs });
    } else if (this.failed.active) {
      const error = answered === undefined ? (outcome as { error: unknown }).error : answered.error;
      this.failed.emit({ policy: this.name, error, kind: classify(error), durationMs, handled });
    }
    return outcome;
  }

  /** Fires onRejected for a refusal, and counts it in telemetry; returns the error the call fails with. */
  reject(reason: Reason, error: unknown): unknown {
    // Stryker disable next-line ConditionalExpression: (true) emit with no listener returns at once; only the event object is built for nothing
    if (this.refused.active) this.refused.emit({ policy: this.name, reason, error });
    countEvent(refusalEvent(this.pattern, reason), this.pattern, this.name, error);
    return error;
  }

  private attributesOf(): CallAttributes {
    this.attributes ??= {
      success: this.recordAttributes('success'),
      failure: this.recordAttributes('failure'),
    };
    return this.attributes;
  }

  private recordAttributes(outcome: TelemetryOutcome): Attributes {
    return { 'bulwark.pattern': this.pattern, 'bulwark.policy': this.name, 'bulwark.outcome': outcome };
  }
}

/** The attributes of a policy's duration records, by outcome (made once per policy). */
interface CallAttributes {
  readonly success: Attributes;
  readonly failure: Attributes;
}

/**
 * The `bulwark.event` of a refusal: `shed` for the load shedder, `rate_limited` for a rate limit
 * (its queue full included), `rejected` for every other policy's.
 */
function refusalEvent(pattern: string, reason: string): TelemetryEvent {
  if (reason === 'shed') return 'shed';
  if (pattern === 'rate-limit') return 'rate_limited';
  return 'rejected';
}
