/**
 * The `watch(key, wake)` of the PostgreSQL stores: one LISTEN per store on its channel, opened on
 * the first watch, and the watchers of each key woken by a notification whose payload is that key
 * ('' — a key too long to send — wakes every watcher). A hint only: the stores' waiters poll too.
 */
import type { Notifications } from './database.js';

/** The watchers of one store's channel (see the module doc). */
export class KeyWatchers {
  private readonly watchers = new Map<string, Set<() => void>>();
  private subscribed = false;

  constructor(
    private readonly notifications: () => Notifications,
    private readonly channel: string,
  ) {}

  /**
   * Calls `wake` on each notification for `key` until the returned function is called. Never throws
   * (a store that cannot listen leaves its waiters to poll) and never calls `wake` synchronously.
   */
  watch(key: string, wake: () => void): () => void {
    let set = this.watchers.get(key);
    if (set === undefined) {
      set = new Set();
      this.watchers.set(key, set);
    }
    const own = set;
    // Its own entry, so the same function watched twice is unwatched once per watch.
    const watcher = (): void => wake();
    own.add(watcher);
    if (!this.subscribed) {
      this.subscribed = true;
      try {
        this.notifications().subscribe(this.channel, (payload) => this.woken(payload));
      } catch {
        // Watching is a hint: a store that cannot listen leaves waiters to poll.
      }
    }
    return () => {
      own.delete(watcher);
      if (own.size === 0 && this.watchers.get(key) === own) this.watchers.delete(key);
    };
  }

  /** Whether anything in this process watches `key` now. */
  watching(key: string): boolean {
    return this.watchers.has(key);
  }

  /** A notification: `payload` is the key, or '' for a key too long to send (wakes every watcher). */
  private woken(payload: string): void {
    const sets = payload === '' ? [...this.watchers.values()] : [this.watchers.get(payload)];
    for (const set of sets) {
      if (set === undefined) continue;
      for (const wake of [...set]) {
        try {
          wake();
        } catch {
          // A watcher's failure is its own.
        }
      }
    }
  }
}
