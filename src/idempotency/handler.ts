/** What an idempotent handler is and receives. */
import type { LeaseKeeper } from '../core/lease-keeper.js';

/** What a handler receives. */
export interface IdempotentHandlerContext<Tx = undefined> {
  /**
   * Aborted when the caller's signal aborts or the lease is lost (then with `LeaseLostError`):
   * stop the work, and never commit an effect after it aborted.
   */
  readonly signal: AbortSignal;
  /**
   * With `transactional: true`, the store's transaction that `complete` runs in: write the effect
   * through it to make effect and stored result one atomic commit. Otherwise `undefined`.
   */
  readonly tx: Tx;
}

/** The work of one request. Its result must be JSON (bytes allowed: see docs/idempotency.md). */
export type IdempotentHandler<T, Tx = undefined> = (context: IdempotentHandlerContext<Tx>) => Promise<T> | T;

/**
 * The handler's context. A class, not an object literal with a getter (which V8 builds slowly):
 * the signal is read on demand, so a handler that never looks at it costs no `AbortController`.
 */
export class HandlerContext<Tx> implements IdempotentHandlerContext<Tx> {
  readonly #lease: LeaseKeeper<'complete-refused'>;
  constructor(
    lease: LeaseKeeper<'complete-refused'>,
    readonly tx: Tx,
  ) {
    this.#lease = lease;
  }
  get signal(): AbortSignal {
    return this.#lease.signal;
  }
}
