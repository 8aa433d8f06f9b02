import type { Clock } from '../core/clock.js';
import type { Context } from '../core/context.js';
import { type Disposer, type Listener, Listeners } from '../core/events.js';
import { GatedPolicy } from '../core/gate.js';
import { type Admission, type CallNote, Refusal, type Ticket } from '../core/gate-types.js';
import { failure, type Outcome } from '../core/outcome.js';
import type { Step } from '../core/policy.js';
import { TimeLimit, timeoutError } from '../core/time-limit.js';
import { CircuitOpenError, type RefusingState } from './errors.js';
import { Probes } from './half-open.js';
import {
  type CircuitBreakerOptions,
  type CircuitSnapshot,
  type CircuitState,
  type ResolvedOptions,
  resolveOptions,
  type StateChangeEvent,
} from './options.js';
import type { CircuitStats } from './stats.js';
import { judge, NONE, SUCCESS, type Verdict } from './verdict.js';
import { Mark, type OutcomeWindow } from './window.js';
import { openWindow } from './window-options.js';

/**
 * A circuit breaker. Create one with {@link circuitBreaker}.
 *
 * Closed → open when a trip rule fires; open refuses every call with {@link CircuitOpenError}
 * until `resetTimeoutMs` passes; half-open admits `halfOpenProbes` probes and refuses the rest,
 * and their outcomes close or re-open it (the first failure re-opens, or a sample decides with
 * `halfOpenSuccessRate`).
 */
export class CircuitBreakerPolicy extends GatedPolicy<RefusingState> {
  private readonly o: ResolvedOptions;
  private readonly clock: Clock;
  private readonly window: OutcomeWindow;
  private readonly probes: Probes;
  private readonly limit: TimeLimit | undefined;
  private readonly stateChanged = new Listeners<StateChangeEvent>();
  /** With `callTimeoutMs`, a slow-call rule or `trackLatency`, `run` times and judges each call. */
  private readonly timed: boolean;
  private current: CircuitState = 'closed';
  /** Bumped on every transition: outcomes of calls admitted under an older state are ignored. */
  private generation = 0;
  private consecutiveFailures = 0;
  private openUntil = 0;
  private reopenCount = 0;

  /** Use {@link circuitBreaker}. */
  constructor(options?: CircuitBreakerOptions) {
    super('circuit-breaker');
    const o = resolveOptions(options);
    this.o = o;
    this.clock = o.clock;
    this.window = openWindow(o.window, o.clock, o.trackLatency);
    this.probes = new Probes(o.probes);
    this.limit =
      o.callTimeoutMs === undefined ? undefined : new TimeLimit(o.clock, o.callTimeoutMode === 'aggressive');
    // Stryker disable next-line ConditionalExpression: timing an untimed call judges and feeds it as settle would (slowCallMs is Infinity): only the fast path is lost
    this.timed = o.trackLatency || this.limit !== undefined || o.slowRate !== undefined;
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
    this.window.clear();
    if (this.current !== 'closed') this.transition('closed');
  }

  /**
   * The state to save across a restart; pass it back as `initialState`. The window is not saved: a
   * restored breaker judges rates afresh.
   */
  toJSON(): CircuitSnapshot {
    const state = this.current;
    const base = { state, consecutiveFailures: this.consecutiveFailures, reopenCount: this.reopenCount };
    return state === 'open' ? { ...base, openUntil: this.openUntil } : base;
  }

  /**
   * Rolling figures over the `window` ({@link CircuitStats}); latency percentiles (`trackLatency`)
   * are computed now. A pure read, like `state`; closing and `reset()` clear the window.
   * @example const { failures, rejections, latencyMs } = breaker.stats();
   */
  stats(): CircuitStats {
    return this.window.stats();
  }

  /** The time limit the next admitted call gets (undefined without `callTimeoutMs`). */
  get callTimeoutMs(): number | undefined {
    const base = this.o.callTimeoutMs;
    if (base === undefined) return undefined;
    return Math.min(this.o.maxCallTimeoutMs, base * (1 + this.consecutiveFailures / 10));
  }

  /** The fast path serves calls that need no timing: no call timeout, slow-call rule or latency. */
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
    const verdict = failed ? judge(error, context, this.o.isFailure) : SUCCESS;
    this.feed(ticket, verdict, 0);
    return (verdict & Mark.Failed) !== 0;
  }

  /** When timed: runs the call (under its time limit with `callTimeoutMs`), times and judges it. */
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
      const verdict = outcome.ok ? SUCCESS : judge(outcome.error, context, this.o.isFailure);
      this.feed(ticket, verdict, endedAt - startedAt);
      if (note !== undefined && (verdict & Mark.Failed) !== 0) note.handled = true;
      return outcome;
    });
  }

  /** A half-open call: a probe's ticket (odd), or refused when every probe's place is taken. */
  private takeProbe(): Admission<RefusingState> {
    return this.probes.take() ? this.generation * 2 + 1 : this.refuse('half-open', undefined);
  }

  private refuse(state: RefusingState, retryAfterMs: number | undefined): Refusal<RefusingState> {
    this.window.reject();
    return new Refusal(state, new CircuitOpenError(state, retryAfterMs));
  }

  /**
   * Feeds the verdict of the call admitted with `ticket` to the window and the state machine.
   * `latencyMs` is the call's time when timed, else 0 (without a slow-call rule slowCallMs is
   * Infinity: no call is slow).
   */
  private feed(ticket: Ticket, verdict: Verdict, latencyMs: number): void {
    // A call admitted under an earlier state (before an open, reset or isolate) says nothing now.
    if (ticket >> 1 !== this.generation) return;
    const probe = (ticket & 1) === 1;
    if (verdict === NONE) {
      if (probe) this.probes.free();
      return;
    }
    const failed = verdict !== SUCCESS;
    const marks = latencyMs >= this.o.slowCallMs ? verdict | Mark.Slow : verdict;
    if (failed) this.consecutiveFailures++;
    else this.consecutiveFailures = 0;
    const window = this.window;
    window.record(marks, latencyMs);
    if (probe) {
      const decision = this.probes.settle(failed);
      if (decision === 'close') this.close();
      else if (decision === 'open') {
        this.reopenCount++;
        this.open();
      }
      return;
    }
    // The ticket is of this generation and no probe: the circuit is still closed. Only a slow-call
    // rule makes a call slow.
    const o = this.o;
    if (
      this.consecutiveFailures >= o.failureThreshold ||
      (failed && o.failureRate !== undefined && window.failureRateReached(o.failureRate)) ||
      ((marks & Mark.Slow) !== 0 && window.slowRateReached(o.slowRate!))
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
    this.window.clear();
    this.transition('closed');
  }

  private transition(to: CircuitState): void {
    const from = this.current;
    this.current = to;
    // Stryker disable next-line UpdateOperator: counting down gives every state its own generation as well (`>> 1` floors negative tickets alike)
    this.generation++;
    this.probes.clear();
    // Stryker disable next-line ConditionalExpression: emitting with no listener does nothing; the check only saves building the event
    if (this.stateChanged.active) this.stateChanged.emit({ from, to });
    this.count('state_change');
  }
}

/**
 * Creates a circuit breaker: stop calling a dependency that keeps failing, give it time, then
 * probe it carefully.
 *
 * - Trip rules: `failureThreshold` consecutive failures (default 5), and/or `failureRate` and/or a
 *   slow-call rate (`slowCallMs` + `slowCallRate`) over the sliding `window` (the last N calls, or
 *   a time span).
 * - Only failures of kind `transient`, `timeout`, `unavailable`, `overloaded` or `internal` count
 *   (override with `isFailure`). A 4xx or a conflict means the dependency answered: it counts as a
 *   success, never as a failure. A call that ended because a deadline passed (its signal aborted
 *   with a timeout: an outer `timeout`, a deadline, `callTimeoutMs`) is a timeout failure; only a
 *   caller's own cancel counts as nothing.
 * - Open: refuses at once with {@link CircuitOpenError} (kind `unavailable`, `retryAfterMs` = time
 *   until half-open), without calling the operation.
 * - Half-open: `halfOpenProbes` concurrent probes, others refused at once. `successThreshold`
 *   successes close it and any probe failure re-opens it (or a sample decides: `halfOpenSuccessRate`)
 *   for `resetTimeoutMs × resetBackoff^reopens` (capped by `maxResetTimeoutMs`). A probe aborted by
 *   its caller frees its place; a timed-out probe failed.
 * - `callTimeoutMs`: each admitted call runs under a timeout that stretches to
 *   `callTimeoutMs × (1 + consecutiveFailures / 10)` (capped) while failures accumulate. A call
 *   past it fails with `TimeoutError` and counts as a failure whatever it returns later; by
 *   default (`callTimeoutMode: 'aggressive'`) it rejects at the limit, `'cooperative'` waits for the
 *   operation to settle first.
 * - `state`, `stats()`, `toJSON()` and `callTimeoutMs` are pure reads: an open circuit past its
 *   reset timeout reads `'open'` until the next call half-opens it.
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
