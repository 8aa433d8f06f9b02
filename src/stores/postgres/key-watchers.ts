/**
 * The `watch(key, wake)` of the PostgreSQL stores: one LISTEN per store on its channel, opened on
 * the first watch, and the watchers of each key woken by a notification whose payload is that key
 * ('' — a key too long to send — wakes every watcher), and every watcher woken each time listening
 * (re)starts: a notification sent before the LISTEN took hold (the first watch's, or during a
 * reconnect) was lost, so each waiter looks again. A hint only: the stores' waiters poll too.
 */
import { KeyedWakers } from '../../core/keyed-wakers.js';
import type { Notifications } from './database.js';

/** The watchers of one store's channel (see the module doc). */
export class KeyWatchers {
  private readonly wakers = new KeyedWakers();
  private subscribed = false;

  constructor(
    private readonly notifications: () => Notifications,
    private readonly channel: string,
  ) {}

  /**
   * Calls `wake` on each notification for `key`, and each time listening (re)starts, until the
   * returned function is called. Never throws (a store that cannot listen leaves its waiters to
   * poll) and never calls `wake` synchronously.
   */
  watch(key: string, wake: () => void): () => void {
    const unwatch = this.wakers.add(key, wake);
    if (!this.subscribed) {
      this.subscribed = true;
      try {
        this.notifications().subscribe(
          this.channel,
          (payload) => this.woken(payload),
          () => this.wakers.wakeAll(),
        );
      } catch {
        // Watching is a hint: a store that cannot listen leaves waiters to poll.
      }
    }
    return unwatch;
  }

  /** Whether anything in this process watches `key` now. */
  watching(key: string): boolean {
    return this.wakers.has(key);
  }

  /** A notification: `payload` is the key, or '' for a key too long to send (wakes every watcher). */
  private woken(payload: string): void {
    if (payload === '') this.wakers.wakeAll();
    else this.wakers.wake(payload);
  }
}
