/**
 * What the scenarios of {@link sagaLogConformance} share: the fixture a scenario runs against, and
 * a bench of helpers on it whose failures name the suite and say what broke. Internal to
 * `bulwark/testing` (the fixture type is exported from `saga-log-conformance.ts`).
 */
import type { ClaimedRun, SagaChange, SagaLease, SagaLog } from '../saga/store.js';
import { conformanceChecks } from './conformance-runner.js';

/** What one saga log scenario runs against: a fresh log and a way to let time pass on its clock. */
export interface SagaLogFixture {
  /** A log with no runs for the saga names the suite uses (e.g. a fresh schema). */
  readonly log: SagaLog;
  /** Lets at least `ms` pass on the log's clock (`clock.advance(ms)`, or a real sleep). */
  elapse(ms: number): Promise<void>;
  /**
   * How much log time may pass beyond what the suite asked for while a scenario runs (round trips,
   * sleep overshoot): 0 on a fake clock. The suite's leases are at least 4 × this plus 200 ms, so a
   * real log's lease never ends by accident mid-scenario.
   */
  readonly slackMs: number;
  /** Called after the scenario, pass or fail. */
  close?(): void | Promise<void>;
}

/** The suite's assertions: plain `Error`s prefixed with `saga log conformance`. */
export const { fail, equal, within, rejectsTypeError } = conformanceChecks('saga log conformance');

/** One scenario: its title and its check, run on a fresh bench. */
export interface SagaLogScenario {
  readonly title: string;
  run(bench: SagaLogBench): Promise<void>;
}

const claimable = new Set(['running', 'compensating']);

/** A claimed run as one line of JSON (an absent output as `null`), for comparison and messages. */
function runText(run: ClaimedRun): string {
  const steps = run.steps.map((s) => [s.step, s.position, s.state, s.output ?? null]);
  return JSON.stringify({ id: run.id, input: run.input, status: run.status, steps });
}

/** Fails unless `run` is a well-formed claimed run: steps ordered by position, outputs strings or undefined. */
function checkRun(run: ClaimedRun, what: string): void {
  if (run === null || typeof run !== 'object')
    fail(`${what}: expected a claimed run or undefined, got ${String(run)}`);
  if (typeof run.id !== 'string' || typeof run.input !== 'string')
    fail(`${what}: a run's id and input must be strings, got ${String(run.id)} and ${String(run.input)}`);
  if (!claimable.has(run.status))
    fail(`${what}: a claimed run's status must be running or compensating, got ${String(run.status)}`);
  if (!Array.isArray(run.steps)) fail(`${what}: a run's steps must be an array, got ${String(run.steps)}`);
  for (const [i, step] of run.steps.entries()) {
    if (step === null || typeof step !== 'object')
      fail(`${what}: step ${i} must be an object, got ${String(step)}`);
    if (typeof step.step !== 'string' || !Number.isInteger(step.position) || typeof step.state !== 'string')
      fail(`${what}: step ${i} must have a string step, an integer position and a string state`);
    if (step.output !== undefined && typeof step.output !== 'string')
      fail(`${what}: step ${i}'s output must be a string or undefined, got ${String(step.output)}`);
    if (i > 0 && run.steps[i - 1]!.position > step.position)
      fail(`${what}: steps must be ordered by position, got ${runText(run)}`);
  }
}

/** A fixture with the scenario's lease length and helpers that fail with a message. */
export class SagaLogBench {
  /** How long the scenario's leases last: 4 × slack + 200 ms, rounded up to an even integer. */
  readonly leaseMs: number;

  constructor(readonly fixture: SagaLogFixture) {
    this.leaseMs = 2 * Math.ceil(2 * fixture.slackMs + 100);
  }

  /** The log under test. */
  get log(): SagaLog {
    return this.fixture.log;
  }

  /** A lease on run `id` of saga `name` for `owner`, lasting `leaseMs` (default the scenario's). */
  lease(name: string, id: string, owner: string, leaseMs = this.leaseMs): SagaLease {
    return { name, id, owner, leaseMs };
  }

  /** Lets `ms` pass on the log's clock. */
  elapse(ms: number): Promise<void> {
    return this.fixture.elapse(ms);
  }

  /** Lets a lease of `leaseMs` (default the scenario's) taken or extended now end, with the slack. */
  expire(leaseMs = this.leaseMs): Promise<void> {
    return this.fixture.elapse(leaseMs + this.fixture.slackMs + 1);
  }

  /** Fails unless `call` resolves `expected` (true: accepted, false: refused). */
  async answers(call: Promise<boolean>, expected: boolean, what: string): Promise<void> {
    equal(await call, expected, what);
  }

  /** Starts the run of `lease`, failing unless the log accepts it. */
  started(lease: SagaLease, input = '{}'): Promise<void> {
    return this.answers(this.log.start(lease, input), true, `start of ${JSON.stringify(lease.id)}`);
  }

  /** Writes `change` under `lease`, failing unless the log accepts it. */
  wrote(lease: SagaLease, change: SagaChange, what: string): Promise<void> {
    return this.answers(this.log.write(lease, change), true, what);
  }

  /** Claims a run of saga `name` for `owner` (for `leaseMs`, default the scenario's), checking its form. */
  async claim(
    name: string,
    owner: string,
    what: string,
    leaseMs = this.leaseMs,
  ): Promise<ClaimedRun | undefined> {
    const run = await this.log.claim(name, owner, leaseMs);
    if (run !== undefined) checkRun(run, what);
    return run;
  }

  /** Claims a run of saga `name`, failing when there is none. */
  async claimed(name: string, owner: string, what: string, leaseMs = this.leaseMs): Promise<ClaimedRun> {
    const run = await this.claim(name, owner, what, leaseMs);
    return run ?? fail(`${what}: expected a claimed run of ${JSON.stringify(name)}, got none`);
  }

  /** Fails unless a claim of saga `name` (by a probing owner) finds nothing to take. */
  async unclaimable(name: string, what: string): Promise<void> {
    const run = await this.claim(name, 'probe', what);
    if (run !== undefined)
      fail(`${what}: expected no claimable run of ${JSON.stringify(name)}, got ${runText(run)}`);
  }

  /** Fails unless `actual` is `expected`, field for field and byte for byte. */
  sameRun(actual: ClaimedRun, expected: ClaimedRun, what: string): void {
    if (runText(actual) !== runText(expected))
      fail(`${what}: expected ${runText(expected)}, got ${runText(actual)}`);
  }

  /** Claims a run of saga `name` for `owner` and fails unless it is `expected`. */
  async claimedAs(name: string, owner: string, expected: ClaimedRun, what: string): Promise<void> {
    this.sameRun(await this.claimed(name, owner, what), expected, what);
  }
}
