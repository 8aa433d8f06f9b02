/**
 * recover() on runs a crashed process left in the memory log, written by hand as that process
 * would have left them: each state a crash can leave, and two recoveries at once.
 */
import { describe, expect, it } from 'vitest';
import { pipeline } from '../core/pipeline.js';
import { FakeClock } from '../testing/fake-clock.js';
import { timeout } from '../timeout/timeout.js';
import { memorySagaLog } from './memory-store.js';
import { saga } from './saga.js';
import type { SagaLog, StepState } from './store.js';

const once = pipeline(timeout(60_000));
const leaseMs = 1_000;

/** A log holding run `id` of saga 'order' as a dead owner left it, its lease ended. */
async function crashed(
  clock: FakeClock,
  runs: Record<string, readonly (readonly [step: string, state: StepState, output?: unknown])[]>,
  options: { input?: string; status?: 'compensating'; log?: SagaLog } = {},
) {
  const log = options.log ?? memorySagaLog({ clock });
  for (const [id, steps] of Object.entries(runs)) {
    const lease = { name: 'order', id, owner: 'dead', leaseMs };
    expect(await log.start(lease, options.input ?? JSON.stringify({ order: id }))).toBe(true);
    for (const [position, [step, state, output]] of steps.entries())
      await log.write(lease, {
        step,
        position,
        state,
        output: output === undefined ? undefined : JSON.stringify(output),
      });
    if (options.status) await log.write(lease, { status: options.status });
  }
  await clock.advance(leaseMs);
  return log;
}

/** The three-step order saga over `log`, its undos listed in `undone`. */
function orderSaga(log: SagaLog, clock: FakeClock, failing: readonly string[] = []) {
  const undone: string[] = [];
  const step = (name: string) => ({
    name,
    run: () => name,
    compensate: ({
      input,
      output,
      idempotencyKey,
    }: {
      input: unknown;
      output: unknown;
      idempotencyKey: string;
    }) => {
      undone.push(`${idempotencyKey} ${JSON.stringify(input)} ${JSON.stringify(output)}`);
      if (failing.includes(name)) throw new Error(`cannot undo ${name}`);
    },
  });
  const order = saga<{ order: string }>({ name: 'order', log, clock, leaseMs, compensation: once })
    .step(step('pay'))
    .step({ ...step('tip'), optional: true })
    .step(step('ship'));
  return { order, undone };
}

describe('recover()', () => {
  it('compensates the completed steps of a run stopped between steps, newest first, with their outputs and keys', async () => {
    const clock = new FakeClock();
    const log = await crashed(clock, {
      o1: [
        ['pay', 'done', { charge: 'c1' }],
        ['tip', 'done', 5],
      ],
    });
    const { order, undone } = orderSaga(log, clock);
    expect(await order.recover()).toEqual({
      recovered: ['o1'],
      completed: [],
      compensated: ['o1'],
      needsAttention: [],
    });
    expect(undone).toEqual(['o1:tip {"order":"o1"} 5', 'o1:pay {"order":"o1"} {"charge":"c1"}']);
    await clock.advance(leaseMs);
    expect((await order.recover()).recovered).toEqual([]);
  });

  it('records a run whose every step went through as completed, undoing nothing (a skipped optional step counts)', async () => {
    const clock = new FakeClock();
    const log = await crashed(clock, {
      o1: [
        ['pay', 'done', 1],
        ['tip', 'skipped'],
        ['ship', 'done', 2],
      ],
    });
    const { order, undone } = orderSaga(log, clock);
    expect(await order.recover()).toEqual({
      recovered: ['o1'],
      completed: ['o1'],
      compensated: [],
      needsAttention: [],
    });
    expect(undone).toEqual([]);
    await clock.advance(leaseMs);
    expect((await order.recover()).recovered).toEqual([]); // recorded completed: nothing left
  });

  it('a step recorded running is in doubt: the others are undone, the run needs attention and is not taken again', async () => {
    const clock = new FakeClock();
    const log = await crashed(clock, {
      o1: [
        ['pay', 'done', 1],
        ['tip', 'skipped'],
        ['ship', 'running'],
      ],
    });
    const { order, undone } = orderSaga(log, clock);
    expect(await order.recover()).toEqual({
      recovered: ['o1'],
      completed: [],
      compensated: [],
      needsAttention: [{ sagaId: 'o1', step: 'ship', reason: 'step-in-doubt' }],
    });
    expect(undone).toEqual(['o1:pay {"order":"o1"} 1']);
    await clock.advance(leaseMs);
    expect((await order.recover()).recovered).toEqual([]);
  });

  it('a run stopped mid-compensation: what was compensated is skipped, what was compensating is undone again', async () => {
    const clock = new FakeClock();
    const log = await crashed(
      clock,
      {
        o1: [
          ['pay', 'compensating', 1],
          ['tip', 'compensated', 2],
          ['ship', 'failed'],
        ],
      },
      { status: 'compensating' },
    );
    const { order, undone } = orderSaga(log, clock);
    expect((await order.recover()).compensated).toEqual(['o1']);
    expect(undone).toEqual(['o1:pay {"order":"o1"} 1']);
  });

  it('a run stopped before its first step ends compensated with nothing to undo', async () => {
    const clock = new FakeClock();
    const log = await crashed(clock, { o1: [] });
    const { order, undone } = orderSaga(log, clock);
    expect((await order.recover()).compensated).toEqual(['o1']);
    expect(undone).toEqual([]);
  });

  it('a step the saga no longer defines needs attention; the known ones are undone', async () => {
    const clock = new FakeClock();
    const log = await crashed(clock, {
      o1: [
        ['pay', 'done', 1],
        ['gift-wrap', 'done', 2],
      ],
    });
    const { order, undone } = orderSaga(log, clock);
    expect((await order.recover()).needsAttention).toEqual([
      { sagaId: 'o1', step: 'gift-wrap', reason: 'unknown-step' },
    ]);
    expect(undone).toEqual(['o1:pay {"order":"o1"} 1']);
  });

  it('a run whose input is not JSON needs attention, undoing nothing', async () => {
    const clock = new FakeClock();
    const log = await crashed(clock, { o1: [['pay', 'done', 1]] }, { input: '{oops' });
    const { order, undone } = orderSaga(log, clock);
    const { needsAttention, recovered } = await order.recover();
    expect(recovered).toEqual(['o1']);
    expect(needsAttention).toMatchObject([{ sagaId: 'o1', step: undefined, reason: 'unreadable' }]);
    expect(needsAttention[0]?.error).toBeInstanceOf(SyntaxError);
    expect(undone).toEqual([]);
    await clock.advance(leaseMs);
    expect((await order.recover()).recovered).toEqual([]);
  });

  it('a compensation that fails is reported; the others still run; a later recover() tries it again', async () => {
    const clock = new FakeClock();
    const log = await crashed(clock, {
      o1: [
        ['pay', 'done', 1],
        ['tip', 'done', 2],
      ],
    });
    const failing = orderSaga(log, clock, ['tip']);
    const first = await failing.order.recover();
    expect(first.needsAttention).toMatchObject([
      { sagaId: 'o1', step: 'tip', reason: 'compensation-failed' },
    ]);
    expect(failing.undone).toHaveLength(2);
    const fixed = orderSaga(log, clock);
    expect((await fixed.order.recover()).recovered).toEqual([]); // its lease has not lapsed
    await clock.advance(leaseMs);
    expect((await fixed.order.recover()).compensated).toEqual(['o1']);
    expect(fixed.undone).toEqual(['o1:tip {"order":"o1"} 2']);
  });

  it('leaves alone a run whose lease has not ended, and runs of other sagas', async () => {
    const clock = new FakeClock();
    const log = memorySagaLog({ clock });
    await log.start({ name: 'order', id: 'live', owner: 'alive', leaseMs: 10 * leaseMs }, '{}');
    await log.start({ name: 'refund', id: 'other', owner: 'dead', leaseMs }, '{}');
    await clock.advance(2 * leaseMs);
    const { order } = orderSaga(log, clock);
    expect((await order.recover()).recovered).toEqual([]);
  });

  it('two recoveries at once each take different runs: every step undone exactly once', async () => {
    const clock = new FakeClock();
    const runs = Object.fromEntries(
      Array.from({ length: 20 }, (_, i) => [
        `o${i}`,
        [['pay', 'done', i] as const, ['tip', 'done', i] as const],
      ]),
    );
    const log = await crashed(clock, runs);
    const a = orderSaga(log, clock);
    const b = orderSaga(log, clock);
    const [ra, rb] = await Promise.all([a.order.recover(), b.order.recover()]);
    expect([...ra.compensated, ...rb.compensated].sort()).toEqual(Object.keys(runs).sort());
    expect(ra.recovered.filter((id) => rb.recovered.includes(id))).toEqual([]);
    const undone = [...a.undone, ...b.undone];
    expect(undone).toHaveLength(40);
    expect(new Set(undone.map((u) => u.split(' ')[0])).size).toBe(40);
  });

  it('an aborted signal claims nothing; a bad option is a TypeError', async () => {
    const clock = new FakeClock();
    const log = await crashed(clock, { o1: [['pay', 'done', 1]] });
    const { order, undone } = orderSaga(log, clock);
    expect((await order.recover({ signal: AbortSignal.abort() })).recovered).toEqual([]);
    await expect(order.recover({ signal: 'no' } as never)).rejects.toThrow(/"signal" to be an AbortSignal/);
    await expect(order.recover({ wait: true } as never)).rejects.toThrow(
      /^unknown option "wait" in recover options/,
    );
    expect(undone).toEqual([]);
  });

  it('a claim that fails rejects with the log error', async () => {
    const clock = new FakeClock();
    const inner = memorySagaLog({ clock });
    const down = new Error('log down');
    const log: SagaLog = {
      timeoutMs: 0,
      start: (l, i) => inner.start(l, i),
      write: (l, c) => inner.write(l, c),
      renew: (l) => inner.renew(l),
      claim: () => Promise.reject(down),
    };
    await expect(orderSaga(log, clock).order.recover()).rejects.toBe(down);
  });

  it('a run stopped compensating after every step completed (the caller left at the end) is compensated, not completed', async () => {
    const clock = new FakeClock();
    const log = await crashed(
      clock,
      {
        o1: [
          ['pay', 'done', 1],
          ['tip', 'done', 2],
          ['ship', 'done', 3],
        ],
      },
      { status: 'compensating' },
    );
    const { order, undone } = orderSaga(log, clock);
    expect((await order.recover()).compensated).toEqual(['o1']);
    expect(undone).toHaveLength(3);
  });

  it('every step done but one the saga no longer defines: not completed; attention', async () => {
    const clock = new FakeClock();
    const log = await crashed(clock, {
      o1: [
        ['pay', 'done', 1],
        ['tip', 'done', 2],
        ['ship', 'done', 3],
        ['gift-wrap', 'done', 4],
      ],
    });
    const { order } = orderSaga(log, clock);
    const result = await order.recover();
    expect([result.completed, result.compensated]).toEqual([[], []]);
    expect(result.needsAttention).toEqual([{ sagaId: 'o1', step: 'gift-wrap', reason: 'unknown-step' }]);
  });

  it('records the recovery as it goes: compensating, each step before and after, compensated', async () => {
    const clock = new FakeClock();
    const inner = await crashed(clock, {
      o1: [
        ['pay', 'done', 1],
        ['tip', 'done', 2],
      ],
    });
    const writes: string[] = [];
    const log: SagaLog = {
      timeoutMs: 0,
      start: (l, i) => inner.start(l, i),
      write: async (l, c) => {
        writes.push('status' in c ? c.status : `${c.step} ${c.state}`);
        return inner.write(l, c);
      },
      renew: (l) => inner.renew(l),
      claim: (n, o, ms) => inner.claim(n, o, ms),
    };
    await orderSaga(log, clock).order.recover();
    expect(writes).toEqual([
      'compensating',
      'tip compensating',
      'tip compensated',
      'pay compensating',
      'pay compensated',
      'compensated',
    ]);
  });

  it('a recovery that loses its lease stops before the next compensation: the new owner settles the run', async () => {
    const clock = new FakeClock();
    const inner = await crashed(clock, {
      o1: [
        ['pay', 'done', 1],
        ['tip', 'done', 2],
      ],
    });
    const log: SagaLog = {
      timeoutMs: 0,
      start: (l, i) => inner.start(l, i),
      write: (l, c) => inner.write(l, c),
      renew: () => Promise.resolve(false),
      claim: (n, o, ms) => inner.claim(n, o, ms),
    };
    const undone: string[] = [];
    const slow = saga<{ order: string }>({ name: 'order', log, clock, leaseMs, compensation: once })
      .step({ name: 'pay', run: () => 1, compensate: () => void undone.push('pay') })
      .step({
        name: 'tip',
        run: () => 2,
        compensate: async () => {
          await clock.sleep(leaseMs);
          undone.push('tip');
        },
      })
      .step({ name: 'ship', run: () => 3 });
    const recovering = slow.recover();
    await clock.advance(leaseMs);
    const result = await recovering;
    expect([result.recovered, result.compensated, undone]).toEqual([['o1'], [], ['tip']]);
  });

  it('a run already compensating is not recorded compensating again', async () => {
    const clock = new FakeClock();
    const inner = await crashed(clock, { o1: [['pay', 'done', 1]] }, { status: 'compensating' });
    const writes: string[] = [];
    const log: SagaLog = {
      timeoutMs: 0,
      start: (l, i) => inner.start(l, i),
      write: async (l, c) => {
        writes.push('status' in c ? c.status : `${c.step} ${c.state}`);
        return inner.write(l, c);
      },
      renew: (l) => inner.renew(l),
      claim: (n, o, ms) => inner.claim(n, o, ms),
    };
    expect((await orderSaga(log, clock).order.recover()).compensated).toEqual(['o1']);
    expect(writes).toEqual(['pay compensating', 'pay compensated', 'compensated']);
  });

  it('a recovery that loses its lease during its last compensation leaves the run to the new owner', async () => {
    const clock = new FakeClock();
    const inner = await crashed(clock, {
      o1: [
        ['pay', 'done', 1],
        ['tip', 'done', 2],
      ],
    });
    const log: SagaLog = {
      timeoutMs: 0,
      start: (l, i) => inner.start(l, i),
      write: (l, c) => inner.write(l, c),
      renew: () => Promise.resolve(false),
      claim: (n, o, ms) => inner.claim(n, o, ms),
    };
    const undone: string[] = [];
    // Only tip can be undone (pay has no compensation): the pass ends with it.
    const slow = saga<{ order: string }>({ name: 'order', log, clock, leaseMs, compensation: once })
      .step({ name: 'pay', run: () => 1 })
      .step({
        name: 'tip',
        run: () => 2,
        compensate: async () => {
          await clock.sleep(leaseMs);
          undone.push('tip');
        },
      })
      .step({ name: 'ship', run: () => 3 });
    const recovering = slow.recover();
    await clock.advance(leaseMs);
    const result = await recovering;
    expect([result.recovered, result.compensated, result.needsAttention, undone]).toEqual([
      ['o1'],
      [],
      [],
      ['tip'],
    ]);
  });
});
