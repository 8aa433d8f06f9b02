/**
 * The calls the policy conformance scenarios make, each with the outcome the contract promises.
 * A scenario runs one or more of them; the leftovers scenario runs them all and looks at what
 * each left behind. Internal to `bulwark/testing`.
 */
import { classify } from '../core/classify.js';
import type { Context } from '../core/context.js';
import { type Bench, describeValue, fail, operationError, recorded } from './policy-bench.js';

/** One call of the contract, made on a fresh caller signal. */
export interface Case {
  readonly what: string;
  /**
   * Makes the call and checks its outcome. Resolves with how many live timers the case set up
   * itself before the call (the holders of a refusal), which the call is not to blame for.
   */
  run(bench: Bench, controller: AbortController): Promise<number>;
}

/** Long enough to be "never" for any scenario: the operations below wait this long for an abort. */
const hourMs = 3_600_000;

/** An operation that honours its signal and otherwise never ends (its sleep rejects on abort). */
const hanging =
  (bench: Bench) =>
  ({ signal }: Context): Promise<unknown> =>
    bench.clock.sleep(hourMs, signal);

/** Lets the call start: every queued promise callback runs, no time passes. */
async function started(bench: Bench, contexts: readonly Context[], what: string): Promise<Context> {
  await bench.clock.advance(0);
  const context = contexts[0];
  if (context === undefined) fail(`${what}: the operation had not started`);
  return context;
}

/** An already-aborted signal: rejects with its reason, the operation never runs. */
export const preAborted: Case = {
  what: 'a call with an already-aborted signal',
  async run(bench, controller) {
    const reason = new Error('policy conformance: aborted before the call');
    controller.abort(reason);
    const { operation, contexts } = recorded(() => 'value');
    const call = await bench.settle(operation, { signal: controller.signal }, this.what);
    bench.rejectedWith(call, reason, this.what);
    if (contexts.length > 0) fail(`${this.what}: the operation ran`);
    return 0;
  },
};

/** A value returned at once (`later` false) or after 30 ms on the clock. */
export function value(later: boolean): Case {
  return {
    what: later ? 'a value after 30 ms' : 'a value returned at once',
    async run(bench, controller) {
      const result = { policyConformance: 'value' };
      const { operation, contexts } = recorded(({ signal }) =>
        later ? bench.clock.sleep(30, signal).then(() => result) : result,
      );
      const call = await bench.settle(operation, { signal: controller.signal }, this.what);
      bench.resolvedWith(call, result, this.what);
      const context = contexts[0];
      if (context === undefined) fail(`${this.what}: the operation never ran`);
      if (!(context.signal instanceof AbortSignal))
        fail(`${this.what}: context.signal is ${describeValue(context.signal)}, not an AbortSignal`);
      if (!Number.isInteger(context.attempt) || context.attempt < 1)
        fail(`${this.what}: context.attempt is ${describeValue(context.attempt)}, not a whole number ≥ 1`);
      return 0;
    },
  };
}

/** The operation fails with a transient error: thrown synchronously, or rejected after 30 ms. */
export function failing(sync: boolean): Case {
  return {
    what: sync ? 'a synchronous throw' : 'an asynchronous rejection after 30 ms',
    async run(bench, controller) {
      const error = operationError();
      const { operation, contexts } = recorded(({ signal }) => {
        if (sync) throw error;
        return bench.clock.sleep(30, signal).then(() => Promise.reject(error));
      });
      const call = await bench.settle(operation, { signal: controller.signal }, this.what);
      if (contexts.length === 0) fail(`${this.what}: the operation never ran`);
      bench.failedWith(call, error, this.what);
      return 0;
    },
  };
}

/** The caller aborts a running call: the operation's signal aborts at once with the same reason. */
export const abortMidCall: Case = {
  what: 'a call aborted by its caller mid-call',
  async run(bench, controller) {
    const { operation, contexts } = recorded(hanging(bench));
    const call = bench.call(operation, { signal: controller.signal }, this.what);
    const { signal } = await started(bench, contexts, this.what);
    const reason = new Error('policy conformance: the caller aborted');
    controller.abort(reason);
    if (!signal.aborted) fail(`${this.what}: the operation's signal had not aborted when the caller's did`);
    if (signal.reason !== reason)
      fail(
        `${this.what}: the operation's signal aborted with ${describeValue(signal.reason)}, not the caller's reason`,
      );
    await bench.drive(call, this.what);
    bench.rejectedWith(call, reason, this.what);
    return 0;
  },
};

/** A hanging operation with a caller deadline 50 ms away. */
export const deadline: Case = {
  what: 'a call with a deadline 50 ms away',
  async run(bench, controller) {
    const at = bench.clock.now() + 50;
    const { operation, contexts } = recorded(hanging(bench));
    const call = bench.call(operation, { signal: controller.signal, deadline: at }, this.what);
    const seen = (await started(bench, contexts, this.what)).deadline;
    if (seen === undefined || seen > at)
      fail(
        `${this.what}: the operation's context.deadline is ${describeValue(seen)}, expected at most ${at}`,
      );
    await bench.clock.advance(50);
    if (bench.subject.enforcesDeadline === false) {
      // Declared: the policy does not end calls at a deadline. The caller ends this one.
      const reason = new Error('policy conformance: the caller aborted after the deadline');
      controller.abort(reason);
      await bench.drive(call, this.what);
      bench.rejectedWith(call, reason, this.what);
      return 0;
    }
    if (!call.settled) fail(`${this.what}: the call had not ended at its deadline`);
    const { recovers, unwrap } = bench.subject;
    if (recovers !== undefined)
      bench.resolvedWith(call, recovers.value, `${this.what} (the declared recovery value)`);
    else if (call.fulfilled) fail(`${this.what}: resolved with ${describeValue(call.value)} at the deadline`);
    else if (classify(unwrap === undefined ? call.reason : unwrap(call.reason)) !== 'timeout')
      fail(`${this.what}: rejected with ${describeValue(call.reason)}, not a timeout`);
    return 0;
  },
};

/** After the declared `refuse()`: the call rejects with an `Error` and the operation never runs. */
export const refusal: Case = {
  what: 'a call after refuse()',
  async run(bench, controller) {
    await bench.subject.refuse?.();
    const holders = bench.clock.aliveTimers;
    const { operation, contexts } = recorded(() => 'value');
    const call = await bench.settle(operation, { signal: controller.signal }, this.what);
    if (call.fulfilled)
      fail(`${this.what}: the call was admitted and resolved with ${describeValue(call.value)}`);
    if (contexts.length > 0) fail(`${this.what}: the operation ran`);
    if (!(call.reason instanceof Error))
      fail(`${this.what}: rejected with ${describeValue(call.reason)}, not an Error`);
    return holders;
  },
};

/** Every case that settles a call (the deadline only where the policy enforces it, or is told to). */
export const settlingCases: readonly Case[] = [
  preAborted,
  value(false),
  value(true),
  failing(true),
  failing(false),
  abortMidCall,
  deadline,
];
