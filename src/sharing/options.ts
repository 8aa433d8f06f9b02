/** The options and events of `new Coalescer()` and `dedup()`: types, defaults and validation. */
import type { Listener } from '../core/events.js';
import {
  boolean,
  func,
  listenerField,
  nonEmptyString,
  optional,
  readOptions,
  required,
  type Schema,
  signal,
  withDefault,
} from '../core/read-options.js';

/** A caller joined a call already in flight for its key (it did not start one). */
export interface SharedEvent {
  /** The name of the `Coalescer` or `dedup` instance. */
  readonly policy: string;
  readonly key: string;
  /** How many callers the call has had, this one included. */
  readonly waiters: number;
}

/**
 * A call in flight was cancelled before it settled, and its signal aborted with `reason`: under
 * `dedup` a waiter's signal aborted; under a `Coalescer` every waiter left.
 */
export interface CancelledEvent {
  readonly policy: string;
  readonly key: string;
  readonly reason: unknown;
}

/** Options of `new Coalescer()`. */
export interface CoalescerOptions {
  /** Names the instance in events. @default 'coalescer' */
  readonly name?: string | undefined;
  /**
   * Let a call run on when every waiter has left (its signal then never aborts for that reason),
   * e.g. to fill a cache; later callers of the key still join it. @default false
   */
  readonly keepRunningWhenAbandoned?: boolean | undefined;
  /** Subscribes to shared calls, as `.onShared(listener)`. */
  readonly onShared?: Listener<SharedEvent> | undefined;
  /** Subscribes to cancelled calls, as `.onCancelled(listener)`. */
  readonly onCancelled?: Listener<CancelledEvent> | undefined;
}

/** Options of `dedup(action, options)`. */
export interface DedupOptions<I> {
  /** The key of an input: calls whose inputs have the same key share one execution. */
  readonly key: (input: I) => string;
  /** Names the instance in events. @default 'dedup' */
  readonly name?: string | undefined;
  /** Subscribes to shared calls, as `.onShared(listener)`. */
  readonly onShared?: Listener<SharedEvent> | undefined;
  /** Subscribes to cancelled calls, as `.onCancelled(listener)`. */
  readonly onCancelled?: Listener<CancelledEvent> | undefined;
}

/** Options of one call (`coalescer.do(…)` or a deduped function). */
export interface SharedCallOptions {
  /**
   * Cancels this caller's wait. Under a `Coalescer` only this caller rejects (with the signal's
   * reason); under `dedup` the shared call is cancelled and every caller rejects with it.
   */
  readonly signal?: AbortSignal | undefined;
}

const coalescerSchema = {
  name: withDefault('coalescer', nonEmptyString),
  keepRunningWhenAbandoned: withDefault(false, boolean),
  onShared: listenerField<SharedEvent>(),
  onCancelled: listenerField<CancelledEvent>(),
} satisfies Schema<CoalescerOptions>;

/** Reads and checks `options`; a `TypeError` names a bad or unknown option. */
export function readCoalescerOptions(options: CoalescerOptions | undefined) {
  return readOptions('Coalescer options', options, coalescerSchema);
}

const dedupSchema = {
  key: required(func<(input: unknown) => string>()),
  name: withDefault('dedup', nonEmptyString),
  onShared: listenerField<SharedEvent>(),
  onCancelled: listenerField<CancelledEvent>(),
} satisfies Schema<DedupOptions<unknown>>;

/** Reads and checks `options`; a `TypeError` names a bad, missing or unknown option. */
export function readDedupOptions<I>(options: DedupOptions<I> | undefined) {
  return readOptions('dedup options', options, dedupSchema);
}

const callSchema = { signal: optional(signal) } satisfies Schema<SharedCallOptions>;

/** One call's signal; a `TypeError` for a bad or unknown option. No options, no work. */
export function readCallSignal(options: SharedCallOptions | undefined): AbortSignal | undefined {
  // Stryker disable next-line ConditionalExpression: (false) readOptions reads undefined as no options too; the check only skips that work
  return options === undefined ? undefined : readOptions('call options', options, callSchema).signal;
}
