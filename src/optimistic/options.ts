/**
 * The options of `optimisticUpdate()` and of each `update` call: types, defaults and validation,
 * read once per factory call (and once per `update` for its own options).
 */
import type { Clock } from '../core/clock.js';
import type { Listener } from '../core/events.js';
import { cryptoRandom, type Random } from '../core/random.js';
import {
  clockField,
  func,
  listenerField,
  nonEmptyString,
  optional,
  positiveInt,
  readOptions,
  required,
  type Schema,
  signal,
  withDefault,
} from '../core/read-options.js';
import { type Backoff, exponentialJitter } from '../retry/backoff.js';

/** A record as `load` returns it and `save` receives it: the value and its version. */
export interface Versioned<T, V> {
  /** The record's value. */
  readonly value: T;
  /**
   * Its version, as `load` read it: opaque to `optimisticUpdate` (a counter, an ETag, an
   * `updated_at`), never compared or changed by it; only your `save` checks it.
   */
  readonly version: V;
}

/** What `load` and `save` receive besides the key. */
export interface OptimisticContext {
  /** The attempt, 1 for the first; each conflict starts the next one with a fresh `load`. */
  readonly attempt: number;
  /** The caller's signal (a signal that never aborts when none was given): pass it to your I/O. */
  readonly signal: AbortSignal;
}

/** What `mutate` receives besides the value. */
export interface OptimisticMutateContext<K, V> extends OptimisticContext {
  /** The key passed to `update`. */
  readonly key: K;
  /** The version the value was loaded at. */
  readonly version: V;
}

/**
 * Reads the record of `key`: its value and version, or `undefined` (or `null`) when there is none
 * (the call then rejects with `OptimisticNotFoundError`). Runs at every attempt.
 */
export type OptimisticLoad<K, T, V> = (
  key: K,
  context: OptimisticContext,
) => Versioned<T, V> | undefined | null | Promise<Versioned<T, V> | undefined | null>;

/**
 * Writes `record.value` if, and only if, the stored version is still `record.version` (the one
 * loaded), advancing the version; resolves `true` when it wrote, `false` when the version had
 * changed (a conflict: the attempt is retried). Must be one atomic compare-and-set
 * (`UPDATE … WHERE id = $1 AND version = $2`, a conditional put, an `If-Match` request).
 */
export type OptimisticSave<K, T, V> = (
  key: K,
  record: Versioned<T, V>,
  context: OptimisticContext,
) => boolean | Promise<boolean>;

/**
 * The change: the new value from the loaded one. Runs again at every attempt, on a freshly loaded
 * value, so it must be pure-ish: compute, do not call out or count. May return a new object or
 * change the loaded one (each attempt loads its own).
 */
export type OptimisticMutate<K, T, V> = (value: T, context: OptimisticMutateContext<K, V>) => T | Promise<T>;

/** A conflict that will be retried: emitted before the backoff wait. */
export interface OptimisticConflictEvent<K = unknown> {
  /** The name of the `optimisticUpdate()` instance. */
  readonly policy: string;
  readonly key: K;
  /** The attempt that conflicted (1 for the first). */
  readonly attempt: number;
  /** How long the call waits before the next attempt, in ms. */
  readonly delayMs: number;
}

/** Every attempt conflicted: the call rejects with `OptimisticConflictError`. */
export interface OptimisticGiveUpEvent<K = unknown> {
  readonly policy: string;
  readonly key: K;
  /** How many attempts ran (all conflicted). */
  readonly attempts: number;
}

/** Options of `optimisticUpdate()`. */
export interface OptimisticUpdateOptions<K, T, V> {
  /** Reads the record's value and version (`undefined` or `null`: no record). Runs at every attempt. */
  readonly load: OptimisticLoad<K, T, V>;
  /** Compare-and-set: writes when the version is still the loaded one; `false` on a conflict. */
  readonly save: OptimisticSave<K, T, V>;
  /** The change, from the loaded value to the one saved. Runs at every attempt: keep it pure. */
  readonly mutate: OptimisticMutate<K, T, V>;
  /**
   * Total attempts, the first included (each one `load`, `mutate`, `save`). Racing with `n` other
   * writers of one record, a call conflicts at most `n` times: `n + 1` attempts always suffice.
   * @default 5
   */
  readonly maxAttempts?: number | undefined;
  /**
   * The wait before retry n (n = 1 after the first conflict).
   * @default exponentialJitter({ baseMs: 10, maxMs: 200 }) (±30 %, with `random`)
   */
  readonly backoff?: Backoff | undefined;
  /** Names the instance in its events. @default 'optimisticUpdate' */
  readonly name?: string | undefined;
  /** The clock the backoff waits on. @default systemClock */
  readonly clock?: Clock | undefined;
  /** The jitter of the default backoff (ignored with your own `backoff`). @default crypto */
  readonly random?: Random | undefined;
  /** Subscribes to conflicts that will be retried, as `.onConflict(listener)`. */
  readonly onConflict?: Listener<OptimisticConflictEvent<K>> | undefined;
  /** Subscribes to calls that ran out of attempts, as `.onGiveUp(listener)`. */
  readonly onGiveUp?: Listener<OptimisticGiveUpEvent<K>> | undefined;
}

/** Options of one `update` call. */
export interface OptimisticUpdateCallOptions {
  /**
   * Cancels the call: checked before each attempt and before each `save`, and it ends a backoff
   * wait at once; the call then rejects with the signal's reason. Passed on to `load`, `save` and
   * `mutate`. A `save` that already wrote is never undone: the call resolves.
   */
  readonly signal?: AbortSignal | undefined;
}

/** The first delay of the default backoff, in ms (client-go's `retry.DefaultRetry` waits 10 ms). */
export const DEFAULT_BASE_MS = 10;
/** The ceiling of the default backoff, in ms. */
export const DEFAULT_MAX_MS = 200;
/** The default of `maxAttempts`. */
export const DEFAULT_MAX_ATTEMPTS = 5;

type AnyOptions = OptimisticUpdateOptions<never, unknown, unknown>;

const schema = {
  load: required(func<AnyOptions['load']>()),
  save: required(func<AnyOptions['save']>()),
  mutate: required(func<AnyOptions['mutate']>()),
  maxAttempts: withDefault(DEFAULT_MAX_ATTEMPTS, positiveInt),
  backoff: optional(func<Backoff>()),
  name: withDefault('optimisticUpdate', nonEmptyString),
  clock: clockField,
  random: withDefault<Random>(cryptoRandom, func<Random>()),
  onConflict: listenerField<OptimisticConflictEvent<never>>(),
  onGiveUp: listenerField<OptimisticGiveUpEvent<never>>(),
} satisfies Schema<AnyOptions>;

/** The options read and checked: every default filled in, `backoff` included. */
export interface ReadOptimisticUpdateOptions<K, T, V> {
  readonly load: OptimisticLoad<K, T, V>;
  readonly save: OptimisticSave<K, T, V>;
  readonly mutate: OptimisticMutate<K, T, V>;
  readonly maxAttempts: number;
  readonly backoff: Backoff;
  readonly name: string;
  readonly clock: Clock;
  readonly onConflict: Listener<OptimisticConflictEvent<K>> | undefined;
  readonly onGiveUp: Listener<OptimisticGiveUpEvent<K>> | undefined;
}

/** Reads and checks `options`; a `TypeError` names a missing, bad or unknown option. */
export function readOptimisticUpdateOptions<K, T, V>(
  options: OptimisticUpdateOptions<K, T, V>,
): ReadOptimisticUpdateOptions<K, T, V> {
  const o = readOptions('optimisticUpdate options', options, schema);
  const backoff =
    o.backoff ?? exponentialJitter({ baseMs: DEFAULT_BASE_MS, maxMs: DEFAULT_MAX_MS, random: o.random });
  return { ...o, backoff } as unknown as ReadOptimisticUpdateOptions<K, T, V>;
}

const callSchema = { signal: optional(signal) } satisfies Schema<OptimisticUpdateCallOptions>;

/** Reads one call's options (a `TypeError` for a bad signal or an unknown key). */
export function readOptimisticCallOptions(options: OptimisticUpdateCallOptions | undefined) {
  return readOptions('update options', options, callSchema);
}
