/** The options and events of `outboxRelay()`: types, defaults and validation. */
import type { Clock } from '../core/clock.js';
import type { Listener } from '../core/events.js';
import {
  clockField,
  func,
  listenerField,
  nonEmptyString,
  positiveInt,
  readOptions,
  required,
  type Schema,
  storeOf,
  withDefault,
} from '../core/read-options.js';
import { show } from '../core/validate.js';
import { type Backoff, exponentialJitter } from '../retry/backoff.js';
import type { OutboxStore, Publish } from './store.js';

/** A batch was published and its confirmed events marked delivered. */
export interface DeliveredEvent {
  readonly policy: string;
  /** The ids the publisher confirmed. */
  readonly ids: readonly string[];
  /**
   * How many of them the outbox marked delivered: fewer when another relay had taken some over
   * (this relay's lease had ended); those are published again by that relay.
   */
  readonly marked: number;
}

/** An event's publish failed; it is tried again in `retryInMs`. */
export interface PublishFailedEvent {
  readonly policy: string;
  readonly id: string;
  readonly error: unknown;
  /** Publishes tried so far, this one included. */
  readonly attempts: number;
  readonly retryInMs: number;
}

/** An event ran out of attempts and became a dead letter. */
export interface DeadLetteredEvent {
  readonly policy: string;
  readonly id: string;
  readonly error: unknown;
  readonly attempts: number;
}

/** The outbox failed (or missed its deadline); the relay carries on. */
export interface OutboxStoreErrorEvent {
  readonly policy: string;
  readonly operation: 'claim' | 'delivered' | 'failed' | 'release';
  readonly error: unknown;
}

/** Options of `outboxRelay()`. */
export interface OutboxRelayOptions {
  /** Where the events are: `postgresStores(db).outbox` (or `memoryOutbox()` in tests). */
  readonly outbox: OutboxStore;
  /** Publishes a batch; resolves once the broker confirmed it (see `Publish`). */
  readonly publish: Publish;
  /** Names the relay in events. @default 'outbox' */
  readonly name?: string | undefined;
  /** Most events per claim and publish. @default 100 */
  readonly batchSize?: number | undefined;
  /**
   * How long a claimed batch is this relay's, in ms: its publish is abandoned at the end (its
   * signal aborts), and another relay may claim the events again. At least 300 ms and 3 × the
   * outbox's deadline. @default 30_000
   */
  readonly leaseMs?: number | undefined;
  /** Publishes tried before an event becomes a dead letter. @default 10 */
  readonly maxAttempts?: number | undefined;
  /**
   * The wait before the next try of a failed event, by the number of tries so far.
   * @default exponentialJitter({ baseMs: 1_000, maxMs: 300_000 })
   */
  readonly backoff?: Backoff | undefined;
  /** How often an idle relay looks for events without a wake-up, in ms. @default 1_000 */
  readonly pollMs?: number | undefined;
  /** The clock of leases, backoff waits and polls. @default systemClock */
  readonly clock?: Clock | undefined;
  /** Subscribes to delivered batches, as `.onDelivered(listener)`. */
  readonly onDelivered?: Listener<DeliveredEvent> | undefined;
  /** Subscribes to failed publishes, as `.onPublishFailed(listener)`. */
  readonly onPublishFailed?: Listener<PublishFailedEvent> | undefined;
  /** Subscribes to dead letters, as `.onDeadLettered(listener)`. */
  readonly onDeadLettered?: Listener<DeadLetteredEvent> | undefined;
  /** Subscribes to outbox failures, as `.onStoreError(listener)`. */
  readonly onStoreError?: Listener<OutboxStoreErrorEvent> | undefined;
}

/** The shortest `leaseMs` whatever the outbox. */
export const MIN_RELAY_LEASE_MS = 300;

const schema = {
  outbox: required(storeOf<OutboxStore>('an outbox', ['claim', 'delivered', 'failed', 'release'], true)),
  publish: required(func<Publish>()),
  name: withDefault('outbox', nonEmptyString),
  batchSize: withDefault(100, positiveInt),
  leaseMs: withDefault(30_000, positiveInt),
  maxAttempts: withDefault(10, positiveInt),
  backoff: withDefault<Backoff>(exponentialJitter({ baseMs: 1_000, maxMs: 300_000 }), func<Backoff>()),
  pollMs: withDefault(1_000, positiveInt),
  clock: clockField,
  onDelivered: listenerField<DeliveredEvent>(),
  onPublishFailed: listenerField<PublishFailedEvent>(),
  onDeadLettered: listenerField<DeadLetteredEvent>(),
  onStoreError: listenerField<OutboxStoreErrorEvent>(),
} satisfies Schema<OutboxRelayOptions>;

/** The options read and checked: every default filled in. */
export type ReadOutboxRelayOptions = ReturnType<typeof readOutboxRelayOptions>;

/** Reads and checks `options`; a `TypeError` names a bad, missing or unknown option. */
export function readOutboxRelayOptions(options: OutboxRelayOptions) {
  const o = readOptions('outboxRelay options', options, schema);
  const min = Math.max(MIN_RELAY_LEASE_MS, 3 * o.outbox.timeoutMs);
  if (o.leaseMs < min) {
    throw new TypeError(
      `expected "leaseMs" to be at least ${min} (300 ms and 3 × the outbox's deadline), got ${show(o.leaseMs)}`,
    );
  }
  return o;
}
