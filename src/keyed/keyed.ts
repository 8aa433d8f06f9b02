import type { Context, Operation } from '../core/context.js';
import type { Disposer, Listener } from '../core/events.js';
import type { Outcome } from '../core/outcome.js';
import {
  BasePolicy,
  type ExecuteOptions,
  type Policy,
  type PolicyExtra,
  runStep,
  type Step,
} from '../core/policy.js';
import { func, nonEmptyString } from '../core/read-options.js';
import {
  type KeyedOptions,
  type KeyedOverflowEvent,
  type KeyedRemovedEvent,
  readKeyedOptions,
} from './options.js';
import { Registry } from './registry.js';

/** `registry.policy(key)`: the key's policy, looked up on every call and counted in flight. */
class KeyPolicy<P extends Policy<unknown>> extends BasePolicy {
  constructor(
    private readonly registry: Registry<P>,
    private readonly key: string,
  ) {
    super();
  }

  // The registry's execute keeps the key's own fast path (and checks the arguments itself).
  override execute<T>(operation: Operation<T>, options?: ExecuteOptions): Promise<T> {
    // Inside, a substitute value travels as T; policy() types the result T | PolicyExtra<P>.
    return this.registry.execute(this.key, operation, options) as Promise<T>;
  }

  [runStep]<T>(next: Step<T>, context: Context): Promise<Outcome<T>> {
    return this.registry.step(this.key, next, context);
  }
}

/**
 * A registry of one policy per key. Create one with {@link keyed}.
 *
 * An entry is held, and never evicted, while it has calls in flight through {@link execute} or
 * {@link policy}, while its circuit is not closed (a circuit breaker's `state`, or the
 * `breaker.state` of a `smartResilience()`), or while the `keep` option says so. Beyond `maxKeys`
 * the least recently used entry that is not held is evicted; when every entry is held the registry
 * grows past `maxKeys` instead (`onOverflow`, and {@link size} shows it), and shrinks back as the
 * holds end: an entry whose last call settles while the registry is over its bound goes at once,
 * and the next insertion evicts whatever became evictable.
 */
export class KeyedPolicies<P extends Policy<unknown>> {
  readonly #registry: Registry<P>;

  /** Use {@link keyed}. */
  constructor(factory: (key: string) => P, options: KeyedOptions<P>) {
    const make = func<(key: string) => P>()('factory', factory);
    const o = readKeyedOptions(options);
    const registry = new Registry(make, o.name, o.maxKeys, o.keep);
    if (o.onOverflow !== undefined) registry.overflowed.add(o.onOverflow);
    if (o.onRemoved !== undefined) registry.removed.add(o.onRemoved);
    this.#registry = registry;
  }

  /** The name the registry's events carry (the `name` option). */
  get name(): string {
    return this.#registry.name;
  }

  /** The bound on entries not held (the `maxKeys` option). */
  get maxKeys(): number {
    return this.#registry.maxKeys;
  }

  /** Entries in the registry now, held ones included: above {@link maxKeys} while overflowing. */
  get size(): number {
    return this.#registry.size;
  }

  /**
   * The policy of `key`, made with `factory(key)` on first use; the key becomes the most recently
   * used. Calls made on the returned policy itself are not counted, so they do not hold the entry
   * (a closed breaker or a bulkhead could be evicted under them, and a later `get` would make a new
   * one): run calls through {@link execute} or {@link policy} instead. Throws a `TypeError` for a
   * key that is not a non-empty string, or for a factory result without `execute`; throws what the
   * factory throws. A failed `get` caches nothing and evicts nothing.
   */
  get(key: string): P {
    return this.#registry.entry(key).instance;
  }

  /** The policy of `key` if the registry has one: makes none, and leaves its recency as it is. */
  peek(key: string): P | undefined {
    return this.#registry.peek(key)?.instance;
  }

  /**
   * A policy standing for `key` that can sit in a `pipeline(...)`: each call finds (or makes) the
   * key's policy at that moment and is counted in flight like {@link execute}, so the entry stays
   * held until the call settles. It holds no policy itself: after an eviction or a `delete`, the
   * next call gets the new one. Throws a `TypeError` for a key that is not a non-empty string.
   */
  policy(key: string): Policy<PolicyExtra<P>> {
    return new KeyPolicy(this.#registry, nonEmptyString('key', key));
  }

  /**
   * Runs `operation` under `key`'s policy (made on first use), holding the key's entry until the
   * call settles, whether it resolves, rejects, is refused or is aborted. Never throws
   * synchronously: a bad key, operation or option, an already-aborted signal and a throwing
   * factory reject before any entry is made or used.
   */
  execute<T>(key: string, operation: Operation<T>, options?: ExecuteOptions): Promise<T | PolicyExtra<P>> {
    return this.#registry.execute(key, operation, options) as Promise<T | PolicyExtra<P>>;
  }

  /**
   * Takes `key`'s entry out now, held or not (`onRemoved` with reason `'deleted'`); its calls in
   * flight finish on the old policy, and the next use of the key makes a new one. Returns whether
   * there was an entry.
   */
  delete(key: string): boolean {
    return this.#registry.delete(key);
  }

  /** A snapshot of the keys, least recently used first. */
  keys(): string[] {
    return this.#registry.keys();
  }

  /** Subscribes to insertions that left the registry over `maxKeys`; returns a disposer. */
  onOverflow(listener: Listener<KeyedOverflowEvent>): Disposer {
    return this.#registry.overflowed.add(listener);
  }

  /** Subscribes to entries leaving the registry (evicted or deleted); returns a disposer. */
  onRemoved(listener: Listener<KeyedRemovedEvent<P>>): Disposer {
    return this.#registry.removed.add(listener);
  }
}

/**
 * Creates a registry of one policy per key: a circuit breaker per downstream host, a bulkhead per
 * tenant, made by `factory(key)` on first use and kept in least-recently-used order, at most
 * `maxKeys` of them (required).
 *
 * - Never evicts an entry in use: one with calls in flight through `execute(key, …)` or
 *   `policy(key)`, or whose circuit is open, half-open or isolated. When only held entries are
 *   left, the registry grows past `maxKeys` and reports it (`onOverflow`, `size`) rather than lose
 *   a breaker's state or a bulkhead's count, and shrinks back as the holds end.
 * - Calls made on `get(key)`'s policy directly are invisible to the registry: they do not hold
 *   the entry. In a pipeline, put `policy(key)`.
 * - The registry calls nothing on an evicted policy; dispose of what your factory opened in
 *   `onRemoved`.
 * - Keys are non-empty strings; a `TypeError` otherwise. A factory that throws fails that call
 *   only: nothing is cached, nothing evicted.
 *
 * Throws a `TypeError` naming the option for a missing or invalid `maxKeys`, an unknown option
 * or a `factory` that is not a function.
 *
 * @example
 * const breakers = keyed(() => circuitBreaker({ failureThreshold: 5, resetTimeoutMs: 10_000 }), {
 *   maxKeys: 1_000,
 *   onOverflow: ({ size, maxKeys }) => log.warn(`${size} hosts held, bound ${maxKeys}`),
 * });
 * const response = await breakers.execute(url.host, ({ signal }) => fetch(url, { signal }));
 */
export function keyed<P extends Policy<unknown>>(
  factory: (key: string) => P,
  options: KeyedOptions<P>,
): KeyedPolicies<P> {
  return new KeyedPolicies(factory, options);
}
