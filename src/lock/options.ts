/**
 * The options of `distributedLock()` and of each `withLock` / `withLocks` call: types, defaults
 * and validation.
 */
import type { Clock } from '../core/clock.js';
import type { Listener } from '../core/events.js';
import type { LeaseLoss } from '../core/lease-keeper.js';
import { cryptoRandom, type Random } from '../core/random.js';
import {
  clockField,
  func,
  listenerField,
  nonEmptyString,
  nonNegativeInt,
  optional,
  positiveInt,
  readOptions,
  type Schema,
  signal,
  storeOf,
  withDefault,
} from '../core/read-options.js';
import { show } from '../core/validate.js';
import type { LockStore } from './store.js';

/** A lock taken: `fn` is about to run. */
export interface LockAcquiredEvent {
  /** The name of the `distributedLock()` instance. */
  readonly policy: string;
  readonly key: string;
  readonly fence: number;
  /** How long the acquisition waited, in ms. */
  readonly waitedMs: number;
}

/** A lock lost while `fn` ran (`LockLostError`): its signal was aborted. */
export interface LockLostEvent {
  readonly policy: string;
  readonly key: string;
  /** What lost it: a renewal refused (taken over), failed (store down), or not confirmed in time. */
  readonly reason: LeaseLoss;
  /** The store's error, for `renew-failed`. */
  readonly error: unknown;
}

/** A release that failed after `fn` settled (the lease then ends by itself at its expiry). */
export interface LockReleaseFailedEvent {
  readonly policy: string;
  readonly key: string;
  readonly error: unknown;
}

/** Options of `distributedLock()`. */
export interface DistributedLockOptions {
  /** Where leases live. @default a new memoryLockStore (one process only) */
  readonly store?: LockStore | undefined;
  /** Names the instance in events. @default 'lock' */
  readonly name?: string | undefined;
  /** The clock the holder measures its lease and its waits on. @default systemClock */
  readonly clock?: Clock | undefined;
  /** Jitter of the polling delays while waiting (a function giving [0, 1)). @default crypto */
  readonly random?: Random | undefined;
  /** Subscribes to acquisitions, as `.onLockAcquired(listener)`. */
  readonly onLockAcquired?: Listener<LockAcquiredEvent> | undefined;
  /** Subscribes to lost locks, as `.onLockLost(listener)`. */
  readonly onLockLost?: Listener<LockLostEvent> | undefined;
  /** Subscribes to failed releases, as `.onReleaseFailed(listener)`. */
  readonly onReleaseFailed?: Listener<LockReleaseFailedEvent> | undefined;
}

/** Options of one `withLock` / `withLocks` call. */
export interface WithLockOptions {
  /**
   * The lease, in ms, renewed every `ttlMs / 3` while `fn` runs: how long a crashed holder blocks
   * the key. At least 300 ms and 3 × the store's deadline (a `TypeError` otherwise).
   * @default 30_000
   */
  readonly ttlMs?: number | undefined;
  /** How long to wait for a held lock before `LockNotAcquiredError`; 0 tries once. @default 10_000 */
  readonly waitMs?: number | undefined;
  /** Cancels the wait, or `fn` (its signal aborts with this signal's reason). */
  readonly signal?: AbortSignal | undefined;
}

/** The shortest `ttlMs` whatever the store. */
export const MIN_TTL_MS = 300;

const storeCheck = storeOf<LockStore>('a lock store', ['acquire', 'renew', 'release'], true);

const schema = {
  store: optional(storeCheck),
  name: withDefault('lock', nonEmptyString),
  clock: clockField,
  random: withDefault<Random>(cryptoRandom, func<Random>()),
  onLockAcquired: listenerField<LockAcquiredEvent>(),
  onLockLost: listenerField<LockLostEvent>(),
  onReleaseFailed: listenerField<LockReleaseFailedEvent>(),
} satisfies Schema<DistributedLockOptions>;

/** The options read and checked: every default filled in. */
export type ReadDistributedLockOptions = ReturnType<typeof readDistributedLockOptions>;

/** Reads and checks `options`; a `TypeError` names a bad or unknown option. */
export function readDistributedLockOptions(options: DistributedLockOptions | undefined) {
  return readOptions('distributedLock options', options, schema);
}

const callSchema = {
  ttlMs: withDefault(30_000, positiveInt),
  waitMs: withDefault(10_000, nonNegativeInt),
  signal: optional(signal),
} satisfies Schema<WithLockOptions>;

/** One call's options, read and checked against `store` (whose deadline bounds `ttlMs` from below). */
export function readWithLockOptions(options: WithLockOptions | undefined, store: LockStore) {
  const o = readOptions('withLock options', options, callSchema);
  const min = Math.max(MIN_TTL_MS, 3 * store.timeoutMs);
  if (o.ttlMs < min || !Number.isSafeInteger(o.ttlMs)) {
    throw new TypeError(
      `expected "ttlMs" to be at least ${min} (300 ms and 3 × the store's ${store.timeoutMs} ms deadline, so a renewal can be confirmed in time), got ${show(o.ttlMs)}`,
    );
  }
  return o;
}
