/**
 * Keeping a claimed key while its handler runs: renew the lease every `leaseMs / 3`, and abort the
 * handler's signal with `LeaseLostError` the moment the key may no longer be ours: a renewal
 * refused (taken over), failed (store down), or not confirmed before the lease it extends would
 * have ended ("late": measured from when the last confirmed renewal was sent, so our estimate never
 * outlives the store's lease).
 */
import type { Clock, TimerHandle } from '../core/clock.js';
import { LeaseLostError } from './errors.js';
import type { LeaseLostEvent } from './options.js';
import type { IdempotencyStore } from './store.js';

/** Why a lease was lost. */
export type LeaseLoss = LeaseLostEvent['reason'];

/** One claimed key's lease while its handler runs; `stop()` when the handler settles. */
export class LeaseKeeper {
  /** Aborted when the caller aborts or the lease is lost. */
  readonly signal: AbortSignal;
  /** Why the lease was lost, once it was. */
  lost: LeaseLoss | undefined = undefined;
  private readonly controller = new AbortController();
  private renewTimer: TimerHandle | undefined;
  private lateTimer: TimerHandle | undefined;
  private stopped = false;
  private readonly onCallerAbort: (() => void) | undefined;

  constructor(
    private readonly store: IdempotencyStore<unknown>,
    private readonly key: string,
    private readonly token: string,
    private readonly leaseMs: number,
    private readonly clock: Clock,
    claimedAt: number,
    private readonly callerSignal: AbortSignal | undefined,
    private readonly onLost: (reason: LeaseLoss) => void,
  ) {
    this.signal = this.controller.signal;
    if (callerSignal !== undefined) {
      // The caller checked its signal after the claim: it has not aborted yet.
      this.onCallerAbort = () => this.controller.abort(callerSignal.reason);
      callerSignal.addEventListener('abort', this.onCallerAbort);
    }
    this.schedule(claimedAt);
  }

  /** Stops renewing; a renewal still in flight is then ignored. */
  stop(): void {
    this.stopped = true;
    this.clearTimers();
    if (this.onCallerAbort !== undefined) this.callerSignal!.removeEventListener('abort', this.onCallerAbort);
  }

  /** Marks the lease lost (once) and aborts the handler's signal with `LeaseLostError`. */
  lose(reason: LeaseLoss, cause?: unknown): void {
    if (this.lost !== undefined) return;
    this.lost = reason;
    this.clearTimers();
    this.onLost(reason);
    this.controller.abort(new LeaseLostError(this.key, cause));
  }

  /** The error a call whose lease was lost rejects with. */
  error(cause?: unknown): LeaseLostError {
    const reason = this.signal.reason;
    return reason instanceof LeaseLostError ? reason : new LeaseLostError(this.key, cause);
  }

  /** Renews at a third of the lease after `sentAt`; the lease is lost at `sentAt + leaseMs` unless renewed. */
  private schedule(sentAt: number): void {
    const lateIn = Math.max(0, sentAt + this.leaseMs - this.clock.now());
    this.clearTimers();
    this.lateTimer = this.clock.setTimer(() => this.lose('renew-late'), lateIn);
    this.renewTimer = this.clock.setTimer(() => this.renew(), Math.max(1, Math.floor(this.leaseMs / 3)));
  }

  private renew(): void {
    this.renewTimer = undefined;
    const sentAt = this.clock.now();
    let pending: Promise<boolean>;
    try {
      pending = this.store.renew(this.key, this.token, this.leaseMs);
    } catch (error) {
      this.lose('renew-failed', error);
      return;
    }
    pending.then(
      (renewed) => {
        if (this.stopped || this.lost !== undefined) return;
        if (renewed) this.schedule(sentAt);
        else this.lose('renew-refused');
      },
      (error: unknown) => {
        if (!this.stopped) this.lose('renew-failed', error);
      },
    );
  }

  private clearTimers(): void {
    // A user's Clock need not take undefined.
    // Stryker disable next-line ConditionalExpression: (true) the bundled clocks ignore clearTimer(undefined)
    if (this.renewTimer !== undefined) this.clock.clearTimer(this.renewTimer);
    // Stryker disable next-line ConditionalExpression: (true) as above
    if (this.lateTimer !== undefined) this.clock.clearTimer(this.lateTimer);
    this.renewTimer = undefined;
    this.lateTimer = undefined;
  }
}
