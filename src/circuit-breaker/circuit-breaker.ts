import { classify } from '../core/classify.js';
import type { Clock } from '../core/clock.js';
import type { Context } from '../core/context.js';
import { type Disposer, type Listener, Listeners } from '../core/events.js';
import { GatedPolicy } from '../core/gate.js';
import { type Admission, type CallNote, Refusal, type Ticket } from '../core/gate-types.js';
import { isDependencyFailureKind } from '../core/kind.js';
import { failure, type Outcome } from '../core/outcome.js';
import type { Step } from '../core/policy.js';
import { TimeLimit, timeoutError } from '../core/time-limit.js';
import { CircuitOpenError, type RefusingState } from './errors.js';
import {
  type CircuitBreakerOptions,
  type CircuitSnapshot,
  type CircuitState,
  type ResolvedOptions,
  resolveOptions,
  type StateChangeEvent,
} from './options.js';
import { OutcomeWindow } from './window.js';

/** The default failure rule: the dependency failed to answer (not: it answered "no"). */
function failedByKind(error: unknown): boolean {
  return isDependencyFailureKind(classify(error));
}

/** What one call turned out to say about the dependency. */
type Verdict = 0 | 1 | 2;
const Verdict = {
  Success: 0,
  Failure: 1,
  /** The caller left (or the call was canceled): no evidence either way. */
  None: 2,
} as const;

/**
 * A circuit breaker. Create one with {@link circuitBreaker}.
 *
 * Closed → open when a trip rule fires; open refuses every call with {@link CircuitOpenError}
 * until `resetTimeoutMs` passes; half-open admits `halfOpenProbes` concurrent probes and refuses
 * the rest; `successThreshold` probe successes close it and any probe failure re-opens it.
 */
export class CircuitBreakerPolicy extends GatedPolicy<RefusingState> {
  private readonly o: ResolvedOptions;
  private readonly clock: Clock;
  private readonly window: OutcomeWindow | undefined;
  private readonly limit: TimeLimit | undefined;
  private readonly stateChanged = new Listeners<StateChangeEvent>();
  /** With `callTimeoutMs` or a slow-call rule, `run` times each call and judges it itself. */
  private readonly timed: boolean;
  private current: CircuitState = 'closed';
  /** Bumped on every transition: outcomes of calls admitted under an older state are ignored. */
  private generation = 0;
  private consecutiveFailures = 0;
  private openUntil = 0;
  private reopenCount = 0;
  private probesInFlight = 0;
  private probeSuccesses = 0;

  /** Use {@link circuitBreaker}. */
  constructor(options?: CircuitBreakerOptions) {
    super('circuit-breaker');
    const o = resolveOptions(options);
    this.o = o;
    this.clock = o.clock;
    this.window =
      // Stryker disable next-line ConditionalExpression: a window without a rate rule is written to and never read
      o.failureRate !== undefined || o.slowRate !== undefined
        ? new OutcomeWindow(o.clock, o.windowMs)
        : undefined;
    this.limit =
      o.callTimeoutMs === undefined ? undefined : new TimeLimit(o.clock, o.callTimeoutMode === 'aggressive');
    // Stryker disable next-line ConditionalExpression: timing an untimed call judges and feeds it as settle would (slowCallMs is Infinity): only the fast path is lost
    this.timed = this.limit !== undefined || o.slowRate !== undefined;
    if (options?.onStateChange !== undefined) this.onStateChange(options.onStateChange);
    this.configure(options ?? {}, o.clock);
    const initial = o.initialState;
    if (initial !== undefined) {
      this.current = initial.state;
      this.consecutiveFailures = initial.consecutiveFailures;
      this.reopenCount = initial.reopenCount;
      this.openUntil = initial.openUntil ?? 0;
    }
  }

  /**
   * The current state: a pure read that changes nothing and fires nothing. An open circuit whose
   * reset timeout has passed still reads `'open'` until the next call half-opens it (as in
   * resilience4j), so `state` always matches the last `onStateChange`.
   */
  get state(): CircuitState {
    return this.current;
  }

  /** Subscribes to state changes; returns a disposer. */
  onStateChange(listener: Listener<StateChangeEvent>): Disposer {
    return this.stateChanged.add(listener);
  }

  /** Forces the circuit open until {@link reset}: every call is refused. */
  isolate(): void {
    if (this.current !== 'isolated') this.transition('isolated');
  }

  /** Closes the circuit and forgets all history (failures, window, re-open backoff). */
  reset(): void {
    this.consecutiveFailures = 0;
    this.reopenCount = 0;
    this.window?.clear();
    if (this.current !== 'closed') this.transition('closed');
  }

  /**
   * The state to save across a restart; pass it back as `initialState`. The failure-rate window is
   * not saved: a restored breaker judges rates afresh.
   */
  toJSON(): CircuitSnapshot {
    const state = this.current;
    const base = { state, consecutiveFailures: this.consecutiveFailures, reopenCount: this.reopenCount };
    return state === 'open' ? { ...base, openUntil: this.openUntil } : base;
  }

  /** The time limit the next admitted call gets (undefined without `callTimeoutMs`). */
  get callTimeoutMs(): number | undefined {
    const base = this.o.callTimeoutMs;
    if (base === undefined) return undefined;
    return Math.min(this.o.maxCallTimeoutMs, base * (1 + this.consecutiveFailures / 10));
  }

  /** The fast path serves calls that need no timing: no call timeout, no slow-call rule. */
  // Stryker disable next-line BlockStatement: (never direct) run judges and feeds an untimed call as settle does: only the fast path is lost
  protected override direct(_context: Context): boolean {
    return !this.timed;
  }

  /**
   * Admits a call (taking a probe slot when half-open) or refuses it with {@link CircuitOpenError}.
   * The ticket remembers the state generation it was admitted under and whether it is a probe.
   */
  protected override admit(_context: Context): Admission<RefusingState> {
    switch (this.current) {
      case 'closed':
        return this.generation * 2;
      case 'open': {
        const now = this.clock.now();
        if (now < this.openUntil) return this.refuse('open', this.openUntil - now);
        this.transition('half-open');
        return this.takeProbe();
      }
      case 'half-open':
        return this.takeProbe();
      default:
        return this.refuse('isolated', undefined);
    }
  }

  /** Feeds an untimed call's outcome to the trip rules; `handled` when it counted as a failure. */
  protected override settle(ticket: Ticket, failed: boolean, error: unknown, context: Context): boolean {
    if (this.timed) return false; // judged in run, which has the times
    const verdict = failed ? this.judge(error, context) : Verdict.Success;
    this.feed(ticket, verdict, false);
    return verdict === Verdict.Failure;
  }

  /** With `callTimeoutMs` or a slow-call rule: runs the call under its time limit and judges it. */
  protected override run<T>(
    next: Step<T>,
    context: Context,
    ticket: Ticket,
    note: CallNote | undefined,
  ): Promise<Outcome<T>> {
    if (!this.timed) return next(context);
    const limit = this.limit;
    const ms = this.callTimeoutMs ?? 0; // 0: unused without a call timeout
    const startedAt = this.clock.now();
    const running = limit === undefined ? next(context) : limit.run(next, context, ms);
    return running.then((result) => {
      let outcome = result;
      const endedAt = this.clock.now();
      // Past its call timeout a call fails whatever it returned: a cooperative limit hands a late
      // value back, and so can an aggressive one whose timer runs late (a busy event loop).
      if (limit !== undefined && outcome.ok) {
        const inherited = context.deadline;
        const own = startedAt + ms;
        const deadline = inherited === undefined ? own : Math.min(inherited, own);
        if (endedAt >= deadline) outcome = failure(timeoutError(ms, deadline - startedAt));
      }
      // Without a slow-call rule slowCallMs is Infinity: no call is slow.
      const slow = endedAt - startedAt >= this.o.slowCallMs;
      const verdict = outcome.ok ? Verdict.Success : this.judge(outcome.error, context);
      this.feed(ticket, verdict, slow);
      if (note !== undefined && verdict === Verdict.Failure) note.handled = true;
      return outcome;
    });
  }

  /** A half-open call: a probe's ticket (odd), or refused when every probe slot is taken. */
  private takeProbe(): Admission<RefusingState> {
    if (this.probesInFlight >= this.o.halfOpenProbes) return this.refuse('half-open', undefined);
    this.probesInFlight++;
    return this.generation * 2 + 1;
  }

  private refuse(state: RefusingState, retryAfterMs: number | undefined): Refusal<RefusingState> {
    return new Refusal(state, new CircuitOpenError(state, retryAfterMs));
  }

  /**
   * What a failed call says about the dependency. A call whose signal aborted is judged by the
   * abort's reason: a deadline that passed (an outer timeout, `AbortSignal.timeout()`) is a timeout
   * failure; any other abort is the caller's own cancel and says nothing.
   */
  private judge(error: unknown, context: Context): Verdict {
    const signal = context.signal;
    if (!signal.aborted) return this.judgeError(error);
    const reason: unknown = signal.reason;
    return classify(reason) === 'timeout' ? this.judgeError(reason) : Verdict.None;
  }

  /** What an error says about the dependency, by `isFailure` or by kind. */
  private judgeError(error: unknown): Verdict {
    const isFailure = this.o.isFailure;
    if (isFailure !== undefined) {
      try {
        return isFailure(error) ? Verdict.Failure : Verdict.Success;
      } catch {
        return Verdict.Failure; // a broken predicate must not hide failures
      }
    }
    if (failedByKind(error)) return Verdict.Failure;
    // The dependency answered (a 4xx, a conflict): evidence it is up. A cancellation is no evidence.
    return classify(error) === 'canceled' ? Verdict.None : Verdict.Success;
  }

  /** Feeds the verdict of the call admitted with `ticket` to the state machine. */
  private feed(ticket: Ticket, verdict: Verdict, slow: boolean): void {
    // A call admitted under an earlier state (before an open, reset or isolate) says nothing now.
    if (ticket >> 1 !== this.generation) return;
    if ((ticket & 1) === 1) {
      this.probesInFlight--;
      if (verdict === Verdict.Failure) {
        this.consecutiveFailures++;
        this.reopenCount++;
        this.open();
      } else if (verdict === Verdict.Success) {
        this.consecutiveFailures = 0;
        if (++this.probeSuccesses >= this.o.successThreshold) this.close();
      }
      return;
    }
    if (verdict === Verdict.None) return;
    const failed = verdict === Verdict.Failure;
    if (failed) this.consecutiveFailures++;
    else this.consecutiveFailures = 0;
    const window = this.window;
    if (window !== undefined) window.record(failed, slow);
    // The ticket is of this generation and no probe: the circuit is still closed. Either rate rule
    // has its window, and only a slow-call rule makes a call slow.
    if (
      this.consecutiveFailures >= this.o.failureThreshold ||
      (failed && this.o.failureRate !== undefined && window!.failureRateReached(this.o.failureRate)) ||
      (slow && window!.slowRateReached(this.o.slowRate!))
    ) {
      this.open();
    }
  }

  private open(): void {
    const o = this.o;
    const ms = Math.min(o.maxResetTimeoutMs, o.resetTimeoutMs * o.resetBackoff ** this.reopenCount);
    this.openUntil = this.clock.now() + ms;
    this.transition('open');
  }

  private close(): void {
    this.reopenCount = 0;
    this.consecutiveFailures = 0;
    this.window?.clear();
    this.transition('closed');
  }

  private transition(to: CircuitState): void {
    const from = this.current;
    this.current = to;
    // Stryker disable next-line UpdateOperator: counting down gives every state its own generation as well (`>> 1` floors negative tickets alike)
    this.generation++;
    this.probesInFlight = 0;
    this.probeSuccesses = 0;
    // Stryker disable next-line ConditionalExpression: emitting with no listener does nothing; the check only saves building the event
    if (this.stateChanged.active) this.stateChanged.emit({ from, to });
  }
}

/**
 * Creates a circuit breaker: stop calling a dependency that keeps failing, give it time, then
 * probe it carefully.
 *
 * - Trip rules: `failureThreshold` consecutive failures (default 5), and/or `failureRate` over a
 *   sliding time window, and/or a slow-call rate (`slowCallMs` + `slowCallRate`).
 * - Only failures of kind `transient`, `timeout`, `unavailable`, `overloaded` or `internal` count
 *   (override with `isFailure`). A 4xx or a conflict means the dependency answered: it counts as a
 *   success, never as a failure. A call that ended because a deadline passed (its signal aborted
 *   with a timeout: an outer `timeout`, a deadline, `callTimeoutMs`) is a timeout failure; only a
 *   caller's own cancel counts as nothing.
 * - Open: refuses at once with {@link CircuitOpenError} (kind `unavailable`, `retryAfterMs` = time
 *   until half-open), without calling the operation.
 * - Half-open: exactly `halfOpenProbes` concurrent probes; others refused at once, not queued.
 *   `successThreshold` successes close it; any probe failure re-opens it, for
 *   `resetTimeoutMs × resetBackoff^reopens` (capped by `maxResetTimeoutMs`). A probe aborted by its
 *   caller frees its slot.
 * - `callTimeoutMs`: each admitted call runs under a timeout that stretches to
 *   `callTimeoutMs × (1 + consecutiveFailures / 10)` (capped) while failures accumulate. A call
 *   past it fails with `TimeoutError` and counts as a failure whatever it returns later; by
 *   default (`callTimeoutMode: 'aggressive'`) it rejects at the limit, `'cooperative'` waits for the
 *   operation to settle first.
 * - `state`, `toJSON()` and `callTimeoutMs` are pure reads: an open circuit past its reset
 *   timeout reads `'open'` until the next call half-opens it.
 *
 * Throws a `TypeError` naming the option for invalid options.
 *
 * @example
 * const breaker = circuitBreaker({ failureRate: { threshold: 0.5, windowMs: 10_000, minimumThroughput: 20 }, resetTimeoutMs: 5_000 });
 * breaker.onStateChange(({ from, to }) => log.warn(`payments circuit ${from} → ${to}`));
 * const receipt = await breaker.execute(({ signal }) => payments.charge(order, { signal }));
 */
export function circuitBreaker(options?: CircuitBreakerOptions): CircuitBreakerPolicy {
  return new CircuitBreakerPolicy(options);
}
