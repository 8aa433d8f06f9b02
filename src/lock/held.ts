/**
 * What a holder of locks has: each key's fence and lease keeper, and the context `fn` gets, whose
 * signal is the keeper's (made only when read).
 */
import type { LeaseKeeper } from '../core/lease-keeper.js';

/** What `fn` gets under one lock. */
export interface LockContext {
  /**
   * Aborted when the caller's signal aborts or the lock is lost (then with `LockLostError`): stop
   * the work at once, a successor may start when the lease ends.
   */
  readonly signal: AbortSignal;
  /** This acquisition's fence: pass it to every write the lock protects (`stores.fence.write`). */
  readonly fence: number;
}

/** What `fn` gets under several locks. */
export interface MultiLockContext {
  /** Aborted when the caller's signal aborts or any of the locks is lost. */
  readonly signal: AbortSignal;
  /** Each key's fence. */
  readonly fences: ReadonlyMap<string, number>;
}

/** One key held: its lease keeper renews it until `stop()`. */
export interface Held {
  readonly key: string;
  readonly fence: number;
  readonly keeper: LeaseKeeper;
}

/**
 * `withLock`'s context. A class, not an object literal with a getter (which V8 builds slowly, several
 * µs a call): the signal is read on demand, so a critical section that never looks at it costs no
 * `AbortController`.
 */
export class HeldContext implements LockContext {
  readonly fence: number;
  readonly #held: Held;
  constructor(held: Held) {
    this.#held = held;
    this.fence = held.fence;
  }
  get signal(): AbortSignal {
    return this.#held.keeper.signal;
  }
}
