/**
 * LISTEN on `pg`: at most one dedicated connection per store set, opened on the first subscription
 * (`new pool.Client(pool.options)`, as pg-pool builds its own clients; a pool without that class
 * lends one of its clients instead). Its socket is unref'd, so it never keeps the process alive.
 * When it drops, it is reopened (after a second) while anyone still listens, and every channel is
 * listened to again; notifications sent meanwhile are lost, which is fine: they are hints, waiters
 * poll as well, and subscribers that asked (`onListening`) are told each time their channel's
 * LISTEN took hold (on the first subscription, and again after each reopening).
 */
import type { Clock, TimerHandle } from '../../core/clock.js';
import { ChannelSubscribers } from './channel-subscribers.js';
import type { Notifications, PgPoolClientLike, PgPoolLike } from './database.js';
import { quoteIdent } from './identifiers.js';
import type { PgStandaloneClient } from './pg-database.js';

/** How long after a drop the connection is reopened, in milliseconds. */
const REOPEN_MS = 1_000;

interface ListenClient {
  query(text: string): Promise<unknown>;
  on(event: string, listener: (...args: never[]) => void): unknown;
  /** Closes it: `end()` for a client of ours, `release(error)` for a pool's. */
  close(): void;
}

interface PoolInternals {
  readonly options?: Record<string, unknown>;
  readonly Client?: new (options: Record<string, unknown>) => PgStandaloneClient;
}

function unrefSocket(client: unknown): void {
  const stream = (client as { connection?: { stream?: { unref?: () => void } } }).connection?.stream;
  stream?.unref?.();
}

/** Notifications on one dedicated `pg` connection (see the module doc). */
export class PgNotifications implements Notifications {
  private readonly channels = new Map<string, ChannelSubscribers>();
  private client: ListenClient | undefined;
  private opening = false;
  private reopenTimer: TimerHandle | undefined;
  private closed = false;

  constructor(
    private readonly pool: PgPoolLike,
    private readonly clock: Clock,
  ) {}

  subscribe(channel: string, onNotify: (payload: string) => void, onListening?: () => void): () => void {
    if (this.closed) return () => {};
    let subscribers = this.channels.get(channel);
    if (subscribers === undefined) {
      subscribers = new ChannelSubscribers();
      this.channels.set(channel, subscribers);
      if (this.client !== undefined) this.listen(this.client, [channel]);
    }
    const unsubscribe = subscribers.add(onNotify, onListening);
    this.open();
    return unsubscribe;
  }

  async close(): Promise<void> {
    this.closed = true;
    if (this.reopenTimer !== undefined) this.clock.clearTimer(this.reopenTimer);
    this.reopenTimer = undefined;
    const client = this.client;
    this.client = undefined;
    client?.close();
  }

  /** Opens the connection, unless it is open, opening, or closed for good. */
  private open(): void {
    if (this.client !== undefined || this.opening || this.closed) return;
    this.opening = true;
    this.connect().then(
      (client) => {
        this.opening = false;
        if (this.closed) {
          client.close();
          return;
        }
        this.client = client;
        this.listen(client, [...this.channels.keys()]);
      },
      () => {
        this.opening = false;
        this.reopenLater();
      },
    );
  }

  /** A connected client with our listeners on it. */
  private async connect(): Promise<ListenClient> {
    const { Client, options } = this.pool as unknown as PoolInternals;
    let client: ListenClient;
    if (typeof Client === 'function') {
      const own = new Client({ ...options });
      client = {
        query: (text) => own.query(text),
        on: (event, listener) => own.on(event, listener),
        close: () => {
          own.end().catch(() => {});
        },
      };
      own.on('error', () => this.dropped(client));
      own.on('end', () => this.dropped(client));
      await own.connect();
      unrefSocket(own);
    } else {
      const lent: PgPoolClientLike = await this.pool.connect();
      const events = lent as unknown as Pick<ListenClient, 'on'>;
      client = {
        query: (text) => lent.query(text),
        on: (event, listener) => events.on(event, listener),
        close: () => lent.release(true),
      };
      events.on('error', () => this.dropped(client));
      events.on('end', () => this.dropped(client));
    }
    client.on('notification', ((message: { channel: string; payload?: string }) =>
      this.notify(message.channel, message.payload ?? '')) as (...args: never[]) => void);
    return client;
  }

  /** LISTENs to `channels` (never empty: a channel is remembered before the connection opens). */
  private listen(client: ListenClient, channels: readonly string[]): void {
    // Simple protocol (no parameters): several LISTENs in one round trip.
    const text = channels.map((channel) => `LISTEN ${quoteIdent(channel)}`).join('; ');
    client.query(text).then(
      () => {
        // A channel stays in the map for good once subscribed.
        for (const channel of channels) (this.channels.get(channel) as ChannelSubscribers).listening();
      },
      () => this.dropped(client),
    );
  }

  private notify(channel: string, payload: string): void {
    this.channels.get(channel)?.notify(payload);
  }

  private dropped(client: ListenClient): void {
    if (this.client !== client) return;
    this.client = undefined;
    client.close();
    this.reopenLater();
  }

  private reopenLater(): void {
    if (this.closed || this.reopenTimer !== undefined) return;
    const hasListeners = [...this.channels.values()].some((subscribers) => subscribers.size > 0);
    if (!hasListeners) return;
    const clock = this.clock;
    this.reopenTimer = clock.setTimer(() => {
      this.reopenTimer = undefined;
      this.open();
    }, REOPEN_MS);
    clock.keepAlive?.(this.reopenTimer, false);
  }
}
