/**
 * The policy every chaos strategy is: a gated policy that, on the calls its injection decides,
 * hands the call to the strategy's injector instead of running it as is. Internal to
 * `bulwark/testing` (the types are public).
 */
import type { Clock } from '../core/clock.js';
import type { Context } from '../core/context.js';
import { type Disposer, type Listener, Listeners } from '../core/events.js';
import { GatedPolicy } from '../core/gate.js';
import type { CallNote, Ticket } from '../core/gate-types.js';
import { type Outcome, success } from '../core/outcome.js';
import { invoke, type Policy, type Step } from '../core/policy.js';
import type { PolicyEvents, PolicyOptions } from '../core/policy-events.js';
import { policyFields } from '../core/policy-fields.js';
import { clockField, listenerField, type ReadOptions } from '../core/read-options.js';
import { type InjectionOptions, injectionDecider, injectionFields } from './chaos-injection.js';

/** The four chaos strategies. */
export type ChaosStrategy = 'fault' | 'latency' | 'outcome' | 'behavior';

/** A call a chaos policy injected into, emitted before the injection takes effect. */
export interface InjectedEvent {
  /** The policy's `name`. */
  readonly policy: string;
  /** What was injected. */
  readonly injected: ChaosStrategy;
  /** The call's `context.attempt` (which try of a retry or hedge outside got it). */
  readonly attempt: number;
}

/** The options every chaos strategy takes besides its own. */
export interface ChaosOptions extends InjectionOptions, PolicyOptions<never> {
  /** Times the events' `durationMs` (and, for `chaos.latency`, the injected delay). @default systemClock */
  readonly clock?: Clock | undefined;
  /** Subscribes to injections, as `policy.onInjected(listener)`. */
  readonly onInjected?: Listener<InjectedEvent> | undefined;
}

/** The schema fields of {@link ChaosOptions}, for each strategy's schema to spread. */
export const chaosFields = {
  ...injectionFields,
  clock: clockField,
  onInjected: listenerField<InjectedEvent>(),
  ...policyFields<never>(),
};

/**
 * A chaos policy: a `Policy<Extra>` (`Extra` is the injected value's type for `chaos.outcome`,
 * `never` for the others) with the uniform events and `onInjected`. Create one with `chaos.fault`,
 * `chaos.latency`, `chaos.outcome` or `chaos.behavior`.
 */
export type ChaosPolicy<Extra = never> = Policy<Extra> &
  PolicyEvents<never> & {
    /** Subscribes to injections; returns a disposer. */
    onInjected(listener: Listener<InjectedEvent>): Disposer;
  };

/**
 * What a strategy does to a call it injects into, in place of running it as is (it may still run
 * `next`). Never rejects; sets `note.handled` when the call fails with what it injected.
 */
export type Injector = <T>(
  next: Step<T>,
  context: Context,
  note: CallNote | undefined,
) => Promise<Outcome<T>>;

/**
 * The outcome a value option gives for one call: the value itself, or, for a function, what it
 * returns (awaited) or throws, called with the call's context.
 */
export function produce(source: unknown, context: Context): Promise<Outcome<unknown>> {
  if (typeof source !== 'function') return Promise.resolve(success(source));
  return invoke(source as (context: Context) => unknown, context);
}

/** The gated policy behind every strategy. */
class Chaos extends GatedPolicy {
  private readonly decide: () => boolean;
  private readonly injected = new Listeners<InjectedEvent>();

  constructor(
    private readonly strategy: ChaosStrategy,
    private readonly inject: Injector,
    options: ReadOptions<typeof chaosFields>,
  ) {
    super(`chaos-${strategy}`);
    this.decide = injectionDecider(options);
    if (options.onInjected !== undefined) this.injected.add(options.onInjected);
    this.configure(options, options.clock);
  }

  onInjected(listener: Listener<InjectedEvent>): Disposer {
    return this.injected.add(listener);
  }

  /** Every call is decided in `run`: never the bare fast path. */
  protected override direct(_context: Context): boolean {
    return false;
  }

  protected override run<T>(
    next: Step<T>,
    context: Context,
    _ticket: Ticket,
    note: CallNote | undefined,
  ): Promise<Outcome<T>> {
    if (!this.decide()) return next(context);
    if (this.injected.active) {
      this.injected.emit({ policy: this.name, injected: this.strategy, attempt: context.attempt });
    }
    return this.inject(next, context, note);
  }
}

/** Builds the policy of `strategy` from its options read and its injector. */
export function chaosPolicy<Extra>(
  strategy: ChaosStrategy,
  inject: Injector,
  options: ReadOptions<typeof chaosFields>,
): ChaosPolicy<Extra> {
  return new Chaos(strategy, inject, options);
}
