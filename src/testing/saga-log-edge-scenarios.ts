/**
 * The scenarios of {@link sagaLogConformance} at the edges of a log's contract: concurrent claims
 * and starts, bad input, and names, ids and JSON text that a careless store would mangle. Internal
 * to `bulwark/testing`.
 */
import type { ClaimedRun, SagaChange, SagaLease } from '../saga/store.js';
import { equal, fail, rejectsTypeError, type SagaLogScenario } from './saga-log-bench.js';

/** Names, ids, owners and step names that quoting, key building or encoding could get wrong. */
const hostile = ['a}b{c', 'quote\'"`', '😀', 'k'.repeat(1_000), ' spaced '];

/** An input to keep as given: JSON with escapes of U+0000 and of a lone surrogate, and 1e+21. */
const input = JSON.stringify({ s: 'a\u0000b\uD800', n: 1e21 });

/** An output to keep as given, where a JSON type would normalize: spacing, key order, number forms. */
const output = '{ "b" : [1.50, -0.0, 1E400], "a": "\\u00e9\\/" }';

/** Strings no name, id, owner or step may be. */
const badTexts = ['', '\uD800', 'a\u0000b'];

/** Values no `leaseMs` may be. */
const badLeaseMs = [0, 1.5, Number.NaN, -1, 2 ** 53];

/** The concurrency, bad input and hostile value scenarios, in the order they are registered. */
export const edgeScenarios: readonly SagaLogScenario[] = [
  {
    title: '20 concurrent claims of 10 expired runs: each run goes to exactly one claimant',
    async run(b) {
      await Promise.all(
        Array.from({ length: 10 }, (_, i) => b.started(b.lease('race-claim', `run-${i}`, 'a'))),
      );
      await b.expire();
      const claims = await Promise.all(
        Array.from({ length: 20 }, (_, i) => b.claim('race-claim', `claimant-${i}`, 'a concurrent claim')),
      );
      const taken = claims.flatMap((run, i) =>
        run === undefined ? [] : [{ id: run.id, owner: `claimant-${i}` }],
      );
      equal(taken.length, 10, 'concurrent claims that took a run');
      equal(new Set(taken.map((t) => t.id)).size, 10, 'distinct runs among them');
      for (const { id, owner } of taken)
        await b.wrote(
          b.lease('race-claim', id, owner),
          { status: 'completed' },
          `completion of ${id} by ${owner}`,
        );
    },
  },
  {
    title: '50 concurrent starts of one run by distinct owners: exactly one is accepted',
    async run(b) {
      const leases = Array.from({ length: 50 }, (_, i) => b.lease('race-start', 'run-1', `owner-${i}`));
      const answers = await Promise.all(leases.map((lease, i) => b.log.start(lease, `{"i":${i}}`)));
      equal(answers.filter((a) => a === true).length, 1, 'concurrent starts accepted');
      equal(answers.filter((a) => a === false).length, 49, 'concurrent starts refused');
      const winner = answers.indexOf(true);
      await b.answers(b.log.renew(leases[winner]!), true, "the accepted owner's renewal");
      await b.answers(b.log.renew(leases[(winner + 1) % 50]!), false, "a refused owner's renewal");
      await b.expire();
      const run = { id: 'run-1', input: `{"i":${winner}}`, status: 'running', steps: [] } as const;
      await b.claimedAs('race-start', 'b', run, 'claim of the raced run');
    },
  },
  {
    title: 'bad input rejects with a TypeError (never a synchronous throw) and changes nothing',
    async run(b) {
      const lease = b.lease('bad', 'run-1', 'a');
      const step: SagaChange = { step: 's', position: 0, state: 'running' };
      await b.started(lease);
      const refused = async (bad: SagaLease, what: string) => {
        await rejectsTypeError(() => b.log.start(bad, '{}'), `start with ${what}`);
        await rejectsTypeError(() => b.log.write(bad, step), `write with ${what}`);
        await rejectsTypeError(() => b.log.renew(bad), `renew with ${what}`);
      };
      for (const text of badTexts) {
        const shown = JSON.stringify(text);
        for (const field of ['name', 'id', 'owner'] as const)
          await refused({ ...lease, [field]: text }, `${field} ${shown}`);
        await rejectsTypeError(() => b.log.write(lease, { ...step, step: text }), `write of step ${shown}`);
        await rejectsTypeError(() => b.log.claim(text, 'b', b.leaseMs), `claim of saga ${shown}`);
        await rejectsTypeError(() => b.log.claim('bad', text, b.leaseMs), `claim for owner ${shown}`);
      }
      for (const ms of badLeaseMs) {
        await refused({ ...lease, leaseMs: ms }, `leaseMs ${ms}`);
        await rejectsTypeError(() => b.log.claim('bad', 'b', ms), `claim with leaseMs ${ms}`);
      }
      const badChanges: [string, unknown][] = [
        ...[-1, 1.5, 2 ** 31].map((position): [string, unknown] => [
          `position ${position}`,
          { ...step, position },
        ]),
        ['an unknown step state', { ...step, state: 'paused' }],
        ['an output that is not a string', { ...step, state: 'done', output: 42 }],
        ['an unknown status', { status: 'paused' }],
        ['status running', { status: 'running' }],
        ['a change that is not an object', null],
      ];
      for (const [what, change] of badChanges)
        await rejectsTypeError(() => b.log.write(lease, change as SagaChange), `write of ${what}`);
      await rejectsTypeError(
        () => b.log.start({ ...lease, id: 'run-2' }, 42 as never),
        'start with input 42',
      );
      for (const notLease of [null, undefined, 'run-1'] as never[]) {
        await rejectsTypeError(() => b.log.start(notLease, '{}'), `start with lease ${String(notLease)}`);
        await rejectsTypeError(() => b.log.write(notLease, step), `write with lease ${String(notLease)}`);
        await rejectsTypeError(() => b.log.renew(notLease), `renew with lease ${String(notLease)}`);
      }
      await b.expire();
      const run = { id: 'run-1', input: '{}', status: 'running', steps: [] } as const;
      await b.claimedAs('bad', 'b', run, 'claim after the bad calls');
      await b.unclaimable('bad', 'claim once the run was taken (no bad start recorded a run)');
    },
  },
  {
    title: 'hostile names, ids, owners and step names round-trip apart; JSON text is kept as given',
    async run(b) {
      const runOf = (id: string, step: string): ClaimedRun => {
        const steps = [{ step, position: 2 ** 31 - 1, state: 'done', output }] as const;
        return { id, input, status: 'running', steps };
      };
      for (const text of hostile) {
        for (const lease of [b.lease(text, 'run', text), b.lease('hostile', text, text)]) {
          await b.started(lease, input);
          const change: SagaChange = { step: text, position: 2 ** 31 - 1, state: 'done', output };
          await b.wrote(lease, change, `write under ${JSON.stringify(lease)}`);
        }
      }
      await b.expire();
      for (const text of hostile)
        await b.claimedAs(text, 'b', runOf('run', text), `claim of saga ${JSON.stringify(text)}`);
      const seen = new Set<string>();
      for (const _ of hostile) {
        const run = await b.claimed('hostile', 'b', 'claim of a run with a hostile id');
        if (!hostile.includes(run.id) || seen.has(run.id))
          fail(`claim of a hostile id: got an unknown or repeated id ${JSON.stringify(run.id)}`);
        seen.add(run.id);
        b.sameRun(run, runOf(run.id, run.id), `claimed run ${JSON.stringify(run.id)}`);
      }
      await b.unclaimable('hostile', 'claim once every hostile id was taken');
    },
  },
];
