/**
 * What the admission policies are told (concurrency limit, bulkhead, mapConcurrent), with the
 * declared schemas that read it. The load shedder's options are in `load-shedder-options.ts`.
 */
import type { Clock } from '../core/clock.js';
import type { PolicyOptions } from '../core/policy-events.js';
import { policyFields } from '../core/policy-fields.js';
import {
  boolean,
  clockField,
  nonNegativeInt,
  optional,
  positiveInt,
  positiveIntOrInfinity,
  positiveOrInfinity,
  type ReadOptions,
  readOptions,
  required,
  type Schema,
  signal,
  withDefault,
} from '../core/read-options.js';
import type { BulkheadRejection } from './errors.js';

/** Why a {@link concurrencyLimit} refused a call (the `reason` of its `onRejected` events). */
export type ConcurrencyLimitRejection = 'limit-reached';

/** Options of {@link concurrencyLimit}. */
export interface ConcurrencyLimitOptions extends PolicyOptions<ConcurrencyLimitRejection> {
  /** Times the events' `durationMs`. @default systemClock */
  readonly clock?: Clock | undefined;
}

/** Options of {@link bulkhead}. */
export interface BulkheadOptions extends PolicyOptions<BulkheadRejection> {
  /** The most calls running at once (a positive integer). Required. */
  readonly maxConcurrent: number;
  /**
   * The most callers waiting for a slot (an integer ≥ 0; 0 = no queue, refuse when all slots are
   * busy). Required: every queue has an explicit bound.
   */
  readonly maxQueue: number;
  /**
   * The longest a caller waits in the queue; when it passes the caller leaves with a
   * `BulkheadFullError` whose `reason` is `queue-timeout`. Positive, or `Infinity` for no limit.
   * All waiters share one timer.
   * @default Infinity
   */
  readonly queueTimeoutMs?: number | undefined;
  /** Times the queue timeout and the events' `durationMs`. @default systemClock */
  readonly clock?: Clock | undefined;
}

/** Options of {@link mapConcurrent}. */
export interface MapConcurrentOptions {
  /**
   * The most `fn` calls in flight at once, and the most items pulled from `items` ahead of their
   * results (a positive integer, or `Infinity`, which pulls the whole source: finite sources only).
   * Required.
   */
  readonly concurrency: number;
  /** Cancels the map: nothing new starts, running calls see their signal abort. */
  readonly signal?: AbortSignal | undefined;
  /**
   * `false`: fail fast on the first error. `true`: run every item and resolve with one
   * `PromiseSettledResult` per item, like `Promise.allSettled`.
   * @default false
   */
  readonly settle?: boolean | undefined;
}

const concurrencyLimitSchema = {
  clock: clockField,
  ...policyFields<ConcurrencyLimitRejection>(),
} satisfies Schema<ConcurrencyLimitOptions>;

/** Reads `concurrencyLimit` options; a `TypeError` names the first bad one. */
export function readConcurrencyLimitOptions(
  options: ConcurrencyLimitOptions | undefined,
): ReadOptions<typeof concurrencyLimitSchema> {
  return readOptions('concurrencyLimit options', options, concurrencyLimitSchema);
}

const bulkheadSchema = {
  maxConcurrent: required(positiveInt),
  maxQueue: required(nonNegativeInt),
  queueTimeoutMs: withDefault(Infinity, positiveOrInfinity),
  clock: clockField,
  ...policyFields<BulkheadRejection>(),
} satisfies Schema<BulkheadOptions>;

/** Reads `bulkhead` options; a `TypeError` names the first bad one. */
export function readBulkheadOptions(options: BulkheadOptions): ReadOptions<typeof bulkheadSchema> {
  return readOptions('bulkhead options', options, bulkheadSchema);
}

const mapConcurrentSchema = {
  concurrency: required(positiveIntOrInfinity),
  signal: optional(signal),
  settle: withDefault(false, boolean),
} satisfies Schema<MapConcurrentOptions>;

/** Reads `mapConcurrent` options (required); a `TypeError` names the first bad one. */
export function readMapConcurrentOptions(
  options: MapConcurrentOptions,
): ReadOptions<typeof mapConcurrentSchema> {
  if (options === undefined) {
    throw new TypeError('expected "mapConcurrent options" to be an options object, got undefined');
  }
  return readOptions('mapConcurrent options', options, mapConcurrentSchema);
}
