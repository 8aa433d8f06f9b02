/**
 * The outbox contract: the events a service writes in the same transaction as its state change,
 * and what a relay needs to deliver them at least once, in order per key, from any number of
 * processes. The PostgreSQL outbox (`postgresStores(db).outbox`) keeps it; publishers
 * (`natsJetStreamPublisher`, `redisStreamPublisher`, or your own function) deliver what the relay
 * hands them.
 *
 * - **Enqueue** happens inside the caller's transaction (the store's own `enqueue`, whose first
 *   argument is that transaction): an event exists exactly when the state change committed.
 * - **Order.** Events of one `key` are delivered in the order their transactions committed; events
 *   of different keys (and events without a key) independently. An event is claimable only when no
 *   earlier event of its key is undelivered, so a key whose head keeps failing holds back only
 *   that key.
 * - **Claims and leases.** `claim` takes up to `limit` claimable events for `owner` for `leaseMs`
 *   (on the store's clock), each claimed by one relay at a time; a relay that dies leaves them to
 *   be claimed again once the lease ends. `delivered`, `failed` act only for the lease's owner.
 * - **At least once.** An event is marked delivered only after the publisher confirmed it; a crash
 *   between the two publishes it again (with the same `id`: brokers and inboxes drop the duplicate).
 */

/** An event as the caller enqueues it. */
export interface OutboxEvent {
  /** Where it goes: the NATS subject, the Redis stream's `topic` field, your publisher's choice. */
  readonly topic: string;
  /** Events with the same key are delivered in commit order. @default none: no ordering */
  readonly key?: string | undefined;
  /** The body: any JSON-serialisable value. */
  readonly payload: unknown;
  /** String headers passed to the publisher (e.g. a trace context). */
  readonly headers?: Readonly<Record<string, string>> | undefined;
}

/** An event as the relay hands it to the publisher. */
export interface OutboxMessage {
  /** A UUID given at enqueue: stable across redeliveries (the broker's and the inbox's dedup key). */
  readonly id: string;
  readonly topic: string;
  readonly key: string | undefined;
  readonly payload: unknown;
  readonly headers: Readonly<Record<string, string>>;
  /** Publishes tried before this one (0 the first time). */
  readonly attempts: number;
  /** When it was enqueued, epoch ms on the store's clock. */
  readonly createdAt: number;
}

/** A dead letter: an event that ran out of attempts, with the error of its last one. */
export interface OutboxDeadLetter extends OutboxMessage {
  readonly lastError: string;
}

/**
 * Publishes `messages` and resolves once the broker confirmed every one. Rejecting fails the whole
 * batch, unless the error is an `OutboxPublishError`, which names the events that failed (the
 * others count as confirmed). Must honour `signal` (the relay is stopping, or the lease ended).
 */
export type Publish = (
  messages: readonly OutboxMessage[],
  options: { readonly signal: AbortSignal },
) => Promise<void>;

/** An event whose publish failed: when to try it again, or that it is dead. */
export interface FailedDelivery {
  readonly id: string;
  /** The error, as text (kept with the event: a dead letter shows it). */
  readonly error: string;
  /** In how many ms it may be claimed again. */
  readonly retryInMs: number;
  /** True when it ran out of attempts: it becomes a dead letter, and its key moves on. */
  readonly dead: boolean;
}

/** What a relay needs of an outbox (see the module doc for the contract). */
export interface OutboxStore {
  /** The store's deadline for one call, in ms (0 for a store that never waits). */
  readonly timeoutMs: number;
  /**
   * Takes up to `limit` claimable events for `owner` for `leaseMs`: pending, due (their retry time
   * has come), not leased by another relay whose lease still runs, and each the oldest pending
   * event of its key. Resolves them oldest first.
   */
  claim(owner: string, limit: number, leaseMs: number): Promise<readonly OutboxMessage[]>;
  /** Marks the events `owner` still holds as delivered. Resolves how many it marked. */
  delivered(owner: string, ids: readonly string[]): Promise<number>;
  /** Records failed publishes of events `owner` still holds (releasing them). Resolves how many it recorded. */
  failed(owner: string, failures: readonly FailedDelivery[]): Promise<number>;
  /** Releases every event `owner` still holds, untouched (a relay stopping). */
  release(owner: string): Promise<void>;
  /**
   * Optional: calls `wake` soon after events are enqueued (by any process), and after the
   * notification connection came back (notifications were lost meanwhile); returns the
   * unsubscribe function. A hint only: relays poll as well.
   */
  watch?(wake: () => void): () => void;
}
