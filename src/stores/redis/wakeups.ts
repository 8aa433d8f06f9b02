/**
 * Wake-ups over Redis pub/sub for every store of one store set: one subscriber connection
 * (`client.duplicate()`, since a subscribed connection cannot send commands), subscribed to each
 * store's channel (`<prefix>idem:wake`, `<prefix>lock:wake`), on which the store's scripts
 * `PUBLISH` a key (the idempotency store the user's key, the lock store its Redis key). Watchers are
 * kept per channel and key, so one connection serves every store, and a message wakes only the
 * watchers of its channel and key.
 */

import { KeyedWakers } from '../../core/keyed-wakers.js';

/** A connection's socket, as far as unref'ing it goes. */
interface Socket {
  readonly stream?: { unref?(): unknown } | undefined;
}

/** The part of an ioredis `Redis` or `Cluster` the subscriber uses (a `duplicate()` of the client). */
interface Subscriber extends Socket {
  readonly status?: string | undefined;
  on(event: string, listener: (...args: never[]) => void): unknown;
  subscribe(channel: string): Promise<unknown>;
  unsubscribe?(channel: string): Promise<unknown>;
  connect(): Promise<unknown>;
  disconnect(): void;
}

/** What the wake-ups need of the store set's client: a way to open a connection like it. */
export interface WakeupClient {
  /** ioredis `duplicate()`: a new connection with the same options (for the subscriber). */
  duplicate?(): unknown;
}

const noop = (): void => {};

/** Unrefs a connection's socket, so that it never keeps the process alive on its own. */
function unref(connection: Socket | undefined): void {
  connection?.stream?.unref?.();
}

/**
 * The subscriber connection of one store set and the watchers of every channel on it. Opened by
 * the first {@link watch}; its socket is unref'd, so it never keeps the process alive on its own
 * (while it reconnects, ioredis's retry timer does: `close()` the store set at shutdown). It
 * subscribes again after each reconnect. A notification is a hint: one published while the
 * subscriber is down or reconnecting is lost, so callers poll as well. On Redis Cluster, `PUBLISH`
 * is broadcast to every node, which costs cluster-bus traffic but is correct wherever the
 * subscriber is connected.
 */
export class RedisWakeups {
  /** Watchers by channel, then by the user's key. A channel stays while it is in use. */
  private readonly channels = new Map<string, KeyedWakers>();
  /** Channels whose store was closed: their watches never wake again. */
  private readonly dropped = new Set<string>();
  private subscriber: Subscriber | undefined;
  private closed = false;

  constructor(private readonly client: WakeupClient) {}

  /**
   * Calls `wake` (later, never synchronously) each time `key` is published on `channel`; returns
   * the unsubscribe function (idempotent). Never throws: a bad key or `wake`, a client without
   * `duplicate()`, a dropped channel or closed wake-ups give a watch that never wakes, and a
   * throwing `wake` is ignored.
   */
  watch(channel: string, key: string, wake: () => void): () => void {
    if (this.closed || this.dropped.has(channel)) return noop;
    if (typeof key !== 'string' || key === '' || typeof wake !== 'function') return noop;
    let wakers = this.channels.get(channel);
    const fresh = wakers === undefined;
    if (wakers === undefined) {
      wakers = new KeyedWakers();
      this.channels.set(channel, wakers);
    }
    const unwatch = wakers.add(key, wake);
    try {
      this.listen(channel, fresh);
    } catch {
      // No subscriber (e.g. duplicate() threw): waiters poll.
    }
    return unwatch;
  }

  /** Whether a watcher of this process waits for `key` on `channel`. */
  watching(channel: string, key: string): boolean {
    return this.channels.get(channel)?.has(key) === true;
  }

  /**
   * Drops `channel` for good (its store was closed): its watchers are forgotten and later watches
   * on it never wake. The subscriber connection is disconnected when no other channel is in use,
   * and otherwise unsubscribes from `channel`.
   */
  drop(channel: string): void {
    this.dropped.add(channel);
    if (!this.channels.delete(channel)) return;
    const subscriber = this.subscriber;
    if (this.channels.size === 0) this.disconnect();
    else subscriber?.unsubscribe?.(channel).catch(noop);
  }

  /** Disconnects the subscriber and drops every channel; later watches never wake. Idempotent. */
  close(): void {
    this.closed = true;
    this.channels.clear();
    this.disconnect();
  }

  /** Opens the subscriber connection, once; subscribes a channel added after it was ready. */
  private listen(channel: string, fresh: boolean): void {
    const open = this.subscriber;
    if (open !== undefined) {
      // Before 'ready', the 'ready' listener subscribes every channel in use, this one included.
      if (fresh && open.status === 'ready') this.subscribe(open, channel);
      return;
    }
    // Stryker disable next-line ConditionalExpression: without duplicate() the call below throws, and watch catches that alike
    if (typeof this.client.duplicate !== 'function') return;
    const subscriber = this.client.duplicate() as Subscriber;
    this.subscriber = subscriber;
    subscriber.on('error', noop);
    subscriber.on('message', (from: string, message: string) => this.dispatch(from, message));
    subscriber.on('connect', () => unref(subscriber));
    // A Cluster: each node connection, and the one it subscribes on (ioredis's own, private).
    subscriber.on('+node', (node: Subscriber) => node.on('connect', () => unref(node)));
    // Subscribed on every ready (after each reconnect too): an earlier SUBSCRIBE may have failed
    // (offline queue off, retries exhausted); SUBSCRIBE of a subscribed channel is a no-op.
    subscriber.on('ready', () => {
      unref(subscriber);
      for (const name of this.channels.keys()) this.subscribe(subscriber, name);
    });
    if (subscriber.status === 'wait') subscriber.connect().catch(noop);
  }

  private subscribe(subscriber: Subscriber, channel: string): void {
    subscriber.subscribe(channel).then(() => {
      const inner = (subscriber as { subscriber?: { getInstance?(): Socket } }).subscriber;
      unref(inner?.getInstance?.());
    }, noop);
  }

  private disconnect(): void {
    const subscriber = this.subscriber;
    this.subscriber = undefined;
    subscriber?.disconnect();
  }

  private dispatch(channel: string, key: string): void {
    this.channels.get(channel)?.wake(key);
  }
}
