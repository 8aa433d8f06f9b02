/**
 * One run's entries in a durable saga's log, written under the run's lease: the lease is renewed
 * while the run goes on (`LeaseKeeper`), and once it is lost (a renewal refused, failed or late, or
 * a write refused) the run is no longer ours: nothing more is written, and the work's signal
 * aborts.
 */
import type { Clock } from '../core/clock.js';
import { driftMarginMs, LeaseKeeper } from '../core/lease-keeper.js';
import { SagaLeaseLostError } from './errors.js';
import type { SagaChange, SagaLease, SagaLog } from './store.js';

/** What the runner and the recovery read of a run's progress: with or without a log. */
export interface Progress {
  /** True once the caller aborted (or the lease was lost). */
  readonly aborted: boolean;
  /** Why: the caller's reason, or `SagaLeaseLostError`. */
  readonly reason: unknown;
  /** The signal the steps get. */
  readonly signal: AbortSignal;
}

/** The log of one run, from when its lease was taken (sent at `sentAt`) until {@link stop}. */
export class Journal implements Progress {
  private readonly keeper: LeaseKeeper;

  constructor(
    private readonly log: SagaLog,
    readonly lease: SagaLease,
    clock: Clock,
    sentAt: number,
    signal: AbortSignal | undefined,
  ) {
    this.keeper = new LeaseKeeper({
      leaseMs: lease.leaseMs,
      clock,
      sentAt,
      marginMs: driftMarginMs(lease.leaseMs),
      signal,
      renew: () => log.renew(lease),
      lostError: (cause) => new SagaLeaseLostError(lease.id, cause),
      onLost: () => {},
    });
  }

  get aborted(): boolean {
    return this.keeper.aborted;
  }

  get reason(): unknown {
    return this.keeper.reason;
  }

  get signal(): AbortSignal {
    return this.keeper.signal;
  }

  /** True once the lease was lost: nothing more is written. */
  get lost(): boolean {
    return this.keeper.lost !== undefined;
  }

  /**
   * Writes `change`; rejects with `SagaLeaseLostError` when the lease was lost or the write was
   * refused, and with the log's error when it fails.
   */
  async record(change: SagaChange): Promise<void> {
    if (this.lost) throw this.keeper.error();
    const written = await this.log.write(this.lease, change);
    if (!written) {
      // Stryker disable next-line StringLiteral: ("") the journal never reads the reason: its onLost does nothing, and lost asks only whether one was set
      this.keeper.lose('renew-refused');
      throw this.keeper.error();
    }
  }

  /**
   * Writes `change` if the run is still ours, and never rejects: for what the log may miss (a
   * compensation's progress, a final status) because `recover()` redoes it from what was recorded.
   */
  async note(change: SagaChange): Promise<void> {
    try {
      await this.record(change);
    } catch {
      // Missing it only makes recovery redo work: compensations are at-least-once by design.
    }
  }

  /** Stops renewing: the lease lapses, unless the last write finished the run. */
  stop(): void {
    this.keeper.stop();
  }
}

/** A run's progress without a log: the caller's signal, or one that never aborts (made on first read). */
export class CallerProgress implements Progress {
  private quiet: AbortController | undefined;

  constructor(private readonly caller: AbortSignal | undefined) {}

  get aborted(): boolean {
    return this.caller?.aborted === true;
  }

  get reason(): unknown {
    // Stryker disable next-line OptionalChaining: (this.caller.reason) read only once aborted, which takes a caller's signal
    return this.caller?.reason;
  }

  get signal(): AbortSignal {
    if (this.caller !== undefined) return this.caller;
    this.quiet ??= new AbortController();
    return this.quiet.signal;
  }
}
