/**
 * The options of `idempotency()`: types, defaults and validation, read once per factory call.
 */

import type { Clock } from '../core/clock.js';
import type { Listener } from '../core/events.js';
import type { LeaseLoss } from '../core/lease-keeper.js';
import {
  boolean,
  clockField,
  func,
  listenerField,
  nonEmptyString,
  optional,
  positiveInt,
  readOptions,
  type Schema,
  storeOf,
  withDefault,
} from '../core/read-options.js';
import type { IdempotencyStore } from './store.js';

/** A result replayed to a duplicate request: the handler did not run. */
export interface ReplayEvent {
  /** The name of the `idempotency()` instance. */
  readonly policy: string;
  readonly key: string;
}

/** A key reused for another request (`IdempotencyConflictError`). */
export interface ConflictEvent {
  readonly policy: string;
  readonly key: string;
}

/** A lease lost while the handler ran (`LeaseLostError`). */
export interface LeaseLostEvent {
  readonly policy: string;
  readonly key: string;
  /** What lost it: a renewal refused or failed, a renewal too late, or `complete` refused. */
  readonly reason: LeaseLoss | 'complete-refused';
}

/** A store call that failed where the call could go on without it (see docs/idempotency.md). */
export interface IdempotencyStoreErrorEvent {
  readonly policy: string;
  readonly key: string;
  /** The store operation that failed. */
  readonly operation: 'complete' | 'release';
  readonly error: unknown;
}

/** Options of `idempotency()`. */
export interface IdempotencyOptions<Tx = undefined> {
  /** Where claims and results live. @default a `memoryIdempotencyStore()` of its own */
  readonly store?: IdempotencyStore<Tx> | undefined;
  /**
   * How long a claim holds its key without renewal. The owner renews it every `leaseMs / 3` while
   * the handler runs; a crashed owner blocks its key only this long. @default 30_000
   */
  readonly leaseMs?: number | undefined;
  /** How long a completed result is kept for replays (the retention). @default 86_400_000 (24 h) */
  readonly ttlMs?: number | undefined;
  /**
   * What a duplicate request does while the first is in progress: wait for its result (woken by the
   * store's notifications, polling as well) up to `maxWaitMs`, or (`false`) reject at once with
   * `IdempotencyInProgressError`. @default true
   */
  readonly wait?: boolean | undefined;
  /** Longest a duplicate waits for the first request before `IdempotencyInProgressError`. @default 10_000 */
  readonly maxWaitMs?: number | undefined;
  /**
   * Run the handler inside a transaction of the store (`store.transaction`, PostgreSQL) and store
   * the result in the same transaction: `handler({ signal, tx })` writes its effect through `tx`,
   * so effect and result commit together or not at all (exactly once, even across a crash).
   * @default false
   */
  readonly transactional?: boolean | undefined;
  /**
   * What identifies "the same request": its return value is hashed instead of the whole request
   * (canonical JSON, SHA-256). @default the request itself
   */
  readonly fingerprint?: ((request: never) => unknown) | undefined;
  /**
   * Called with a handler's error: return true to store it as the key's final outcome (replays
   * reject with `StoredFailureError`) instead of releasing the key for a retry. Only errors of a
   * permanent kind (`invalid`, `unauthorized`, `forbidden`, `not_found`, `conflict`) can be stored;
   * transient, timeout, 5xx-like and canceled failures always release. @default never store
   */
  readonly storeErrors?: ((error: unknown) => boolean) | undefined;
  /** Names the instance in its events. @default 'idempotency' */
  readonly name?: string | undefined;
  /** The clock of lease renewal and waiting (the store keeps its own). @default systemClock */
  readonly clock?: Clock | undefined;
  /** Subscribes to replays, as `.onReplay(listener)`. */
  readonly onReplay?: Listener<ReplayEvent> | undefined;
  /** Subscribes to conflicts, as `.onConflict(listener)`. */
  readonly onConflict?: Listener<ConflictEvent> | undefined;
  /** Subscribes to lost leases, as `.onLeaseLost(listener)`. */
  readonly onLeaseLost?: Listener<LeaseLostEvent> | undefined;
  /** Subscribes to store errors the call survived, as `.onStoreError(listener)`. */
  readonly onStoreError?: Listener<IdempotencyStoreErrorEvent> | undefined;
}

const storeCheck = storeOf<IdempotencyStore<unknown>>(
  'an idempotency store',
  ['claim', 'complete', 'release', 'renew'],
  false,
);

const schema = {
  store: optional(storeCheck),
  leaseMs: withDefault(30_000, positiveInt),
  ttlMs: withDefault(86_400_000, positiveInt),
  wait: withDefault(true, boolean),
  maxWaitMs: withDefault(10_000, positiveInt),
  transactional: withDefault(false, boolean),
  fingerprint: optional(func<(request: unknown) => unknown>()),
  storeErrors: optional(func<(error: unknown) => boolean>()),
  name: withDefault('idempotency', nonEmptyString),
  clock: clockField,
  onReplay: listenerField<ReplayEvent>(),
  onConflict: listenerField<ConflictEvent>(),
  onLeaseLost: listenerField<LeaseLostEvent>(),
  onStoreError: listenerField<IdempotencyStoreErrorEvent>(),
} satisfies Schema<IdempotencyOptions<unknown>>;

/** The options read and checked: every default filled in. */
export type ReadIdempotencyOptions = ReturnType<typeof readIdempotencyOptions>;

/** Reads and checks `options`; a `TypeError` names a bad or unknown option. */
export function readIdempotencyOptions(options: IdempotencyOptions<unknown> | undefined) {
  const o = readOptions('idempotency options', options, schema);
  if (o.transactional && typeof o.store?.transaction !== 'function') {
    throw new TypeError(
      'expected "store" to support transactions (a PostgreSQL store) when "transactional" is true',
    );
  }
  return o;
}
