/**
 * `optimisticUpdate()`: a read-modify-write of one versioned record that loses no update under
 * concurrent writers, without holding a lock. Each attempt loads the record and its version,
 * computes the new value, and saves it only if the version is still the one loaded; a conflict
 * (somebody else saved first) starts a new attempt on the fresh record after a short jittered
 * wait. Only conflicts are retried (docs/optimistic-update.md).
 */
import { neverAborted } from '../core/abort.js';
import { type Disposer, type Listener, Listeners } from '../core/events.js';
import { show } from '../core/validate.js';
import type { Backoff } from '../retry/backoff.js';
import { OptimisticConflictError, OptimisticNotFoundError } from './errors.js';
import {
  type OptimisticConflictEvent,
  type OptimisticContext,
  type OptimisticGiveUpEvent,
  type OptimisticUpdateCallOptions,
  type OptimisticUpdateOptions,
  type ReadOptimisticUpdateOptions,
  readOptimisticCallOptions,
  readOptimisticUpdateOptions,
  type Versioned,
} from './options.js';

/** An optimistic updater of the records of one kind, from {@link optimisticUpdate}. */
export interface OptimisticUpdate<K, T> {
  /** The instance's name, in events. */
  readonly name: string;
  /**
   * Updates the record of `key`: `load` it, `mutate` its value, `save` it against the version
   * loaded; on a conflict (`save` resolved `false`) waits `backoff(n)` and starts over with a fresh
   * `load`, up to `maxAttempts` attempts in all. Resolves with the value that was saved.
   *
   * Rejects with `OptimisticConflictError` (kind `conflict`, `attempts`, `retryAfterMs`) when every
   * attempt conflicted, with `OptimisticNotFoundError` (kind `not_found`) when `load` finds no
   * record; with the error of `load`, `mutate`, `save` or `backoff` at once, unwrapped and never
   * retried; with a `TypeError` when `load` resolves something other than `{ value, version }`,
   * `undefined` or `null`, or `save` something other than a boolean; with the signal's reason when
   * it aborts before an attempt, before a `save` or during a wait. A `save` that wrote is final: the
   * call then resolves whatever the signal does.
   */
  update(key: K, options?: OptimisticUpdateCallOptions): Promise<T>;
  /** Subscribes to conflicts that will be retried (before each wait); returns the disposer. */
  onConflict(listener: Listener<OptimisticConflictEvent<K>>): Disposer;
  /** Subscribes to calls that ran out of attempts; returns the disposer. */
  onGiveUp(listener: Listener<OptimisticGiveUpEvent<K>>): Disposer;
}

/** `load`'s answer as a record, `undefined` for none; a `TypeError` for anything else. */
function loadedRecord<T, V>(loaded: unknown): Versioned<T, V> | undefined {
  if (loaded === undefined || loaded === null) return undefined;
  if (typeof loaded !== 'object' || !('value' in loaded) || !('version' in loaded)) {
    throw new TypeError(
      `expected "load" to resolve { value, version }, undefined or null, got ${show(loaded)}`,
    );
  }
  return loaded as Versioned<T, V>;
}

/** The wait before retry `retry`: a NaN or negative backoff means no wait. */
function delayOf(backoff: Backoff, retry: number): number {
  const delay = backoff(retry);
  // Not Math.max: NaN is to be 0 too (Math.max keeps NaN).
  // Stryker disable next-line EqualityOperator: (>=) a delay of 0 (or -0) waits no time either way; (<=), hidden too, is killed by the backoff tests
  const waits = delay > 0;
  return waits ? delay : 0;
}

class OptimisticUpdater<K, T, V> implements OptimisticUpdate<K, T> {
  readonly name: string;
  readonly #o: ReadOptimisticUpdateOptions<K, T, V>;
  readonly #conflicts = new Listeners<OptimisticConflictEvent<K>>();
  readonly #giveUps = new Listeners<OptimisticGiveUpEvent<K>>();

  constructor(o: ReadOptimisticUpdateOptions<K, T, V>) {
    this.#o = o;
    this.name = o.name;
    if (o.onConflict !== undefined) this.#conflicts.add(o.onConflict);
    if (o.onGiveUp !== undefined) this.#giveUps.add(o.onGiveUp);
  }

  async update(key: K, options?: OptimisticUpdateCallOptions): Promise<T> {
    // Stryker disable next-line ConditionalExpression: (false) reading undefined options gives no signal too, the test only skips the read; (true), hidden too, is killed by the abort tests
    const signal = options === undefined ? undefined : readOptimisticCallOptions(options).signal;
    const { load, save, mutate, maxAttempts, backoff, clock } = this.#o;
    const given = signal ?? neverAborted;
    for (let attempt = 1; ; attempt++) {
      if (signal?.aborted) throw signal.reason;
      const context: OptimisticContext = { attempt, signal: given };
      const loaded = loadedRecord<T, V>(await load(key, context));
      if (loaded === undefined) throw new OptimisticNotFoundError(key, attempt);
      const version = loaded.version;
      const value = await mutate(loaded.value, { key, version, attempt, signal: given });
      // Nothing is written for a caller that has left.
      if (signal?.aborted) throw signal.reason;
      const saved: unknown = await save(key, { value, version }, context);
      if (saved === true) return value;
      if (saved !== false) {
        throw new TypeError(
          `expected "save" to resolve true (saved) or false (a conflict), got ${show(saved)}`,
        );
      }
      if (signal?.aborted) throw signal.reason;
      if (attempt >= maxAttempts) {
        // Stryker disable next-line ConditionalExpression: (true) emitting with no listener does nothing; the check only skips building the event
        if (this.#giveUps.active) this.#giveUps.emit({ policy: this.name, key, attempts: attempt });
        throw new OptimisticConflictError(key, attempt, delayOf(backoff, attempt));
      }
      const delayMs = delayOf(backoff, attempt);
      // Stryker disable next-line ConditionalExpression: (true) emitting with no listener does nothing; the check only skips building the event
      if (this.#conflicts.active) this.#conflicts.emit({ policy: this.name, key, attempt, delayMs });
      if (delayMs > 0) await clock.sleep(delayMs, signal);
    }
  }

  onConflict(listener: Listener<OptimisticConflictEvent<K>>): Disposer {
    return this.#conflicts.add(listener);
  }

  onGiveUp(listener: Listener<OptimisticGiveUpEvent<K>>): Disposer {
    return this.#giveUps.add(listener);
  }
}

/**
 * Optimistic concurrency for one kind of record: `update(key)` loads the record and its version,
 * applies `mutate`, and saves the result only if nobody saved the record meanwhile (`save` is your
 * compare-and-set and resolves `false` on a version conflict). A conflict is retried from a fresh
 * `load` after `backoff` (default ±30 % jittered 10 ms doubling to 200 ms), up to `maxAttempts`
 * (default 5) attempts. No update is lost and no lock is held; under heavy contention prefer a
 * lock or a single writer (see docs/optimistic-update.md).
 *
 * `mutate` runs once per attempt on a freshly loaded value: keep it pure (no I/O, no counting).
 * Only conflicts are retried: an error of `load`, `mutate` or `save` ends the call at once. Throws
 * a `TypeError` for a missing, bad or unknown option.
 *
 * @example
 * interface Account { balance: number }
 * declare function readAccount(id: string): Promise<{ value: Account; version: number } | undefined>;
 * declare function writeAccountIf(id: string, value: Account, version: number): Promise<boolean>;
 *
 * const credit = optimisticUpdate({
 *   load: (id: string) => readAccount(id),
 *   save: (id, { value, version }) => writeAccountIf(id, value, version),
 *   mutate: (account) => ({ ...account, balance: account.balance + 10 }),
 * });
 * const account = await credit.update('acct-42', { signal: AbortSignal.timeout(2_000) });
 */
export function optimisticUpdate<K, T, V>(options: OptimisticUpdateOptions<K, T, V>): OptimisticUpdate<K, T> {
  return new OptimisticUpdater(readOptimisticUpdateOptions(options));
}
