/**
 * Keeping a lease (an idempotency key's claim, a lock) while work runs: renew it every
 * `leaseMs / 3`, and abort the work's signal the moment the lease may no longer be ours: a renewal
 * refused (taken over), failed (store down), or not confirmed before the lease it extends would
 * have ended ("late": measured from when the last confirmed renewal was sent, less a margin for
 * clock drift, so our estimate never outlives the store's lease).
 */
import type { Clock, TimerHandle } from './clock.js';
import { LazySignal } from './lazy-signal.js';

/** The margin for clock drift to take off each lease's end, as node-redlock: 1 % of it plus 2 ms. */
export function driftMarginMs(leaseMs: number): number {
  return Math.ceil(leaseMs * 0.01) + 2;
}

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

/**
 * One lease while its work runs; `stop()` when the work settles. Costs one timer at a time (the
 * renewal's, then, while a renewal is in flight, the lease end's) and no `AbortController` until
 * someone reads {@link signal}.
 */
export class LeaseKeeper<Reason extends string = never> {
  /** Why the lease was lost, once it was. */
  lost: LeaseLoss | Reason | undefined = undefined;
  private readonly lazy = new LazySignal();
  private lostWith: Error | undefined;
  /** The renewal's timer, or while a renewal is in flight the lease end's. */
  private timer: TimerHandle | undefined;
  /** When (clock time) the lease counts as lost unless a renewal sent before then is confirmed. */
  private endsAt: number;
  private stopped = false;
  private readonly onCallerAbort: (() => void) | undefined;

  constructor(private readonly terms: LeaseTerms<Reason>) {
    const callerSignal = terms.signal;
    if (callerSignal !== undefined) {
      // The caller checked its signal after the acquisition: it has not aborted yet.
      this.onCallerAbort = () => this.lazy.abort(callerSignal.reason);
      callerSignal.addEventListener('abort', this.onCallerAbort);
    }
    this.endsAt = this.schedule(terms.sentAt);
  }

  /** Aborted when the caller aborts or the lease is lost (created on first read). */
  get signal(): AbortSignal {
    return this.lazy.signal;
  }

  /** True once the caller aborted or the lease was lost ({@link signal} is then aborted). */
  get aborted(): boolean {
    return this.lazy.aborted;
  }

  /** Why {@link signal} aborted (the caller's reason, or the lost error); undefined before. */
  get reason(): unknown {
    return this.lazy.reason;
  }

  /** Stops renewing; a renewal still in flight is then ignored. */
  stop(): void {
    this.stopped = true;
    this.clearTimer();
    if (this.onCallerAbort !== undefined) this.terms.signal!.removeEventListener('abort', this.onCallerAbort);
  }

  /** Marks the lease lost (once) and aborts the work's signal with the lost error. */
  lose(reason: LeaseLoss | Reason, cause?: unknown): void {
    if (this.lost !== undefined) return;
    this.lost = reason;
    this.clearTimer();
    this.terms.onLost(reason, cause);
    this.lostWith = this.terms.lostError(cause);
    this.lazy.abort(this.lostWith);
  }

  /** The error a call whose lease was lost rejects with. */
  error(cause?: unknown): Error {
    return this.lostWith !== undefined && this.lazy.reason === this.lostWith
      ? this.lostWith
      : this.terms.lostError(cause);
  }

  /**
   * Renews a third of the lease from now, or sooner so that a third of it is still left when the
   * renewal goes out (a slow answer leaves less); returns when the lease that began at `sentAt` ends.
   */
  private schedule(sentAt: number): number {
    const { leaseMs, marginMs = 0, clock } = this.terms;
    const endsAt = sentAt + leaseMs - marginMs;
    const third = Math.max(1, Math.floor(leaseMs / 3));
    const renewIn = Math.min(third, Math.max(0, endsAt - clock.now() - third));
    this.timer = clock.setTimer(() => this.renew(), renewIn);
    clock.keepAlive?.(this.timer, false);
    return endsAt;
  }

  private renew(): void {
    const { clock } = this.terms;
    const sentAt = clock.now();
    // A timer that fired late (a blocked event loop) may find the lease already over.
    if (sentAt >= this.endsAt) {
      this.timer = undefined;
      this.lose('renew-late');
      return;
    }
    this.timer = clock.setTimer(() => this.lose('renew-late'), this.endsAt - sentAt);
    clock.keepAlive?.(this.timer, false);
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
        this.clearTimer();
        if (renewed) this.endsAt = this.schedule(sentAt);
        else this.lose('renew-refused');
      },
      (error: unknown) => {
        if (!this.stopped) this.lose('renew-failed', error);
      },
    );
  }

  private clearTimer(): void {
    // A user's Clock need not take undefined.
    // Stryker disable next-line ConditionalExpression: (true) the bundled clocks ignore clearTimer(undefined)
    if (this.timer !== undefined) this.terms.clock.clearTimer(this.timer);
    this.timer = undefined;
  }
}
