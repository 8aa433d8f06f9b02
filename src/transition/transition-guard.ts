/**
 * `transitionGuard()`: keeps an entity's state field on the moves its definition allows. A handler
 * edits the entity freely; if it leaves the field at a state the definition does not allow from
 * the one it started in, every edit is undone in place and the call rejects with
 * `InvalidTransitionError`. The handler knows nothing of the rules (docs/transition-guard.md).
 */
import { show } from '../core/validate.js';
import { InvalidTransitionError } from './errors.js';
import { readTransitionGuardOptions, type TransitionGuardOptions } from './options.js';
import { type Snapshot, takeSnapshot } from './snapshot.js';

/** An entity whose `F` property holds its state (any object when `F` is not a literal). */
export type GuardedEntity<F extends string> = string extends F ? object : { readonly [K in F]: string };

/** A transition guard, from {@link transitionGuard}. */
export interface TransitionGuard<S extends string = string, F extends string = string> {
  /** The `name` option. */
  readonly name: string;
  /** The guarded property (the `field` option). */
  readonly field: F;
  /**
   * Runs `handler(entity)` and keeps its edits only if it left `entity[field]` in the state it
   * started in or at one the definition allows from there. Always returns a promise, even for a
   * synchronous handler; resolves with the handler's value.
   *
   * Before the handler runs, the entity's data is copied with `structuredClone`. When the handler
   * makes a move the definition does not allow (or writes something that is no state), every
   * object of the entity is put back as it was, in place (keys it added deleted, the others set
   * again, nested objects, arrays, Maps, Sets and Dates too: references to them stay valid), and
   * the call rejects with `InvalidTransitionError`. When the handler throws or rejects, the
   * entity is put back the same way and the call rejects with the handler's own error.
   *
   * Rejects with a `TypeError`, the handler not run, when `handler` is no function, `entity` is no
   * ordinary object (or class instance), `entity[field]` is not an own enumerable data property
   * holding a state of the definition, or the entity holds what `structuredClone` cannot copy (a
   * function, a symbol, a promise...). Data `structuredClone` does not copy (symbol-keyed and
   * non-enumerable properties, own getters and setters, private `#fields`) is neither saved nor
   * restored.
   *
   * @example
   * const paid = await orders.run(order, (o) => {
   *   o.status = 'paid';
   *   o.paidAt = payment.completedAt;
   *   return o.id;
   * });
   */
  run<E extends GuardedEntity<F>, R>(entity: E, handler: (entity: E) => R | PromiseLike<R>): Promise<R>;
  /**
   * Whether `run` accepts a move from `from` to `to`: true when the definition lists `to` among
   * `from`'s targets, and when `from === to` (staying is no transition). Throws a `TypeError` when
   * either is not a state of the definition.
   *
   * @example
   * if (!orders.canTransition(order.status, 'cancelled')) hideCancelButton();
   */
  canTransition(from: S, to: S): boolean;
  /**
   * The states the definition allows `from` to move to, in the order it lists them (frozen; `[]`
   * for a final state). Staying in `from` is always allowed and not listed unless the definition
   * lists it. Throws a `TypeError` when `from` is not a state of the definition.
   *
   * @example
   * const actions = orders.next(order.status); // ['shipped', 'refunded']
   */
  next(from: S): readonly S[];
}

class Guard<S extends string, F extends string> implements TransitionGuard<S, F> {
  constructor(
    readonly name: string,
    readonly field: F,
    /** Each state's targets, looked up by any value: what is no state (no string, say) finds none. */
    private readonly transitions: ReadonlyMap<unknown, readonly string[]>,
  ) {}

  async run<E extends GuardedEntity<F>, R>(
    entity: E,
    handler: (entity: E) => R | PromiseLike<R>,
  ): Promise<R> {
    if (typeof handler !== 'function')
      throw new TypeError(`expected "handler" to be a function, got ${show(handler)}`);
    const from = this.stateOf(entity);
    const snapshot = snapshotOf(entity);
    let value: R;
    try {
      value = await handler(entity);
    } catch (error) {
      snapshot.restore();
      throw error;
    }
    const to: unknown = (entity as Record<string, unknown>)[this.field];
    const allowed: readonly unknown[] = this.transitions.get(from)!; // stateOf checked `from`: a state
    if (to === from || allowed.includes(to)) return value;
    snapshot.restore();
    throw new InvalidTransitionError(this.field, from, to, { expose: this.transitions.has(to) });
  }

  canTransition(from: S, to: S): boolean {
    const targets = this.targets('from', from);
    this.targets('to', to);
    return from === to || targets.includes(to);
  }

  next(from: S): readonly S[] {
    return this.targets('from', from) as readonly S[];
  }

  /** The targets of `state`, or a `TypeError` naming `name` when it is no state. */
  private targets(name: string, state: unknown): readonly string[] {
    const targets = this.transitions.get(state);
    if (targets === undefined) {
      const states = [...this.transitions.keys()].map(show).join(', ');
      throw new TypeError(`expected "${name}" to be a state (one of ${states}), got ${show(state)}`);
    }
    return targets;
  }

  /** The entity's current state, checked: an own enumerable data property, holding a state. */
  private stateOf(entity: unknown): string {
    if (typeof entity !== 'object' || entity === null || Array.isArray(entity))
      throw new TypeError(`expected "entity" to be an object, got ${show(entity)}`);
    const name = `entity.${this.field}`;
    const own = Object.getOwnPropertyDescriptor(entity, this.field);
    // A getter's or a non-enumerable property's state is not in the snapshot: it could not be restored
    if (own === undefined || !('value' in own) || !own.enumerable) {
      const got = own === undefined ? 'no such own property' : 'an accessor or non-enumerable property';
      throw new TypeError(`expected "${name}" to be an own enumerable data property, got ${got}`);
    }
    this.targets(name, own.value);
    return own.value as string;
  }
}

/** Snapshots an entity; a `TypeError` when it holds what `structuredClone` cannot copy, or is no record. */
function snapshotOf(entity: object): Snapshot {
  let snapshot: Snapshot;
  try {
    snapshot = takeSnapshot(entity);
  } catch (error) {
    if ((error as { name?: unknown } | null)?.name !== 'DataCloneError') throw error;
    throw new TypeError(
      `expected "entity" to be data structuredClone can copy (no functions, symbols or promises): ${(error as Error).message}`,
      { cause: error },
    );
  }
  if (Object.getPrototypeOf(snapshot.data) !== Object.prototype)
    throw new TypeError(
      `expected "entity" to be an ordinary object or class instance, got ${snapshot.data.constructor.name}`,
    );
  return snapshot;
}

/**
 * Builds a guard over one state field: `run(entity, handler)` lets a handler edit the entity and
 * keeps the edits only when the field moved along a transition of the definition (or stayed).
 * Throws a `TypeError` at construction for a missing or empty `field`, a `transitions` that is no
 * plain object or defines no state, a state mapping to anything but an array of strings, a target
 * that is not a state (a key), a target listed twice, a bad `name`, or an unknown option.
 *
 * @example
 * const orders = transitionGuard({
 *   field: 'status',
 *   transitions: {
 *     pending: ['paid', 'cancelled'],
 *     paid: ['shipped', 'refunded'],
 *     shipped: [],
 *     cancelled: [],
 *     refunded: [],
 *   },
 * });
 * await orders.run(order, (o) => {
 *   o.status = 'shipped'; // from 'pending': rejects with InvalidTransitionError, order untouched
 * });
 */
export function transitionGuard<const S extends string, const F extends string>(
  options: TransitionGuardOptions<S, F>,
): TransitionGuard<S, F> {
  const { name, field, transitions } = readTransitionGuardOptions(options as TransitionGuardOptions);
  return new Guard<S, F>(name, field as F, transitions);
}
