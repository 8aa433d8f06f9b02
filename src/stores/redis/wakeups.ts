/**
 * Wake-ups over Redis pub/sub for every store of one store set: one subscriber connection
 * (`client.duplicate()`, since a subscribed connection cannot send commands), subscribed to each
 * store's channel (`<prefix>idem:wake`, `<prefix>lock:wake`, `<prefix>cache:bus`). A channel has two
 * kinds of users, on the same connection: *watchers* of a key ({@link RedisWakeups.watch}: the
 * idempotency and lock stores' scripts `PUBLISH` a key, the idempotency store the user's key, the
 * lock store its Redis key; a message wakes only the watchers of its channel and key), and
 * *listeners* of the whole channel ({@link RedisWakeups.listen}: the cache layer, which hears every
 * message, and is told when messages may have been lost).
 */

import { callEach } from '../../core/call-each.js';
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

/** One {@link RedisWakeups.listen} registration (an object of its own, however often a function is passed). */
interface Listener {
  readonly onMessage: (message: string) => void;
  readonly onReset: () => void;
}

/** The users of one channel: watchers by key, and listeners of every message. */
class ChannelUsers {
  readonly wakers = new KeyedWakers();
  readonly listeners = new Set<Listener>();
}

/** Unrefs a connection's socket, so that it never keeps the process alive on its own. */
function unref(connection: Socket | undefined): void {
  connection?.stream?.unref?.();
}

/**
 * The subscriber connection of one store set and the users of every channel on it. Opened by
 * the first {@link watch} or {@link listen}; its socket is unref'd, so it never keeps the process
 * alive on its own (while it reconnects, ioredis's retry timer does: `close()` the store set at
 * shutdown). It subscribes every channel in use again after each reconnect. A message is a hint:
 * one published while the subscriber is down, reconnecting or not yet subscribed is lost, so each
 * time a channel is (re)subscribed its watchers are woken (they poll as well) and its listeners
 * are told (`onReset`). On Redis Cluster, `PUBLISH` is broadcast to every node, which costs
 * cluster-bus traffic but is correct wherever the subscriber is connected.
 */
export class RedisWakeups {
  /** The users of each channel. A channel stays (subscribed) while its store is open. */
  private readonly channels = new Map<string, ChannelUsers>();
  /** Channels whose store was closed: their watches never wake, their listeners are never called. */
  private readonly dropped = new Set<string>();
  private subscriber: Subscriber | undefined;
  /**
   * The subscriber emitted 'ready' and has not closed since. Not its `status`: ioredis sets it to
   * 'ready' a tick before it emits the event, whose listener subscribes every channel in use.
   */
  private live = false;
  private closed = false;

  constructor(private readonly client: WakeupClient) {}

  /**
   * Calls `wake` (later, never synchronously) each time `key` is published on `channel`, and each
   * time `channel` is (re)subscribed (what was published before was lost); returns the unsubscribe
   * function (idempotent). Never throws: a bad key or `wake`, a client without
   * `duplicate()`, a dropped channel or closed wake-ups give a watch that never wakes, and a
   * throwing `wake` is ignored.
   */
  watch(channel: string, key: string, wake: () => void): () => void {
    if (this.closed || this.dropped.has(channel)) return noop;
    if (typeof key !== 'string' || key === '' || typeof wake !== 'function') return noop;
    return this.use(channel).wakers.add(key, wake);
  }

  /**
   * Calls `onMessage` (later, never synchronously) with every message published on `channel`,
   * whatever it holds, and `onReset` each time `channel` is (re)subscribed: once its first
   * `SUBSCRIBE` took hold, and again after each reconnect (messages published before were lost),
   * so a message published after `onReset` is heard. A listener added once the channel is
   * subscribed is not reset until the next reconnect. Returns the unsubscribe function
   * (idempotent); the channel itself stays subscribed until {@link drop} (a store's `close()`) or
   * {@link close}. Each call is a registration of its own (the same functions passed twice are
   * called twice). Never throws: a listener that is not a function, a client
   * without `duplicate()`, a dropped channel or closed wake-ups give a registration that is never
   * called, and a throwing listener is ignored. A channel may have watchers and listeners at once.
   */
  listen(channel: string, onMessage: (message: string) => void, onReset: () => void): () => void {
    if (this.closed || this.dropped.has(channel)) return noop;
    if (typeof onMessage !== 'function' || typeof onReset !== 'function') return noop;
    const { listeners } = this.use(channel);
    const listener: Listener = { onMessage, onReset };
    listeners.add(listener);
    return () => {
      listeners.delete(listener);
    };
  }

  /** Whether a watcher of this process waits for `key` on `channel`. */
  watching(channel: string, key: string): boolean {
    return this.channels.get(channel)?.wakers.has(key) === true;
  }

  /**
   * Drops `channel` for good (its store was closed): its watchers and listeners are forgotten,
   * and later watches and listens on it are never called. The subscriber connection is
   * disconnected when no other channel is in use, and otherwise unsubscribes from `channel`.
   */
  drop(channel: string): void {
    this.dropped.add(channel);
    if (!this.channels.delete(channel)) return;
    const subscriber = this.subscriber;
    if (this.channels.size === 0) this.disconnect();
    else subscriber?.unsubscribe?.(channel).catch(noop);
  }

  /** Disconnects the subscriber and drops every channel; later users are never called. Idempotent. */
  close(): void {
    this.closed = true;
    this.channels.clear();
    this.disconnect();
  }

  /** The users of `channel`, a new channel subscribed (the connection opened) on first use. */
  private use(channel: string): ChannelUsers {
    let users = this.channels.get(channel);
    if (users !== undefined) return users;
    users = new ChannelUsers();
    this.channels.set(channel, users);
    try {
      this.open(channel);
    } catch {
      // No subscriber (e.g. duplicate() threw): watchers poll, listeners hear nothing.
    }
    return users;
  }

  /** Opens the subscriber connection, once; subscribes a channel added after it was ready. */
  private open(channel: string): void {
    const open = this.subscriber;
    if (open !== undefined) {
      // Before 'ready', the 'ready' listener subscribes every channel in use, this one included.
      if (this.live) this.subscribe(open, channel);
      return;
    }
    // Stryker disable next-line ConditionalExpression: without duplicate() the call below throws, and use() catches that alike
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
      this.live = true; // (a disconnected subscriber never reconnects, so it is never ready again)
      unref(subscriber);
      for (const name of this.channels.keys()) this.subscribe(subscriber, name);
    });
    subscriber.on('close', () => {
      // Not a disconnected one's late 'close': a new subscriber may be live by then.
      if (this.subscriber === subscriber) this.live = false;
    });
    if (subscriber.status === 'wait') subscriber.connect().catch(noop);
  }

  /**
   * Subscribes `channel`; once subscribed, wakes its watchers and resets its listeners: a message
   * published before the subscription took hold (the first, or after a reconnect) was lost.
   */
  private subscribe(subscriber: Subscriber, channel: string): void {
    subscriber.subscribe(channel).then(() => {
      const inner = (subscriber as { subscriber?: { getInstance?(): Socket } }).subscriber;
      unref(inner?.getInstance?.());
      // Not after close() or drop(): the channel's users are gone with it.
      const users = this.channels.get(channel);
      if (users === undefined) return;
      users.wakers.wakeAll();
      callEach(users.listeners, (listener) => listener.onReset());
    }, noop);
  }

  private disconnect(): void {
    const subscriber = this.subscriber;
    this.subscriber = undefined;
    this.live = false;
    subscriber?.disconnect();
  }

  private dispatch(channel: string, message: string): void {
    const users = this.channels.get(channel);
    if (users === undefined) return;
    users.wakers.wake(message);
    // Stryker disable next-line ConditionalExpression,EqualityOperator: calling each of no listeners does nothing; the check only skips the copy
    if (users.listeners.size > 0) callEach(users.listeners, (listener) => listener.onMessage(message));
  }
}
