/** The options and events of `keyed(factory, options)`: types, defaults and validation. */
import type { Listener } from '../core/events.js';
import type { Policy } from '../core/policy.js';
import {
  func,
  listenerField,
  nonEmptyString,
  optional,
  positiveInt,
  readOptions,
  required,
  type Schema,
  withDefault,
} from '../core/read-options.js';

/**
 * An insertion left the registry over `maxKeys`: every entry but the new one was held (calls in
 * flight, a circuit that is not closed, or `keep`), so none could be evicted. Fired once per such
 * insertion; `size` is the registry's size after it.
 */
export interface KeyedOverflowEvent {
  /** The registry's `name`. */
  readonly policy: string;
  /** The key whose insertion overflowed. */
  readonly key: string;
  /** Entries now in the registry (above `maxKeys`). */
  readonly size: number;
  /** The registry's bound. */
  readonly maxKeys: number;
}

/** Why an entry left the registry: evicted to make room, or taken out by `delete(key)`. */
export type KeyedRemovalReason = 'evicted' | 'deleted';

/**
 * A key's policy left the registry. The registry calls nothing on it: dispose of what the factory
 * opened here. After `'deleted'` its calls still in flight finish on it.
 */
export interface KeyedRemovedEvent<P> {
  /** The registry's `name`. */
  readonly policy: string;
  /** The key whose entry left. */
  readonly key: string;
  /** The key's policy, as the factory made it. */
  readonly instance: P;
  readonly reason: KeyedRemovalReason;
}

/** Options of `keyed(factory, options)`. */
export interface KeyedOptions<P = Policy<unknown>> {
  /**
   * Most entries kept: beyond it, the least recently used entry that is not held is evicted. Held
   * entries are never evicted, so the registry may exceed it (see `onOverflow`). A positive
   * integer; required (no `Infinity`): the bound is what the registry is for.
   */
  readonly maxKeys: number;
  /** Names the registry in its events. A non-empty string. @default 'keyed' */
  readonly name?: string | undefined;
  /**
   * One more reason to hold an idle entry (besides calls in flight and a circuit that is not
   * closed): while it returns `true` the entry is not evicted, e.g. for a policy whose circuit the
   * registry cannot read. Asked only when the entry is next in line for eviction. A `keep` that
   * throws counts as `true`: the entry is kept rather than its state lost.
   */
  readonly keep?: ((instance: P, key: string) => boolean) | undefined;
  /** Subscribes to insertions that left the registry over `maxKeys`, as `.onOverflow(listener)`. */
  readonly onOverflow?: Listener<KeyedOverflowEvent> | undefined;
  /** Subscribes to entries leaving the registry, as `.onRemoved(listener)`. */
  readonly onRemoved?: Listener<KeyedRemovedEvent<P>> | undefined;
}

const schema = {
  maxKeys: required(positiveInt),
  name: withDefault('keyed', nonEmptyString),
  keep: optional(func<(instance: unknown, key: string) => boolean>()),
  onOverflow: listenerField<KeyedOverflowEvent>(),
  onRemoved: listenerField<KeyedRemovedEvent<unknown>>(),
} satisfies Schema<KeyedOptions>;

/** Reads and checks `options`; a `TypeError` names a bad, missing or unknown option. */
export function readKeyedOptions<P>(options: KeyedOptions<P>) {
  const read = readOptions('keyed options', options, schema);
  // The schema checks functions, not their parameter types: the registry passes them its own P.
  return read as Omit<typeof read, 'keep' | 'onRemoved'> & {
    readonly keep: KeyedOptions<P>['keep'];
    readonly onRemoved: KeyedOptions<P>['onRemoved'];
  };
}
