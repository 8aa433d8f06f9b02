/**
 * The saga log conformance suite catches broken logs: each flaw below, wrapped around the memory log
 * (which passes), fails the scenario that guards against it with a message that says what broke,
 * and every failure is the suite's own `Error` (never a crash of the suite).
 */
import { describe, expect, it } from 'vitest';
import { memorySagaLog } from '../../src/saga/memory-store.js';
import type { ClaimedRun, SagaLease, SagaLog } from '../../src/saga/store.js';
import { FakeClock } from '../../src/testing/fake-clock.js';
import { sagaLogConformance } from '../../src/testing/saga-log-conformance.js';

/** What a flaw replaces in the memory log, given the log it wraps. */
type Flaw = (inner: SagaLog) => Partial<Omit<SagaLog, 'timeoutMs'>>;

/** Runs every scenario of the suite against the memory log with `flaw`: the failures by title. */
async function failuresOf(flaw: Flaw): Promise<Map<string, unknown>> {
  const bodies: [string, () => Promise<void>][] = [];
  const fixture = () => {
    const clock = new FakeClock(1_000_000);
    const inner = memorySagaLog({ clock });
    const log: SagaLog = {
      timeoutMs: inner.timeoutMs,
      start: (lease, input) => inner.start(lease, input),
      write: (lease, change) => inner.write(lease, change),
      renew: (lease) => inner.renew(lease),
      claim: (name, owner, leaseMs) => inner.claim(name, owner, leaseMs),
      ...flaw(inner),
    };
    return { log, elapse: (ms: number) => clock.advance(ms), slackMs: 0 };
  };
  sagaLogConformance('flawed', fixture, {
    describe: (_name, body) => body(),
    it: (title, body) => bodies.push([title, body]),
  });
  const failures = new Map<string, unknown>();
  for (const [title, body] of bodies) await body().catch((error: unknown) => failures.set(title, error));
  expect(bodies.length).toBe(12);
  return failures;
}

/** Writes as whoever holds the run, whatever the lease says. */
const ignoreOwner: Flaw = (inner) => {
  const owners = new Map<string, string>();
  const key = (name: string, id: string) => JSON.stringify([name, id]);
  const asHolder = (lease: SagaLease): SagaLease => ({
    ...lease,
    owner: owners.get(key(lease.name, lease.id)) ?? lease.owner,
  });
  return {
    async start(lease, input) {
      const started = await inner.start(lease, input);
      if (started) owners.set(key(lease.name, lease.id), lease.owner);
      return started;
    },
    write: async (lease, change) => inner.write(asHolder(lease), change),
    renew: async (lease) => inner.renew(asHolder(lease)),
    async claim(name, owner, leaseMs) {
      const run = await inner.claim(name, owner, leaseMs);
      if (run !== undefined) owners.set(key(name, run.id), owner);
      return run;
    },
  };
};

/** Claims as the memory log does, then returns `alter(run)` instead of the run taken. */
const claimedRunsAs =
  (alter: (run: ClaimedRun) => ClaimedRun): Flaw =>
  (inner) => ({
    claim: async (name, owner, leaseMs) => {
      const run = await inner.claim(name, owner, leaseMs);
      return run && alter(run);
    },
  });

/** Each flaw: what it is, the flaw, the scenario that must catch it, what the failure must say. */
const flaws: [string, Flaw, RegExp, RegExp][] = [
  [
    'write and renew ignore the owner',
    ignoreOwner,
    /from another owner refused/,
    /another owner's write of .*: expected false, got true/,
  ],
  [
    'start of a known id answers true',
    (inner) => ({ start: async (lease, input) => (await inner.start(lease, input)) || true }),
    /start records a run once/,
    /start of the same run again by its owner: expected false, got true/,
  ],
  [
    'renew extends the lease by 1 ms',
    (inner) => ({ renew: (lease) => inner.renew({ ...lease, leaseMs: 1 }) }),
    /each accepted write or renewal extends the lease/,
    /claim 3 half leases in, .*: expected no claimable run of "extend", got/,
  ],
  [
    'claim returns the steps in reverse',
    claimedRunsAs((run) => ({ ...run, steps: [...run.steps].reverse() })),
    /with its input, status and last step states by position/,
    /claim after the lease: steps must be ordered by position/,
  ],
  [
    'claim answers null for no run',
    (inner) => ({
      claim: async (name, owner, leaseMs) => (await inner.claim(name, owner, leaseMs)) ?? (null as never),
    }),
    /claim takes the run whose lease ended first/,
    /expected a claimed run or undefined, got null/,
  ],
  [
    'claim drops an output recorded before the last state',
    claimedRunsAs((run) => ({
      ...run,
      steps: run.steps.map((s) => ({ ...s, output: s.state === 'done' ? s.output : undefined })),
    })),
    /with its input, status and last step states by position/,
    /\["charge",1,"compensating",null\]/,
  ],
  [
    'claim reports compensating runs as running',
    claimedRunsAs((run) => ({ ...run, status: 'running' })),
    /compensating keeps a run claimable/,
    /claim of the compensating run: expected .*"status":"compensating".*, got .*"status":"running"/,
  ],
  [
    'write stores an output as a JSON type would',
    (inner) => ({
      write: (lease, change) =>
        inner.write(
          lease,
          'output' in change ? { ...change, output: JSON.stringify(JSON.parse(change.output!)) } : change,
        ),
    }),
    /JSON text is kept as given/,
    /claim of saga "a}b{c": expected .*1E400.*, got .*\[1\.5,0,null\]/,
  ],
  [
    'write throws bad input synchronously',
    (inner) => ({
      write: (lease, change) => {
        if (lease === null || typeof lease !== 'object') throw new TypeError('not a lease');
        return inner.write(lease, change);
      },
    }),
    /bad input rejects with a TypeError/,
    /write with lease null: threw TypeError: not a lease synchronously instead of rejecting/,
  ],
];

describe('sagaLogConformance catches broken logs', () => {
  it('passes the memory log unchanged (the harness below runs every scenario)', async () => {
    expect([...(await failuresOf(() => ({}))).entries()]).toEqual([]);
  });

  it.each(flaws)('a log whose %s fails its scenario', async (_flaw, flaw, title, message) => {
    const failures = await failuresOf(flaw);
    const caught = [...failures].find(([failed]) => title.test(failed));
    expect(caught, `failed scenarios: ${[...failures.keys()].join('; ')}`).toBeDefined();
    expect(caught![1]).toBeInstanceOf(Error);
    expect((caught![1] as Error).message).toMatch(/^saga log conformance: /);
    expect((caught![1] as Error).message).toMatch(message);
    for (const error of failures.values()) expect(String(error)).toMatch(/^Error: saga log conformance: /);
  });
});
