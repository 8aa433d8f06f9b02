/**
 * Keeping a lease (an idempotency key's claim, a lock) while work runs: renew it every
 * `leaseMs / 3`, and abort the work's signal the moment the lease may no longer be ours: a renewal
 * refused (taken over), failed (store down), or not confirmed before the lease it extends would
 * have ended ("late": measured from when the last confirmed renewal was sent, less a margin for
 * clock drift, so our estimate never outlives the store's lease).
 */
import type { Clock, TimerHandle } from './clock.js';

/** Why a renewal lost the lease. */
export type LeaseLoss = 'renew-refused' | 'renew-failed' | 'renew-late';

/** What a {@link LeaseKeeper} keeps, and how it reports a loss. `Reason` adds the caller's own reasons. */
export interface LeaseTerms<Reason extends string> {
  /** The lease's length, in ms: renewed for that long every `leaseMs / 3`. */
  readonly leaseMs: number;
  readonly clock: Clock;
  /** When the acquisition was sent (`clock` time): the first lease is counted from then. */
  readonly sentAt: number;
  /** Taken off each lease's end before it counts as lost (clock drift between us and the store). @default 0 */
  readonly marginMs?: number | undefined;
  /** The caller's signal: its abort aborts {@link LeaseKeeper.signal} too. */
  readonly signal: AbortSignal | undefined;
  /** Renews the lease for `leaseMs`: true when renewed, false when it was already lost. */
  renew(): Promise<boolean>;
  /** The error the work's signal aborts with when the lease is lost. */
  lostError(cause?: unknown): Error;
  /** Called once, when the lease is lost. */
  onLost(reason: LeaseLoss | Reason, cause?: unknown): void;
}

/** One lease while its work runs; `stop()` when the work settles. */
export class LeaseKeeper<Reason extends string = never> {
  /** Aborted when the caller aborts or the lease is lost. */
  readonly signal: AbortSignal;
  /** Why the lease was lost, once it was. */
  lost: LeaseLoss | Reason | undefined = undefined;
  private readonly controller = new AbortController();
  private lostWith: Error | undefined;
  private renewTimer: TimerHandle | undefined;
  private lateTimer: TimerHandle | undefined;
  private stopped = false;
  private readonly onCallerAbort: (() => void) | undefined;

  constructor(private readonly terms: LeaseTerms<Reason>) {
    this.signal = this.controller.signal;
    const callerSignal = terms.signal;
    if (callerSignal !== undefined) {
      // The caller checked its signal after the acquisition: it has not aborted yet.
      this.onCallerAbort = () => this.controller.abort(callerSignal.reason);
      callerSignal.addEventListener('abort', this.onCallerAbort);
    }
    this.schedule(terms.sentAt);
  }

  /** Stops renewing; a renewal still in flight is then ignored. */
  stop(): void {
    this.stopped = true;
    this.clearTimers();
    if (this.onCallerAbort !== undefined) this.terms.signal!.removeEventListener('abort', this.onCallerAbort);
  }

  /** Marks the lease lost (once) and aborts the work's signal with the lost error. */
  lose(reason: LeaseLoss | Reason, cause?: unknown): void {
    if (this.lost !== undefined) return;
    this.lost = reason;
    this.clearTimers();
    this.terms.onLost(reason, cause);
    this.lostWith = this.terms.lostError(cause);
    this.controller.abort(this.lostWith);
  }

  /** The error a call whose lease was lost rejects with. */
  error(cause?: unknown): Error {
    const reason: unknown = this.signal.reason;
    return reason !== undefined && reason === this.lostWith ? this.lostWith : this.terms.lostError(cause);
  }

  /** Renews at a third of the lease after `sentAt`; the lease is lost at its end unless renewed. */
  private schedule(sentAt: number): void {
    const { leaseMs, marginMs = 0, clock } = this.terms;
    const lateIn = Math.max(0, sentAt + leaseMs - marginMs - clock.now());
    this.clearTimers();
    this.lateTimer = clock.setTimer(() => this.lose('renew-late'), lateIn);
    clock.keepAlive?.(this.lateTimer, false);
    this.renewTimer = clock.setTimer(() => this.renew(), Math.max(1, Math.floor(leaseMs / 3)));
    clock.keepAlive?.(this.renewTimer, false);
  }

  private renew(): void {
    this.renewTimer = undefined;
    const sentAt = this.terms.clock.now();
    let pending: Promise<boolean>;
    try {
      pending = this.terms.renew();
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
    const { clock } = this.terms;
    // A user's Clock need not take undefined.
    // Stryker disable next-line ConditionalExpression: (true) the bundled clocks ignore clearTimer(undefined)
    if (this.renewTimer !== undefined) clock.clearTimer(this.renewTimer);
    // Stryker disable next-line ConditionalExpression: (true) as above
    if (this.lateTimer !== undefined) clock.clearTimer(this.lateTimer);
    this.renewTimer = undefined;
    this.lateTimer = undefined;
  }
}
