/**
 * The events a rate limiter emits (`onRejected`, `onStoreError`), shared by the limiter and its
 * deciders.
 */
import type { StoreUnavailableError } from '../core/errors.js';
import type { StoreFailureMode } from './options.js';

/** Emitted when a take is refused (including refusals answered from the blocked-key memory). */
export interface RateLimitRejectedEvent {
  readonly key: string;
  readonly cost: number;
  readonly retryAfterMs: number;
  readonly remaining: number;
}

/** Emitted for every store failure, before the `storeFailure` mode applies. */
export interface RateLimitStoreErrorEvent {
  readonly key: string;
  /** The failure, as a `StoreUnavailableError` whose `cause` is the store's own error. */
  readonly error: StoreUnavailableError;
  /** What the limiter did about it. */
  readonly mode: StoreFailureMode;
}
