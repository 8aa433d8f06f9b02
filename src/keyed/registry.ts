/**
 * The registry behind `keyed()`: one entry per key in least-recently-used order, the count of each
 * entry's calls in flight, and eviction that never takes a held entry. Internal to bulwark.
 *
 * lru-cache keeps the order: a use moves an entry to the most recent end in O(1), without the
 * rehashing a `Map` suffers when keys are deleted and set again. The registry decides evictions
 * itself, because lru-cache's own cannot be refused: its `dispose` runs once the entry is already
 * gone (putting it back evicts the next one, and loops when every entry is held), and its bound is
 * fixed, so it could not grow past `maxKeys` while entries are held. So its `maxSize` is never
 * reached, `dispose` is not used, and `onRemoved` is emitted here.
 */
import { LRUCache } from 'lru-cache';
import type { Context, Operation } from '../core/context.js';
import { Listeners } from '../core/events.js';
import { failure, type Outcome } from '../core/outcome.js';
import {
  type ComposablePolicy,
  composable,
  type ExecuteOptions,
  openEdge,
  type Policy,
  runStep,
  type Step,
} from '../core/policy.js';
import { nonEmptyString, policy as policyCheck } from '../core/read-options.js';
import type { KeyedOverflowEvent, KeyedRemovalReason, KeyedRemovedEvent } from './options.js';

/** Whether a circuit state holds its entry: open, half-open or isolated (not closed, nor no state). */
function notClosed(state: unknown): boolean {
  return state === 'open' || state === 'half-open' || state === 'isolated';
}

/**
 * Whether `instance`'s circuit is not closed, read from public state only: a circuit breaker's
 * `state`, or the `breaker.state` of a composite that exposes its breaker (`smartResilience()`).
 * A pure read: reading a breaker's state changes nothing.
 */
function circuitHeld(instance: object): boolean {
  const { state, breaker } = instance as { readonly state?: unknown; readonly breaker?: unknown };
  if (notClosed(state)) return true;
  return typeof breaker === 'object' && breaker !== null && notClosed((breaker as { state?: unknown }).state);
}

/** One key's policy and the registry's count of its calls in flight. */
export class Entry<P extends Policy<unknown>> {
  /** Calls started through the registry that have not settled yet. */
  inFlight = 0;
  #step: ComposablePolicy<unknown> | undefined;

  constructor(
    readonly key: string,
    readonly instance: P,
    /** Told when the entry's last call in flight settled. */
    private readonly idle: (entry: Entry<P>) => void,
  ) {}

  /** The policy as a pipeline step (made on first use: a foreign policy needs an adapter). */
  get step(): ComposablePolicy<unknown> {
    this.#step ??= composable(this.instance);
    return this.#step;
  }

  // Bound once per entry: ending a call allocates no closure.
  /** Ends one call that settled with `value` (a value or an outcome). */
  readonly pass = <X>(value: X): X => {
    this.end();
    return value;
  };
  /** Ends one call that rejected. */
  readonly fail = (error: unknown): never => {
    this.end();
    throw error;
  };

  private end(): void {
    if (--this.inFlight === 0) this.idle(this);
  }
}

/** Every entry counts 1; the registry keeps the count at `maxKeys` itself. */
const oneSlot = (): number => 1;

/** The entries of one `keyed()` registry. */
export class Registry<P extends Policy<unknown>> {
  readonly overflowed = new Listeners<KeyedOverflowEvent>();
  readonly removed = new Listeners<KeyedRemovedEvent<P>>();
  // Arrays grown on demand (`max` would allocate up front); never full, so lru-cache evicts nothing.
  private readonly entries = new LRUCache<string, Entry<P>>({
    maxSize: Number.MAX_SAFE_INTEGER,
    sizeCalculation: oneSlot,
  });

  constructor(
    private readonly factory: (key: string) => P,
    readonly name: string,
    readonly maxKeys: number,
    private readonly keep: ((instance: P, key: string) => boolean) | undefined,
  ) {}

  get size(): number {
    return this.entries.size;
  }

  /**
   * The entry of `key`, made with the factory on first use, now the most recently used. Throws a
   * `TypeError` for a key that is not a non-empty string or a factory result without `execute`,
   * and whatever the factory throws: then nothing is cached and nothing evicted.
   */
  entry(key: unknown): Entry<P> {
    return this.entries.get(nonEmptyString('key', key)) ?? this.insert(key as string);
  }

  /** The entry of `key` if present: no entry made, no recency changed. */
  peek(key: unknown): Entry<P> | undefined {
    return this.entries.peek(nonEmptyString('key', key));
  }

  /** Takes `key`'s entry out whether held or not; false when there was none. */
  delete(key: unknown): boolean {
    const found = this.peek(key);
    if (found === undefined) return false;
    this.remove(found, 'deleted');
    return true;
  }

  /** The keys, least recently used first. */
  keys(): string[] {
    return [...this.entries.rkeys()];
  }

  /**
   * Runs `operation` under `key`'s policy, counted in flight until the call settles: through the
   * policy's own `execute`, so its fast path is kept. Bad arguments, an aborted signal, a bad key
   * and a throwing factory reject before any entry is made or used.
   */
  execute<T>(key: unknown, operation: Operation<T>, options: ExecuteOptions | undefined): Promise<unknown> {
    const checked = openEdge(operation, options);
    if (checked instanceof Promise) return checked;
    let entry: Entry<P>;
    try {
      entry = this.entry(key);
    } catch (error) {
      return Promise.reject(error);
    }
    entry.inFlight++;
    let running: Promise<unknown>;
    try {
      // Promise.resolve returns a native promise as is; it adopts a foreign policy's thenable.
      running = Promise.resolve(entry.instance.execute(operation, options));
    } catch (error) {
      running = Promise.reject(error); // a foreign execute that throws still ends its count
    }
    return running.then(entry.pass, entry.fail);
  }

  /** The pipeline step of {@link execute}: `key`'s policy as a step, counted in flight. */
  step<T>(key: string, next: Step<T>, context: Context): Promise<Outcome<T>> {
    let entry: Entry<P>;
    try {
      entry = this.entry(key);
    } catch (error) {
      return Promise.resolve(failure(error));
    }
    entry.inFlight++;
    return entry.step[runStep](next, context).then(entry.pass, entry.fail);
  }

  private insert(key: string): Entry<P> {
    const instance = policyCheck(`factory(${JSON.stringify(key)})`, this.factory(key)) as P;
    const entry = new Entry(key, instance, this.settled);
    this.makeRoom();
    const entries = this.entries;
    entries.set(key, entry);
    const size = entries.size;
    if (size > this.maxKeys && this.overflowed.active) {
      this.overflowed.emit({ policy: this.name, key, size, maxKeys: this.maxKeys });
    }
    return entry;
  }

  /**
   * Evicts least recently used entries that are not held until one more fits. A held entry met on
   * the way becomes the most recently used (it is in use), so the next insertions do not walk past
   * it again; each entry is looked at once at most, so when every entry is held the loop ends and
   * the registry grows past `maxKeys` instead.
   */
  private makeRoom(): void {
    const entries = this.entries;
    for (let budget = entries.size; budget > 0 && entries.size >= this.maxKeys; budget--) {
      const oldest = entries.peek(entries.rkeys().next().value!)!; // the least recently used
      if (this.held(oldest)) entries.get(oldest.key);
      else this.remove(oldest, 'evicted');
    }
  }

  /**
   * An entry's last call settled. While the registry is over `maxKeys` (every other entry was held
   * when the last key came in), the entry goes at once unless its circuit (or `keep`) still holds
   * it: the registry shrinks as its holds end. Not when it was deleted meanwhile (another entry,
   * or none, has its key).
   */
  private readonly settled = (entry: Entry<P>): void => {
    const entries = this.entries;
    if (entries.size > this.maxKeys && entries.peek(entry.key) === entry && !this.held(entry)) {
      this.remove(entry, 'evicted');
    }
  };

  private held(entry: Entry<P>): boolean {
    if (entry.inFlight > 0 || circuitHeld(entry.instance)) return true;
    const keep = this.keep;
    if (keep === undefined) return false;
    try {
      return keep(entry.instance, entry.key);
    } catch {
      return true; // a broken predicate must not cost a key its state
    }
  }

  private remove(entry: Entry<P>, reason: KeyedRemovalReason): void {
    this.entries.delete(entry.key);
    // Stryker disable next-line ConditionalExpression: (true) emitting with no listener does nothing; the check only skips building the event
    if (this.removed.active) {
      this.removed.emit({ policy: this.name, key: entry.key, instance: entry.instance, reason });
    }
  }
}
