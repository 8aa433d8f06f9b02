/**
 * Chaos strategies (Polly's, as bulwark policies): each injects one kind of trouble into a share
 * of the calls it runs, so a test or a staging service can watch its own resilience at work.
 */
import { type Context, contextAborted, contextAbortReason } from '../core/context.js';
import { failure, type Outcome } from '../core/outcome.js';
import { invoke } from '../core/policy.js';
import {
  type Check,
  func,
  nonNegativeNumber,
  readOptions,
  required,
  type Schema,
} from '../core/read-options.js';
import { errorSource } from './chaos-injection.js';
import { type ChaosOptions, type ChaosPolicy, chaosFields, chaosPolicy, produce } from './chaos-policy.js';

export type { ChaosSwitch, InjectionOptions } from './chaos-injection.js';
export type { ChaosOptions, ChaosPolicy, ChaosStrategy, InjectedEvent } from './chaos-policy.js';

/** Options of `chaos.fault`. */
export interface ChaosFaultOptions extends ChaosOptions {
  /**
   * What an injected call fails with: an error (any object), or a function of the call's context
   * giving one, called for each injected call. Required.
   */
  readonly error: object | ((context: Context) => unknown);
}

/** Options of `chaos.latency`. */
export interface ChaosLatencyOptions extends ChaosOptions {
  /** How long an injected call waits on `clock` before it runs: a finite number ≥ 0. Required. */
  readonly ms: number;
}

/** Options of `chaos.outcome`. */
export interface ChaosOutcomeOptions<V> extends ChaosOptions {
  /**
   * What an injected call resolves with, instead of running: a value, or a function of the call's
   * context giving one (or a promise of one; a throw fails the call). To inject a function as the
   * value, return it from one: `value: () => handler`. Required (inject `undefined` with
   * `value: () => undefined`).
   */
  readonly value: V | ((context: Context) => V | Promise<V>);
}

/** Options of `chaos.behavior`. */
export interface ChaosBehaviorOptions extends ChaosOptions {
  /**
   * Runs before an injected call (awaited): kill a connection, fill a disk, flip a flag. If it
   * throws or rejects, the call fails with that error and the operation does not run. Required.
   */
  readonly run: (context: Context) => unknown;
}

const anyValue: Check<unknown> = (name, value) => {
  if (value === undefined)
    throw new TypeError(`expected "${name}" to be a value or a function, got undefined`);
  return value;
};

const faultSchema = { ...chaosFields, error: required(errorSource) } satisfies Schema<ChaosFaultOptions>;
const latencySchema = {
  ...chaosFields,
  ms: required(nonNegativeNumber),
} satisfies Schema<ChaosLatencyOptions>;
const outcomeSchema = { ...chaosFields, value: required(anyValue) } satisfies Schema<
  ChaosOutcomeOptions<unknown>
>;
const behaviorSchema = {
  ...chaosFields,
  run: required(func<(context: Context) => unknown>()),
} satisfies Schema<ChaosBehaviorOptions>;

/**
 * The chaos strategies. Each returns a policy that composes in `pipeline(...)` like any other and
 * injects into a share `rate` of its calls (a call is injected when `random() < rate`; `seed` makes
 * the draws repeatable); `enabled` switches it on and off at run time. Calls not injected run as
 * is. Every factory throws a `TypeError` naming the first bad or unknown option. Each policy emits
 * the uniform events (`onFailure.handled` is `true` for a failure it injected) and
 * `onInjected({ policy, injected, attempt })`, before each injection.
 *
 * Place a chaos policy inside the policies under test, as the dependency would misbehave:
 * `pipeline(retry(), chaos.fault(...))` retries the injected faults.
 */
export const chaos = Object.freeze({
  /**
   * Fails a share `rate` of calls with `error`, without running the operation.
   *
   * @example
   * const flaky = chaos.fault({ rate: 0.3, seed: 7, error: Object.assign(new Error('Service Unavailable'), { status: 503 }) });
   * const policy = pipeline(retry({ clock }), flaky);
   */
  fault(options: ChaosFaultOptions): ChaosPolicy {
    const o = readOptions('chaos.fault options', options, faultSchema);
    return chaosPolicy(
      'fault',
      (_next, context, note) => {
        if (note !== undefined) note.handled = true;
        return produce(o.error, context).then((made) => failure(made.ok ? made.value : made.error));
      },
      o,
    );
  },

  /**
   * Delays a share `rate` of calls by `ms` on `clock` (a `FakeClock` in tests), then runs the
   * operation. The caller's abort (or an outer timeout's) ends the wait at once: the call rejects
   * with the signal's reason and the operation does not run. The delay does not stop at a
   * `deadline`: put a `timeout` outside to bound it.
   *
   * @example
   * const slow = chaos.latency({ rate: 0.1, ms: 2_000, clock });
   * const policy = pipeline(timeout(500, { clock }), slow); // one call in ten times out
   */
  latency(options: ChaosLatencyOptions): ChaosPolicy {
    const o = readOptions('chaos.latency options', options, latencySchema);
    return chaosPolicy(
      'latency',
      (next, context) => o.clock.sleep(o.ms, context.signal).then(() => next(context), failure),
      o,
    );
  },

  /**
   * Answers a share `rate` of calls with `value` instead of running the operation (a stale price, an
   * empty list, a response the service must cope with). A `Policy<V>`: in a pipeline the caller
   * sees `T | V`.
   *
   * @example
   * const empty = chaos.outcome({ rate: 0.5, seed: 1, value: [] as string[] });
   * const names = await empty.execute(() => loadNames()); // string[], empty on half the calls
   */
  outcome<V>(options: ChaosOutcomeOptions<V>): ChaosPolicy<V> {
    const o = readOptions('chaos.outcome options', options, outcomeSchema);
    // The value stands in for the operation's T: the policy's type tells the caller T | V.
    return chaosPolicy<V>(
      'outcome',
      (_next, context) => produce(o.value, context) as Promise<Outcome<never>>,
      o,
    );
  },

  /**
   * Runs `run(context)` before a share `rate` of calls, then the call. A throw or rejection from
   * `run` fails the call (the operation does not run); so does the caller's abort during it.
   *
   * @example
   * const dropConnections = chaos.behavior({ rate: 0.05, run: () => proxy.cut() });
   */
  behavior(options: ChaosBehaviorOptions): ChaosPolicy {
    const o = readOptions('chaos.behavior options', options, behaviorSchema);
    return chaosPolicy(
      'behavior',
      (next, context, note) =>
        invoke(o.run, context).then((ran) => {
          if (!ran.ok) {
            if (note !== undefined) note.handled = true;
            return failure(ran.error);
          }
          return contextAborted(context) ? failure(contextAbortReason(context)) : next(context);
        }),
      o,
    );
  },
});
