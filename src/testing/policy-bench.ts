/**
 * What one scenario of {@link policyConformance} works with: the policy under test (reached one of
 * three ways), its fake clock, and the checks the scenarios share. Internal to `bulwark/testing`.
 */
import { AttemptContext, type Context, type Operation } from '../core/context.js';
import type { Outcome } from '../core/outcome.js';
import { pipeline } from '../core/pipeline.js';
import { BasePolicy, type ExecuteOptions, type Policy, runStep, type Step } from '../core/policy.js';
import { show } from '../core/validate.js';
import type { FakeClock } from './fake-clock.js';

/** What `make` is given: build the policy on this clock (and every timer it sets). */
export interface PolicyFixture {
  /** The clock the policy must read time and set timers on; the suite moves it. */
  readonly clock: FakeClock;
  /**
   * Runs the operation of the suite's latest call. For a policy that runs operations of its own
   * instead of the one given to `execute` (hedge `variants`), make each of them call this, so the
   * scenarios still see their operation run.
   */
  readonly operation: Operation<unknown>;
}

/** The policy under test and what it declares about itself. */
export interface PolicyUnderTest {
  readonly policy: Policy<unknown>;
  /**
   * For a policy that wraps a failure (retry's `RetriesExhaustedError`): the operation's error
   * carried by what the call rejected with. The suite requires `unwrap(rejection) === error`.
   * @default the rejection itself
   */
  readonly unwrap?: ((rejection: unknown) => unknown) | undefined;
  /**
   * For a policy that answers a failure with a value (a `fallback`): that value. A failed call must
   * then resolve with it (compared with `Object.is`) instead of rejecting.
   */
  readonly recovers?: { readonly value: unknown } | undefined;
  /**
   * Whether the policy ends a call by the caller's `deadline` (a timeout, a breaker's call
   * timeout). `false` declares that it does not: the deadline must still reach the operation.
   * @default true
   */
  readonly enforcesDeadline?: boolean | undefined;
  /**
   * Puts the policy in a state where it refuses the next call (fill its slots, open the breaker,
   * spend the quota). Declaring it adds the refusal scenarios (and `onRejected`'s shape).
   */
  readonly refuse?: (() => void | Promise<void>) | undefined;
}

/** Builds the policy under test; called once per scenario, and once to see which scenarios apply. */
export type MakePolicy = (fixture: PolicyFixture) => PolicyUnderTest;

/** A call's promise, watched from the start so that its rejection is never unhandled. */
export interface Watched {
  /** Whether it has resolved or rejected; then `value` or `reason` holds the result. */
  readonly settled: boolean;
  readonly fulfilled: boolean;
  readonly value: unknown;
  readonly reason: unknown;
}

/** The error every failure of the suite throws. */
export function fail(message: string): never {
  throw new Error(`policy conformance: ${message}`);
}

/** A readable name for a value in a failure message. */
export function describeValue(value: unknown): string {
  if (value instanceof Error) return `${value.name}: ${JSON.stringify(value.message)}`;
  return show(value);
}

/**
 * A policy of the suite's own that passes every call through with a child context (one that reads
 * through to its parent, as retry's and hedge's do), so the policy under test runs as an inner
 * layer of a pipeline, through its composed step.
 */
class Passthrough extends BasePolicy {
  [runStep]<T>(next: Step<T>, context: Context): Promise<Outcome<T>> {
    return next(new AttemptContext(context, context.attempt));
  }
}

/** How a scenario reaches the policy: the `execute` fast path, or inside a pipeline. */
export interface Way {
  readonly name: string;
  wrap(policy: Policy<unknown>): Policy<unknown>;
}

/** The three ways every scenario runs: the fast path, a pipeline of one, and an inner layer. */
export const ways: readonly Way[] = [
  { name: 'execute', wrap: (policy) => policy },
  { name: 'pipeline(policy)', wrap: (policy) => pipeline(policy) },
  { name: 'pipeline(passthrough, policy)', wrap: (policy) => pipeline(new Passthrough(), policy) },
];

// Loaded on first use, so `bulwark/testing` needs nothing from Node at load time.
let listenersOf: Promise<(target: EventTarget, type: string) => unknown[]> | undefined;

/** The `abort` listeners on `signal` right now. */
async function abortListeners(signal: AbortSignal): Promise<number> {
  listenersOf ??= import('node:events').then(({ EventEmitter }) => EventEmitter.getEventListeners);
  return (await listenersOf)(signal, 'abort').length;
}

/** The most timers {@link Bench.drive} fires waiting for one call before it calls it hung. */
const maxTimersPerCall = 10_000;

/** One scenario's policy (reached one way), clock and checks. */
export class Bench {
  readonly clock: FakeClock;
  readonly subject: PolicyUnderTest;
  /** The policy as the scenario calls it (itself, or inside a pipeline). */
  readonly policy: Policy<unknown>;
  private latest: Operation<unknown> = () => fail('the policy ran fixture.operation before any call');
  /** The suite's latest call, for the event scenarios to compare an event with. */
  latestCall: Watched | undefined = undefined;

  constructor(make: MakePolicy, way: Way, clock: FakeClock) {
    this.clock = clock;
    this.subject = make({ clock, operation: (context) => this.latest(context) });
    this.policy = way.wrap(this.subject.policy);
  }

  /** Calls `execute`; a synchronous throw is a failure of `what` (execute must return a rejection). */
  call(operation: Operation<unknown>, options: ExecuteOptions | undefined, what: string): Watched {
    this.latest = operation;
    let promise: Promise<unknown>;
    try {
      promise = this.policy.execute(operation, options);
    } catch (error) {
      fail(
        `${what}: execute threw synchronously (${describeValue(error)}) instead of returning a rejected promise`,
      );
    }
    if (!(promise instanceof Promise))
      fail(`${what}: execute returned ${describeValue(promise)}, not a promise`);
    const watched = {
      settled: false,
      fulfilled: false,
      value: undefined as unknown,
      reason: undefined as unknown,
    };
    promise.then(
      (value) => Object.assign(watched, { settled: true, fulfilled: true, value }),
      (reason: unknown) => Object.assign(watched, { settled: true, reason }),
    );
    this.latestCall = watched;
    return watched;
  }

  /** Lets time pass, one due timer at a time, until `call` settles; fails if it never does. */
  async drive(call: Watched, what: string): Promise<void> {
    for (let fired = 0; fired < maxTimersPerCall; fired++) {
      await this.clock.advance(0);
      if (call.settled) return;
      if (!(await this.clock.next())) fail(`${what}: the call never settled (no timer left to wait for)`);
    }
    fail(`${what}: the call had not settled after ${maxTimersPerCall} timers`);
  }

  /** Calls and drives to the end. */
  async settle(
    operation: Operation<unknown>,
    options: ExecuteOptions | undefined,
    what: string,
  ): Promise<Watched> {
    const call = this.call(operation, options, what);
    await this.drive(call, what);
    return call;
  }

  /** `call` resolved with `value`. */
  resolvedWith(call: Watched, value: unknown, what: string): void {
    if (!call.fulfilled)
      fail(
        `${what}: expected it to resolve with ${describeValue(value)}, it rejected with ${describeValue(call.reason)}`,
      );
    if (!Object.is(call.value, value))
      fail(`${what}: expected it to resolve with ${describeValue(value)}, got ${describeValue(call.value)}`);
  }

  /** `call` rejected with exactly `reason` (the same object). */
  rejectedWith(call: Watched, reason: unknown, what: string): void {
    if (call.fulfilled)
      fail(
        `${what}: expected it to reject with ${describeValue(reason)}, it resolved with ${describeValue(call.value)}`,
      );
    if (call.reason !== reason)
      fail(`${what}: expected it to reject with ${describeValue(reason)}, got ${describeValue(call.reason)}`);
  }

  /** `call` rejected with a `TypeError`. */
  rejectedWithTypeError(call: Watched, what: string): void {
    if (call.fulfilled || !(call.reason instanceof TypeError))
      fail(
        `${what}: expected a TypeError rejection, got ${call.fulfilled ? `a value, ${describeValue(call.value)}` : describeValue(call.reason)}`,
      );
  }

  /** `call` ended as the policy ends a call whose operation failed with `error`. */
  failedWith(call: Watched, error: unknown, what: string): void {
    const { recovers, unwrap } = this.subject;
    if (recovers !== undefined) {
      this.resolvedWith(call, recovers.value, `${what} (the declared recovery value)`);
      return;
    }
    if (call.fulfilled)
      fail(
        `${what}: expected it to reject with the operation's error, it resolved with ${describeValue(call.value)}`,
      );
    const carried = unwrap === undefined ? call.reason : unwrap(call.reason);
    if (carried !== error)
      fail(
        `${what}: expected the operation's error ${describeValue(error)}${unwrap === undefined ? '' : ' (after unwrap)'}, got ${describeValue(call.reason)}`,
      );
  }

  /** Nothing of a settled call is left: no abort listener on the caller's signal, no live timer. */
  async nothingLeft(signal: AbortSignal | undefined, what: string, liveTimersBefore = 0): Promise<void> {
    if (signal !== undefined) {
      const listeners = await abortListeners(signal);
      if (listeners > 0)
        fail(`${what}: ${listeners} abort listener(s) left on the caller's signal after the call settled`);
    }
    const live = this.clock.aliveTimers - liveTimersBefore;
    if (live > 0)
      fail(
        `${what}: ${live} live timer(s) left after the call settled (a timer that would keep the process alive)`,
      );
  }
}

/** A failure the operation throws: transient (ECONNRESET), so retries, breakers and hedges act on it. */
export function operationError(): Error {
  return Object.assign(new Error('policy conformance: the operation failed'), { code: 'ECONNRESET' });
}

/** An operation that records every context it is called with. */
export function recorded<T>(body: Operation<T>): {
  readonly operation: Operation<T>;
  readonly contexts: Context[];
} {
  const contexts: Context[] = [];
  return {
    contexts,
    operation: (context) => {
      contexts.push(context);
      return body(context);
    },
  };
}
