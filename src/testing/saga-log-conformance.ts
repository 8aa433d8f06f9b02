/**
 * The saga log conformance suite: one set of scenarios every `SagaLog` must pass unchanged
 * (the in-memory log on a `FakeClock`, the PostgreSQL log on its server's clock, PGlite, or your
 * own). It checks the contract of `saga/store.ts`: a run id started once, only the lease's owner
 * writes, leases that end and are extended by each accepted call, claims that take a run over from
 * a stalled owner (each run to exactly one claimant), final statuses that end a run for good, and
 * names, ids and JSON text kept as given.
 *
 * It imports no test framework: pass your runner's `describe` and `it`. Failures throw plain
 * `Error`s, prefixed `saga log conformance`, that say what broke.
 *
 * @example
 * import { describe, it } from 'vitest';
 * import { memorySagaLog } from 'bulwark';
 * import { FakeClock, sagaLogConformance } from 'bulwark/testing';
 *
 * sagaLogConformance('memory log', () => {
 *   const clock = new FakeClock(1_000_000);
 *   return { log: memorySagaLog({ clock }), elapse: (ms) => clock.advance(ms), slackMs: 0 };
 * }, { describe, it });
 */
import { type ConformanceRunner, scenarios } from './conformance-runner.js';
import { SagaLogBench, type SagaLogFixture } from './saga-log-bench.js';
import { edgeScenarios } from './saga-log-edge-scenarios.js';
import { lifecycleScenarios } from './saga-log-scenarios.js';

export type { SagaLogFixture } from './saga-log-bench.js';

/**
 * Registers the saga log scenarios for `name` under `runner.describe`. `fixture` is called once per
 * scenario and must return a log with no runs of the saga names the suite uses. The suite's leases
 * last 4 × `slackMs` + 200 ms (rounded up to even), and a scenario waits for one to end with
 * `elapse(leaseMs + slackMs + 1)`.
 *
 * Scenarios: `start` records a run once (refused for the same name and id to anyone, while running
 * or once completed; the same id under another name is another run); `write` and `renew` are
 * accepted from the owner and refused, changing nothing, from anyone else or for an unknown run; a
 * run is claimed only once its lease ended, with its input, status, and steps by position with
 * their last state and output (a later state without output keeps the output); a claim takes the
 * run for the claim's `leaseMs` and refuses the former owner; each accepted write or renewal
 * extends the lease by its `leaseMs`; an owner may still write after its lease ended while nobody
 * claimed the run; `compensating` keeps a run claimable, `completed`, `compensated` and
 * `attention` end it (never claimed, every write and renewal refused, its id still taken); claim
 * takes the run whose lease ended first, only of its saga; 20 concurrent claims of 10 runs take
 * each exactly once; of 50 concurrent starts of one id exactly one is accepted; bad input is a
 * `TypeError` rejection (never a synchronous throw) that changes nothing; hostile names, ids,
 * owners and step names, and JSON text with escapes, round-trip exactly.
 */
export function sagaLogConformance(
  name: string,
  fixture: () => SagaLogFixture | Promise<SagaLogFixture>,
  runner: ConformanceRunner,
): void {
  const scenario = scenarios(runner, fixture);
  runner.describe(`saga log conformance: ${name}`, () => {
    for (const { title, run } of [...lifecycleScenarios, ...edgeScenarios])
      scenario(title, (f) => run(new SagaLogBench(f)));
  });
}
