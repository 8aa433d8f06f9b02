/**
 * `dedup(action, { key })`: one action whose concurrent calls with the same key collapse into
 * one execution.
 */
import type { Disposer, Listener } from '../core/events.js';
import { isFunction } from '../core/validate.js';
import { SharingEvents } from './events.js';
import {
  type CancelledEvent,
  type DedupOptions,
  readCallSignal,
  readDedupOptions,
  type SharedCallOptions,
  type SharedEvent,
} from './options.js';
import { type SharedCallContext, SharedCalls } from './shared-calls.js';

/** The function `dedup` returns: the action, shared by key. */
export interface Deduped<I, T> {
  /**
   * Runs the action for `input`, or joins the execution in flight for its key; every caller gets
   * the same value or error. When any caller's signal aborts, the execution's signal aborts and
   * every caller rejects with that reason at once.
   */
  (input: I, options?: SharedCallOptions): Promise<T>;
  /** The `name` option. */
  readonly name: string;
  /** How many executions are in flight. */
  readonly inFlight: number;
  /** Makes the next call for `key` start a new execution; the one in flight runs on. */
  forget(key: string): void;
  /** Subscribes to calls joining an execution in flight; returns the disposer. */
  onShared(listener: Listener<SharedEvent>): Disposer;
  /** Subscribes to executions cancelled by a caller's abort; returns the disposer. */
  onCancelled(listener: Listener<CancelledEvent>): Disposer;
}

/**
 * Wraps `action` so that concurrent calls whose inputs have the same `key(input)` collapse into
 * one execution, whose value or error every caller gets. The entry goes the moment the execution
 * settles: nothing is cached, errors included. One caller's abort cancels the execution for all
 * (its signal aborts and every caller rejects with that reason): use a `Coalescer` when callers
 * must leave one by one. Throws a `TypeError` for a bad, missing or unknown option; a call
 * rejects with a `TypeError` when `key(input)` is not a string.
 *
 * @example
 * const loadUser = dedup((id: string, { signal }) => fetchUser(id, { signal }), { key: (id) => id });
 * const [a, b] = await Promise.all([loadUser('42'), loadUser('42')]); // one fetch
 */
export function dedup<I, T>(
  action: (input: I, context: SharedCallContext) => T | PromiseLike<T>,
  options: DedupOptions<I>,
): Deduped<I, T> {
  isFunction('action', action);
  const o = readDedupOptions(options);
  const keyOf = o.key as (input: I) => string;
  const events = new SharingEvents(o.name, o);
  const calls = new SharedCalls(events, { cancelAll: true });
  const deduped = (input: I, callOptions?: SharedCallOptions): Promise<T> => {
    try {
      return calls.run(keyOf(input), (context) => action(input, context), readCallSignal(callOptions));
    } catch (error) {
      return Promise.reject(error);
    }
  };
  return Object.defineProperties(deduped, {
    name: { value: o.name },
    inFlight: { get: () => calls.size },
    forget: { value: (key: string) => calls.forget(key) },
    onShared: { value: (listener: Listener<SharedEvent>) => events.sharedCalls.add(listener) },
    onCancelled: { value: (listener: Listener<CancelledEvent>) => events.cancelledCalls.add(listener) },
  }) as Deduped<I, T>;
}
