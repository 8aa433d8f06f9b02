/**
 * The policy contract suite: one set of scenarios every {@link Policy} must pass, the built-in ones
 * and your own. Each scenario runs three ways: through the policy's own `execute` (its fast path),
 * as `pipeline(policy)`, and as the inner layer of `pipeline(passthrough, policy)` (its composed
 * step, with a context handed down by an outer policy).
 *
 * It imports no test framework: pass your runner's `describe` and `it` (vitest, jest, node:test and
 * mocha all fit). Failures throw plain `Error`s whose message says what broke. It needs Node's
 * `node:events` (to count a signal's listeners), loaded only when a scenario runs.
 *
 * @example
 * import { describe, it } from 'vitest';
 * import { isRetriesExhaustedError, retry, timeout } from 'bulwark';
 * import { policyConformance } from 'bulwark/testing';
 *
 * policyConformance('timeout', ({ clock }) => ({ policy: timeout(1_000, { clock }) }), { describe, it });
 * policyConformance(
 *   'retry',
 *   ({ clock }) => ({
 *     policy: retry({ clock }),
 *     unwrap: (error) => (isRetriesExhaustedError(error) ? error.cause : error),
 *     enforcesDeadline: false, // it stops retrying at a deadline, it does not cut an attempt short
 *   }),
 *   { describe, it },
 * );
 */
import { FakeClock } from './fake-clock.js';
import { Bench, type MakePolicy, ways } from './policy-bench.js';
import { capabilitiesOf, scenarios } from './policy-scenarios.js';
import type { ConformanceRunner } from './rate-limit-conformance.js';

export type { MakePolicy, PolicyFixture, PolicyUnderTest } from './policy-bench.js';

/** Where each scenario's clock starts (an epoch-like time, so no policy mistakes it for "unset"). */
const startMs = 1_000_000;

/**
 * Registers the policy contract scenarios for `name` under `runner.describe`, one group per way
 * of calling the policy. `make` builds a fresh policy on the clock it is given, once per scenario
 * (and once at registration, to see which optional scenarios apply), and declares what the policy
 * does differently from the plain contract: `unwrap` for a policy that wraps failures (retry),
 * `recovers` for one that answers them with a value (fallback), `enforcesDeadline: false` for one
 * that leaves deadlines to the operation, `refuse` for one that can refuse calls.
 *
 * Scenarios: an already-aborted signal rejects with its reason and the operation never runs; a
 * `signal` that is not an `AbortSignal` and an operation that is not a function are `TypeError`
 * rejections (never synchronous throws), nothing runs and the next call is served; the operation's
 * value comes back; a synchronous throw and an asynchronous rejection come back as the operation's
 * error; an abort mid-call reaches the operation's signal at once and the call rejects with the
 * caller's reason; a caller's deadline reaches the operation and ends the call by then; no call
 * leaves an abort listener on the caller's signal or a live timer on the clock (one that would keep
 * a process alive: a timer released with `Clock.keepAlive(handle, false)` is not live).
 *
 * Scenarios that apply only to some policies: with a `refuse`, a refused call rejects without
 * running the operation and leaves nothing behind; with `on*` subscriptions, a listener that
 * throws on every one of them never breaks a call; with `onSuccess`/`onFailure` (the events every
 * built-in policy emits), each fires once per call with exactly `{ policy, durationMs }` and
 * `{ policy, error, kind, durationMs, handled }` (`durationMs` the call's time on the clock,
 * `kind` = `classify(error)`), and with a `refuse`, `onRejected` once with `{ policy, reason, error }`.
 */
export function policyConformance(name: string, make: MakePolicy, runner: ConformanceRunner): void {
  const capabilities = capabilitiesOf(make({ clock: new FakeClock(startMs), operation: () => undefined }));
  runner.describe(`policy conformance: ${name}`, () => {
    for (const way of ways) {
      runner.describe(way.name, () => {
        for (const scenario of scenarios) {
          if (scenario.applies !== undefined && !scenario.applies(capabilities)) continue;
          runner.it(scenario.name, () => scenario.run(new Bench(make, way, new FakeClock(startMs))));
        }
      });
    }
  });
}
