/**
 * The scenarios of {@link sagaLogConformance} about a run's life: starting it once, who may write
 * to it, how its lease ends and is extended, how `claim` takes it over, and how a final status
 * finishes it. Internal to `bulwark/testing`.
 */
import type { SagaChange, SagaStatus } from '../saga/store.js';
import { equal, type SagaLogScenario, within } from './saga-log-bench.js';

/** The statuses that finish a run. */
const finals: readonly Exclude<SagaStatus, 'running' | 'compensating'>[] = [
  'completed',
  'compensated',
  'attention',
];

/** The run lifecycle scenarios, in the order they are registered. */
export const lifecycleScenarios: readonly SagaLogScenario[] = [
  {
    title: 'start records a run once: the same id is refused to anyone while kept, another saga may use it',
    async run(b) {
      within(b.log.timeoutMs, 0, Number.MAX_SAFE_INTEGER, 'timeoutMs');
      const first = b.lease('start', 'run-1', 'a');
      await b.started(first, '{"n":1}');
      await b.elapse(b.leaseMs / 2);
      await b.answers(b.log.start(first, '{"n":2}'), false, 'start of the same run again by its owner');
      await b.answers(
        b.log.start(b.lease('start', 'run-1', 'b'), '{"n":3}'),
        false,
        'start by another owner',
      );
      await b.started(b.lease('start-other', 'run-1', 'b'), '{"other":true}');
      await b.expire(b.leaseMs / 2); // the refused starts did not extend the first lease
      const run = { id: 'run-1', input: '{"n":1}', status: 'running', steps: [] } as const;
      await b.claimedAs('start', 'c', run, 'claim after the refused starts');
      await b.wrote(b.lease('start', 'run-1', 'c'), { status: 'completed' }, 'completion by the claimant');
      await b.answers(b.log.start(b.lease('start', 'run-1', 'd'), '{}'), false, 'start of a completed run');
    },
  },
  {
    title: 'write and renew are accepted from the owner; from another owner refused, changing nothing',
    async run(b) {
      const owner = b.lease('owners', 'run-1', 'a');
      const other = b.lease('owners', 'run-1', 'b', 10 * b.leaseMs);
      const unknown = b.lease('owners', 'never-started', 'a');
      await b.started(owner);
      await b.wrote(
        owner,
        { step: 'reserve', position: 0, state: 'done', output: '"r"' },
        "the owner's write",
      );
      await b.answers(b.log.renew(owner), true, "the owner's renewal");
      await b.elapse(b.leaseMs / 2);
      const changes: SagaChange[] = [
        { step: 'reserve', position: 0, state: 'failed', output: '"b"' },
        { step: 'charge', position: 1, state: 'running' },
        { status: 'compensating' },
        { status: 'completed' },
      ];
      for (const change of changes) {
        const what = JSON.stringify(change);
        await b.answers(b.log.write(other, change), false, `another owner's write of ${what}`);
        await b.answers(b.log.write(unknown, change), false, `a write of ${what} to an unknown run`);
      }
      await b.answers(b.log.renew(other), false, "another owner's renewal");
      await b.answers(b.log.renew(unknown), false, 'a renewal of an unknown run');
      await b.expire(b.leaseMs / 2); // the refused calls did not extend the owner's lease
      const steps = [{ step: 'reserve', position: 0, state: 'done', output: '"r"' }] as const;
      const run = { id: 'run-1', input: '{}', status: 'running', steps } as const;
      await b.claimedAs('owners', 'c', run, 'claim after the refused writes');
    },
  },
  {
    title:
      'a run is claimed only once its lease ended, with its input, status and last step states by position',
    async run(b) {
      const owner = b.lease('content', 'run-1', 'a');
      const input = '{"order":42,"items":["x","y"]}';
      await b.started(owner, input);
      const changes: SagaChange[] = [
        { step: 'ship', position: 2, state: 'running' },
        { step: 'reserve', position: 0, state: 'running' },
        { step: 'reserve', position: 0, state: 'done', output: '{"reservation":7}' },
        { step: 'charge', position: 1, state: 'done', output: '"ch_1"' },
        { step: 'notify', position: 3, state: 'skipped' },
        { step: 'ship', position: 2, state: 'failed' },
        { step: 'charge', position: 1, state: 'compensating' }, // keeps the output recorded with done
      ];
      for (const change of changes) await b.wrote(owner, change, `write of ${JSON.stringify(change)}`);
      await b.unclaimable('content', 'claim while the lease lasts');
      await b.elapse(b.leaseMs / 2);
      await b.unclaimable('content', 'claim halfway through the lease');
      await b.expire(b.leaseMs / 2);
      const steps = [
        { step: 'reserve', position: 0, state: 'done', output: '{"reservation":7}' },
        { step: 'charge', position: 1, state: 'compensating', output: '"ch_1"' },
        { step: 'ship', position: 2, state: 'failed', output: undefined },
        { step: 'notify', position: 3, state: 'skipped', output: undefined },
      ] as const;
      await b.claimedAs(
        'content',
        'b',
        { id: 'run-1', input, status: 'running', steps },
        'claim after the lease',
      );
    },
  },
  {
    title:
      "a claim takes the run over for the claim's lease: the former owner is refused, the claimant accepted",
    async run(b) {
      const former = b.lease('takeover', 'run-1', 'a');
      const claimant = b.lease('takeover', 'run-1', 'b');
      await b.started(former);
      await b.wrote(
        former,
        { step: 'reserve', position: 0, state: 'done', output: '1' },
        "the owner's write",
      );
      await b.expire();
      const { id } = await b.claimed('takeover', 'b', 'takeover', 2 * b.leaseMs);
      equal(id, 'run-1', 'id of the claimed run');
      const late: SagaChange = { step: 'charge', position: 1, state: 'running' };
      await b.answers(b.log.write(former, late), false, "the former owner's write");
      await b.answers(b.log.write(former, { status: 'completed' }), false, "the former owner's completion");
      await b.answers(b.log.renew(former), false, "the former owner's renewal");
      await b.unclaimable('takeover', 'claim right after the takeover');
      await b.expire(); // longer than the first lease, within the claim's
      await b.unclaimable('takeover', "claim within the claim's lease of 2 × leaseMs");
      const undo: SagaChange = { step: 'reserve', position: 0, state: 'compensating' };
      await b.wrote(claimant, undo, "the claimant's write");
      await b.answers(b.log.renew(claimant), true, "the claimant's renewal");
      await b.expire();
      const steps = [{ step: 'reserve', position: 0, state: 'compensating', output: '1' }] as const;
      const run = { id: 'run-1', input: '{}', status: 'running', steps } as const;
      await b.claimedAs('takeover', 'c', run, "claim once the claimant's lease ended");
    },
  },
  {
    title:
      'each accepted write or renewal extends the lease by its leaseMs: a run kept written is never claimed',
    async run(b) {
      const owner = b.lease('extend', 'run-1', 'a');
      await b.started(owner);
      for (let i = 1; i <= 3; i++) {
        await b.elapse(b.leaseMs / 2);
        await b.unclaimable('extend', `claim ${i} half leases in, with a write or renewal every half lease`);
        if (i % 2 === 1) await b.wrote(owner, { step: 's', position: 0, state: 'running' }, `write ${i}`);
        else await b.answers(b.log.renew(owner), true, `renewal ${i}`);
      }
      await b.answers(b.log.renew(b.lease('extend', 'run-1', 'a', 3 * b.leaseMs)), true, 'a longer renewal');
      await b.expire();
      await b.unclaimable('extend', 'claim within a renewal of 3 × leaseMs');
      await b.expire(2 * b.leaseMs);
      equal((await b.claimed('extend', 'b', 'claim after the longer renewal')).id, 'run-1', 'id of the run');
    },
  },
  {
    title: 'the owner may still write and renew after its lease ended, as long as nobody claimed the run',
    async run(b) {
      const owner = b.lease('late', 'run-1', 'a');
      await b.started(owner);
      await b.expire();
      const change: SagaChange = { step: 's', position: 0, state: 'done', output: '"late"' };
      await b.wrote(owner, change, 'a write after the lease ended');
      await b.unclaimable('late', 'claim after the late write (it extended the lease)');
      await b.expire();
      await b.answers(b.log.renew(owner), true, 'a renewal after the lease ended');
      await b.unclaimable('late', 'claim after the late renewal');
      await b.expire();
      const steps = [{ step: 's', position: 0, state: 'done', output: '"late"' }] as const;
      const run = { id: 'run-1', input: '{}', status: 'running', steps } as const;
      await b.claimedAs('late', 'b', run, 'claim once the late lease ended');
    },
  },
  {
    title: 'compensating keeps a run claimable; completed, compensated and attention finish it for good',
    async run(b) {
      const undoing = b.lease('finish', 'undoing', 'a');
      await b.started(undoing);
      await b.wrote(undoing, { status: 'compensating' }, 'status compensating');
      await b.wrote(undoing, { step: 's', position: 0, state: 'compensating' }, 'a write while compensating');
      for (const status of finals) {
        const owner = b.lease('finish', status, 'a');
        await b.started(owner);
        await b.wrote(
          owner,
          { step: 's', position: 0, state: 'done', output: '1' },
          `a write before ${status}`,
        );
        await b.wrote(owner, { status }, `status ${status}`);
        const undo: SagaChange = { step: 's', position: 0, state: 'compensating' };
        await b.answers(b.log.write(owner, undo), false, `the owner's write after ${status}`);
        await b.answers(
          b.log.write(owner, { status: 'compensating' }),
          false,
          `a status change after ${status}`,
        );
        await b.answers(b.log.write(owner, { status }), false, `status ${status} again`);
        await b.answers(b.log.renew(owner), false, `the owner's renewal after ${status}`);
        await b.answers(
          b.log.start(b.lease('finish', status, 'b'), '{}'),
          false,
          `start of a run in ${status}`,
        );
      }
      await b.expire();
      const steps = [{ step: 's', position: 0, state: 'compensating', output: undefined }] as const;
      const run = { id: 'undoing', input: '{}', status: 'compensating', steps } as const;
      await b.claimedAs('finish', 'b', run, 'claim of the compensating run');
      await b.unclaimable('finish', 'claim once only finished runs are left');
      await b.wrote(
        b.lease('finish', 'undoing', 'b'),
        { status: 'compensated' },
        "the claimant's compensated",
      );
      await b.expire();
      await b.unclaimable('finish', 'claim of finished runs whose leases ended');
    },
  },
  {
    title: 'claim takes the run whose lease ended first, only of its saga, and nothing when none is left',
    async run(b) {
      await b.started(b.lease('order-other', 'other', 'a'));
      await b.started(b.lease('order', 'long', 'a', 2 * b.leaseMs));
      await b.started(b.lease('order', 'short', 'a'));
      await b.expire(2 * b.leaseMs);
      equal((await b.claimed('order', 'b', 'first claim')).id, 'short', 'first claimed run');
      equal((await b.claimed('order', 'b', 'second claim')).id, 'long', 'second claimed run');
      await b.unclaimable('order', 'third claim');
      equal((await b.claimed('order-other', 'b', 'claim of the other saga')).id, 'other', 'its run');
      await b.unclaimable('order-none', 'claim of a saga with no runs');
    },
  },
];
