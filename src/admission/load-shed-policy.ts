/**
 * The policy face of a load shedder: one per priority, admitting or refusing each call and counting
 * the admitted ones in flight until they settle.
 */
import type { Clock } from '../core/clock.js';
import type { Context } from '../core/context.js';
import { GatedPolicy } from '../core/gate.js';
import { type Admission, Refusal } from '../core/gate-types.js';
import type { PolicyOptions } from '../core/policy-events.js';
import type { LoadShedError } from './errors.js';
import { type LoadShedRejection, type Priority, priorities } from './load-shedder-options.js';

/** The hook by which the shedder's policy asks to enter; not part of the public API. */
export const tryEnter: unique symbol = Symbol('tryEnter');
/** The hook by which the shedder's policy leaves after a call; not part of the public API. */
export const leave: unique symbol = Symbol('leave');

/** What a {@link LoadShedPolicy} needs of its shedder. */
export interface ShedGate {
  /** Admits (counting one in flight) and returns undefined, or returns the refusal. */
  [tryEnter](rank: number): LoadShedError | undefined;
  /** Ends one admission. */
  [leave](): void;
}

/** The default `name` of a load shedder and of its policies. */
export const loadShedderName = 'load-shedder';

/**
 * The policy returned by {@link LoadShedder.policy}: admits or refuses each call at one priority
 * and tracks admitted calls as in flight until they settle. Its events carry its shedder's `name`:
 * `onSuccess`, `onFailure` (never `handled`) and `onRejected` with `reason: 'shed'` and the
 * {@link LoadShedError}.
 */
export class LoadShedPolicy extends GatedPolicy<LoadShedRejection> {
  /**
   * Use {@link LoadShedder.policy}. `events` are the shedder's `name`, `onSuccess` and `onFailure`
   * (its `onRejected` is the shedder's own: it fires for every refusal, whichever way it came).
   */
  constructor(
    private readonly shedder: ShedGate,
    private readonly rank: number,
    events: Omit<PolicyOptions, 'onRejected'>,
    clock: Clock,
  ) {
    super(loadShedderName);
    this.configure(events, clock);
  }

  /** The priority this policy admits at. */
  get priority(): Priority {
    return priorities[this.rank]!;
  }

  /** Admits (counting the call in flight) or refuses with a {@link LoadShedError}. */
  protected override admit(_context: Context): Admission<LoadShedRejection> {
    const refusal = this.shedder[tryEnter](this.rank);
    return refusal === undefined ? 0 : new Refusal('shed', refusal);
  }

  /** The admitted call settled: it no longer counts as in flight. */
  protected override release(): void {
    this.shedder[leave]();
  }
}
