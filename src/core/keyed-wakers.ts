/**
 * Wake-up callbacks by key: what a store's `watch(key, wake)` keeps until its owner releases,
 * completes or hears of a key. One class for every store, so that each keeps the same rules.
 */

import { callEach } from './call-each.js';

/**
 * Wakers by key. Each {@link add} is its own registration (the same function watched twice is two
 * watchers, each removed by its own disposer), and a key is forgotten with its last waker, so an
 * idle store holds nothing.
 */
export class KeyedWakers {
  private readonly byKey = new Map<string, Set<() => void>>();

  /** How many keys are watched. */
  get size(): number {
    return this.byKey.size;
  }

  /** Registers `wake` for `key`; returns its removal (idempotent). */
  add(key: string, wake: () => void): () => void {
    let wakers = this.byKey.get(key);
    if (wakers === undefined) {
      wakers = new Set();
      this.byKey.set(key, wakers);
    }
    const own = wakers;
    const entry = (): void => wake();
    own.add(entry);
    return () => {
      // A set leaves the map only once empty, so an emptied set is still the key's.
      if (own.delete(entry) && own.size === 0) this.byKey.delete(key);
    };
  }

  /** Whether anything watches `key`. */
  has(key: string): boolean {
    return this.byKey.has(key);
  }

  /** Calls every waker of `key` now; one that throws is ignored. */
  wake(key: string): void {
    const wakers = this.byKey.get(key);
    if (wakers !== undefined) callEach(wakers, call);
  }

  /** Calls every waker of every key now (a notification that names no key). */
  wakeAll(): void {
    for (const wakers of [...this.byKey.values()]) callEach(wakers, call);
  }
}

/** Calls a waker. */
function call(wake: () => void): void {
  wake();
}
