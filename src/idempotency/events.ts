/**
 * The events of one `idempotency()` instance: its listeners, and its telemetry, counted at the same
 * place whether or not anyone listens (`bulwark.pattern` `idempotency`, docs/observability.md).
 */
import { Listeners } from '../core/events.js';
import { countEvent } from '../core/telemetry.js';
import type {
  ConflictEvent,
  IdempotencyStoreErrorEvent,
  LeaseLostEvent,
  ReadIdempotencyOptions,
  ReplayEvent,
} from './options.js';

/** The listeners of an `idempotency()` instance, and what it reports through them. */
export class IdempotencyEvents {
  readonly replayed = new Listeners<ReplayEvent>();
  readonly conflicted = new Listeners<ConflictEvent>();
  readonly leaseLost = new Listeners<LeaseLostEvent>();
  readonly storeFailed = new Listeners<IdempotencyStoreErrorEvent>();

  /** Subscribes the listeners `o` names; `o.name` names the instance in every event. */
  constructor(private readonly o: ReadIdempotencyOptions) {
    if (o.onReplay) this.replayed.add(o.onReplay);
    if (o.onConflict) this.conflicted.add(o.onConflict);
    if (o.onLeaseLost) this.leaseLost.add(o.onLeaseLost);
    if (o.onStoreError) this.storeFailed.add(o.onStoreError);
  }

  /** A stored result replayed to a duplicate: `onReplay`, and a `replay` counted. */
  replay(key: string): void {
    // Stryker disable next-line ConditionalExpression: (true) emitting with no listener does nothing; the check only skips building the event
    if (this.replayed.active) this.replayed.emit({ policy: this.o.name, key });
    countEvent('replay', 'idempotency', this.o.name);
  }

  /**
   * A duplicate refused with `error`: `onConflict` when the key was used for another request
   * (`mismatch`), and a `conflict` counted for that and for a request still in progress alike.
   * Returns `error`, to throw.
   */
  conflict(key: string, error: Error, mismatch: boolean): Error {
    // Stryker disable next-line ConditionalExpression: (true) as above
    if (mismatch && this.conflicted.active) this.conflicted.emit({ policy: this.o.name, key });
    countEvent('conflict', 'idempotency', this.o.name, error);
    return error;
  }

  /** The lease lost while the handler ran: `onLeaseLost`. */
  lost(key: string, reason: LeaseLostEvent['reason']): void {
    // Stryker disable next-line ConditionalExpression: (true) as above
    if (this.leaseLost.active) this.leaseLost.emit({ policy: this.o.name, key, reason });
  }

  /** A `complete` or `release` the call survived failing: `onStoreError`, and a `store_error` counted. */
  storeError(key: string, operation: IdempotencyStoreErrorEvent['operation'], error: unknown): void {
    // Stryker disable next-line ConditionalExpression: (true) as above
    if (this.storeFailed.active) this.storeFailed.emit({ policy: this.o.name, key, operation, error });
    countEvent('store_error', 'idempotency', this.o.name, error);
  }
}
