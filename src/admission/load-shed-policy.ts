/**
 * The policy face of a load shedder: one per priority, admitting or refusing each call and counting
 * the admitted ones in flight until they settle.
 */
import type { Clock } from '../core/clock.js';
import type { Context } from '../core/context.js';
import { type Admission, GatedPolicy, Refusal } from '../core/gate.js';
import type { LoadShedError } from './errors.js';
import { type Priority, priorities } from './load-shedder-options.js';

/** Symbols of the hooks the shedder's policy uses; not part of the public API. */
export const tryEnter: unique symbol = Symbol('tryEnter');
export const leave: unique symbol = Symbol('leave');

/** What a {@link LoadShedPolicy} needs of its shedder. */
export interface ShedGate {
  /** Admits (counting one in flight) and returns undefined, or returns the refusal. */
  [tryEnter](rank: number): LoadShedError | undefined;
  /** Ends one admission. */
  [leave](): void;
}

/** Why a load shedder's policy refused a call (the `reason` of its `onRejected` events). */
export type LoadShedRejection = 'shed';

/**
 * The policy returned by {@link LoadShedder.policy}: admits or refuses each call at one priority
 * and tracks admitted calls as in flight until they settle. Its events: `onSuccess`, `onFailure`
 * (never `handled`) and `onRejected` with `reason: 'shed'` and the {@link LoadShedError}.
 */
export class LoadShedPolicy extends GatedPolicy<LoadShedRejection> {
  /** Use {@link LoadShedder.policy}. */
  constructor(
    private readonly shedder: ShedGate,
    private readonly rank: number,
    clock: Clock,
  ) {
    super('load-shedder');
    this.configure({}, clock);
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
