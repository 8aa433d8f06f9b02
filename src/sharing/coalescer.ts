/**
 * A Coalescer shares one call among the concurrent callers of a key, across any number of
 * actions: `coalescer.do(key, fn)`. Each caller may leave on its own; the call runs while anyone
 * waits for it.
 */
import type { Disposer, Listener } from '../core/events.js';
import { show } from '../core/validate.js';
import { SharingEvents } from './events.js';
import {
  type CancelledEvent,
  type CoalescerOptions,
  readCallSignal,
  readCoalescerOptions,
  type SharedCallOptions,
  type SharedEvent,
} from './options.js';
import { type SharedCallContext, SharedCalls } from './shared-calls.js';

/**
 * Shares one call among the concurrent callers of a key (singleflight), across any number of
 * actions: the key is yours, and two actions that use the same key share one call. The call
 * starts with the first caller and ends when it settles: nothing is cached, errors included.
 *
 * A caller whose signal aborts rejects at once with its own reason and leaves; the call keeps
 * running for the others. The call's own signal (`fn({ signal })`) aborts only when every caller
 * has left (not at all with `keepRunningWhenAbandoned`). Compare `dedup`, where one caller's
 * abort cancels the call for all. Throws a `TypeError` for a bad or unknown option.
 *
 * @example
 * const coalescer = new Coalescer();
 * const user = await coalescer.do(`user:${id}`, ({ signal }) => fetchUser(id, { signal }), { signal });
 */
export class Coalescer {
  /** The `name` option: names the instance in its events. */
  readonly name: string;
  private readonly events: SharingEvents;
  private readonly calls: SharedCalls;

  constructor(options?: CoalescerOptions) {
    const o = readCoalescerOptions(options);
    this.name = o.name;
    this.events = new SharingEvents(o.name, o);
    this.calls = new SharedCalls(this.events, { keepRunning: o.keepRunningWhenAbandoned });
  }

  /** How many calls are in flight. */
  get inFlight(): number {
    return this.calls.size;
  }

  /**
   * Runs `fn` for `key`, or joins the call in flight for it, and resolves or rejects with its
   * outcome (every caller gets the same value or error). Rejects with `options.signal`'s reason
   * when it aborts first (at once, whatever `fn` does), and with a `TypeError` for a key that is
   * not a string or bad options.
   */
  do<T>(
    key: string,
    fn: (context: SharedCallContext) => T | PromiseLike<T>,
    options?: SharedCallOptions,
  ): Promise<T> {
    try {
      if (typeof fn !== 'function') throw new TypeError(`expected "fn" to be a function, got ${show(fn)}`);
      return this.calls.run(key, fn, readCallSignal(options));
    } catch (error) {
      return Promise.reject(error);
    }
  }

  /** Makes the next caller of `key` start a new call; the one in flight runs on for its callers. */
  forget(key: string): void {
    this.calls.forget(key);
  }

  /** Subscribes to callers joining a call in flight; returns the disposer. */
  onShared(listener: Listener<SharedEvent>): Disposer {
    return this.events.sharedCalls.add(listener);
  }

  /** Subscribes to calls cancelled because every caller left; returns the disposer. */
  onCancelled(listener: Listener<CancelledEvent>): Disposer {
    return this.events.cancelledCalls.add(listener);
  }
}
