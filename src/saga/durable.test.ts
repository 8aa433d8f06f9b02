/**
 * A saga with a log, on the memory log and a FakeClock: what is recorded before and after each
 * step, the checks that come first (JSON, duplicate ids, the lease's length), a lost lease, a log
 * that fails, and a compensation that fails and is finished by recover().
 */
import { describe, expect, it } from 'vitest';
import { StoreUnavailableError } from '../core/errors.js';
import { pipeline } from '../core/pipeline.js';
import { FakeClock } from '../testing/fake-clock.js';
import { timeout } from '../timeout/timeout.js';
import {
  isDuplicateSagaError,
  isSagaFailedError,
  isSagaLeaseLostError,
  type SagaFailedError,
} from './errors.js';
import { memorySagaLog } from './memory-store.js';
import { saga } from './saga.js';
import type { SagaChange, SagaLease, SagaLog } from './store.js';

const once = pipeline(timeout(60_000));
const leaseMs = 3_000;

/** The memory log, with every accepted write listed as `<id> <step|status> <state>`. */
function watchedLog(clock: FakeClock, overrides: Partial<SagaLog> = {}) {
  const inner = memorySagaLog({ clock });
  const writes: string[] = [];
  const log: SagaLog = {
    timeoutMs: 0,
    start: (lease, input) => inner.start(lease, input),
    write: async (lease: SagaLease, change: SagaChange) => {
      const written = await inner.write(lease, change);
      if (written)
        writes.push(
          'status' in change ? `${lease.id} ${change.status}` : `${lease.id} ${change.step} ${change.state}`,
        );
      return written;
    },
    renew: (lease) => inner.renew(lease),
    claim: (name, owner, ms) => inner.claim(name, owner, ms),
    ...overrides,
  };
  return { log, inner, writes };
}

async function failureOf(promise: Promise<unknown>): Promise<SagaFailedError> {
  const error = await promise.then(
    () => {
      throw new Error('expected the saga to fail');
    },
    (e: unknown) => e,
  );
  if (!isSagaFailedError(error)) throw error;
  return error;
}

/** A two-step saga (`a`, `b`) whose effects and undos are listed in `effects`. */
function twoSteps(
  log: SagaLog,
  clock: FakeClock,
  b: (context: { signal: AbortSignal }) => unknown = () => 'B',
) {
  const effects: string[] = [];
  const order = saga<{ order: string }>({ name: 'order', log, clock, leaseMs, compensation: once })
    .step({
      name: 'a',
      run: ({ input }) => {
        effects.push(`a ${input.order}`);
        return { charge: `ch-${input.order}` };
      },
      compensate: ({ output, idempotencyKey }) => effects.push(`undo a ${output.charge} ${idempotencyKey}`),
    })
    .step({
      name: 'b',
      run: b,
      compensate: ({ idempotencyKey }) => effects.push(`undo b ${idempotencyKey}`),
    });
  return { order, effects };
}

describe('saga with a log: what it records', () => {
  it('records the run, each step before and after it, and the end', async () => {
    const clock = new FakeClock();
    const { log, writes } = watchedLog(clock);
    const { order } = twoSteps(log, clock);
    const result = await order.run({ order: 'o1' }, { id: 'o1' });
    expect(result.outputs).toEqual({ a: { charge: 'ch-o1' }, b: 'B' });
    expect(writes).toEqual(['o1 a running', 'o1 a done', 'o1 b running', 'o1 b done', 'o1 completed']);
    expect(await order.recover()).toEqual({
      recovered: [],
      completed: [],
      compensated: [],
      needsAttention: [],
    });
  });

  it('records a failure, then each compensation before and after it', async () => {
    const clock = new FakeClock();
    const { log, writes } = watchedLog(clock);
    const { order, effects } = twoSteps(log, clock, () => {
      throw new Error('no stock');
    });
    const error = await failureOf(order.run({ order: 'o1' }, { id: 'o1' }));
    expect([error.step, error.compensated]).toEqual(['b', ['a']]);
    expect(effects).toEqual(['a o1', 'undo a ch-o1 o1:a']);
    expect(writes).toEqual([
      'o1 a running',
      'o1 a done',
      'o1 b running',
      'o1 b failed',
      'o1 compensating',
      'o1 a compensating',
      'o1 a compensated',
      'o1 compensated',
    ]);
  });

  it('records an optional step that failed as skipped, and goes on', async () => {
    const clock = new FakeClock();
    const { log, writes } = watchedLog(clock);
    const run = saga<number>({ name: 's', log, clock, leaseMs })
      .step({ name: 'maybe', optional: true, run: () => Promise.reject(new Error('down')) })
      .step({ name: 'sure', run: () => 1 });
    expect((await run.run(0, { id: 'r' })).skipped.map((s) => s.step)).toEqual(['maybe']);
    expect(writes).toEqual([
      'r maybe running',
      'r maybe skipped',
      'r sure running',
      'r sure done',
      'r completed',
    ]);
  });
});

describe('saga with a log: checks before the first step', () => {
  it.each([
    ['a Date', { at: new Date(0) }, /the input\.at is a Date/],
    ['a Map', new Map(), /the input is a Map/],
    ['a bigint', { n: 1n }, /the input\.n is 1n/],
    ['a function', [() => 1], /the input\[0\] is a function/],
    ['NaN', { n: Number.NaN }, /the input\.n is NaN/],
    ['undefined in an array', [undefined], /the input\[0\] is undefined/],
    ['a hole', Array(2), /the input has holes/],
    ['a symbol key', { [Symbol('s')]: 1 }, /the input has symbol keys/],
  ])(
    'an input JSON would change (%s) is a TypeError, and nothing runs or is logged',
    async (_, input, message) => {
      const clock = new FakeClock();
      const { log, writes } = watchedLog(clock);
      let ran = 0;
      const s = saga<unknown>({ name: 's', log, clock, leaseMs }).step({ name: 'a', run: () => ran++ });
      await expect(s.run(input, { id: 'x' })).rejects.toThrow(TypeError);
      await expect(s.run(input, { id: 'x' })).rejects.toThrow(message);
      expect(ran).toBe(0);
      expect(writes).toEqual([]);
      expect(await log.start({ name: 's', id: 'x', owner: 'o', leaseMs }, 'null')).toBe(true);
    },
  );

  it('a cycle is a TypeError; a shared (not cyclic) object and undefined properties are fine', async () => {
    const clock = new FakeClock();
    const { log } = watchedLog(clock);
    const s = saga<unknown>({ name: 's', log, clock, leaseMs }).step({ name: 'a', run: () => 1 });
    const cyclic: Record<string, unknown> = {};
    cyclic.self = cyclic;
    await expect(s.run(cyclic)).rejects.toThrow(/the input\.self refers back to itself/);
    const shared = { n: 1 };
    await expect(
      s.run({ x: shared, y: shared, z: undefined, w: Object.create(null) }),
    ).resolves.toBeDefined();
  });

  it('an id the log holds is DuplicateSagaError, and nothing runs; the same id in another saga is fine', async () => {
    const clock = new FakeClock();
    const { log } = watchedLog(clock);
    const { order, effects } = twoSteps(log, clock);
    await order.run({ order: 'o1' }, { id: 'o1' });
    const error = await order.run({ order: 'o1' }, { id: 'o1' }).catch((e: unknown) => e);
    expect(isDuplicateSagaError(error)).toBe(true);
    expect(error).toMatchObject({ sagaId: 'o1', kind: 'conflict', code: 'ERR_SAGA_DUPLICATE' });
    expect(effects).toEqual(['a o1']);
    const other = saga<number>({ name: 'refund', log, clock, leaseMs }).step({ name: 'x', run: () => 1 });
    await expect(other.run(1, { id: 'o1' })).resolves.toBeDefined();
  });

  it('an output JSON would change fails the saga at that step, the step undone too (its effect exists)', async () => {
    const clock = new FakeClock();
    const { log, writes } = watchedLog(clock);
    const { order, effects } = twoSteps(log, clock, () => new Date(0));
    const error = await failureOf(order.run({ order: 'o1' }, { id: 'o1' }));
    expect(error.step).toBe('b');
    expect(error.cause).toBeInstanceOf(TypeError);
    expect(String(error.cause)).toMatch(/the output of step "b" is a Date/);
    expect(error.compensated).toEqual(['b', 'a']);
    expect(effects).toEqual(['a o1', 'undo b o1:b', 'undo a ch-o1 o1:a']);
    expect(writes).not.toContain('o1 b done');
  });

  it.each([
    [{ leaseMs: 299 }, /"leaseMs" to be at least 300/],
    [{ leaseMs: 1.5 }, /"leaseMs" to be a positive integer/],
    [{ leaseMs: 2_999, log: watchedLog(new FakeClock(), { timeoutMs: 1_000 }).log }, /at least 3000/],
    [{ log: { start() {} } }, /"log" to be a saga log \(start, write, renew, claim, timeoutMs\)/],
  ])('bad options are a TypeError: %o', (options, message) => {
    expect(() => saga(options as never)).toThrow(message);
  });

  it('recover() without a log rejects with a TypeError', async () => {
    await expect(saga({ name: 's' }).recover()).rejects.toThrow(/recover\(\) needs a saga with a log/);
  });
});

describe('saga with a log: a lost lease and a failing log', () => {
  it('a renewal refused aborts the step; the run writes nothing more, undoes what it did, and fails with SagaLeaseLostError', async () => {
    const clock = new FakeClock();
    let refuse = false;
    const watched = watchedLog(clock);
    const { writes } = watched;
    const log: SagaLog = {
      ...watched.log,
      renew: (lease) => (refuse ? Promise.resolve(false) : watched.log.renew(lease)),
    };
    let stepSignal: AbortSignal | undefined;
    const { order, effects } = twoSteps(log, clock, async () => {
      await clock.sleep(5 * leaseMs);
      return 'late';
    });
    const s = order.step({
      name: 'c',
      run: ({ signal }) => {
        stepSignal = signal;
        return new Promise((_, reject) => signal.addEventListener('abort', () => reject(signal.reason)));
      },
    });
    const running = failureOf(s.run({ order: 'o1' }, { id: 'o1' }));
    await clock.advance(5 * leaseMs); // b sleeps through several renewals
    expect(stepSignal?.aborted).toBe(false);
    refuse = true;
    await clock.advance(leaseMs);
    const error = await running;
    expect(stepSignal?.aborted).toBe(true);
    expect(error.step).toBe('c');
    expect(isSagaLeaseLostError(error.cause)).toBe(true);
    expect(error.compensated).toEqual(['b', 'a']);
    expect(effects).toEqual(['a o1', 'undo b o1:b', 'undo a ch-o1 o1:a']);
    expect(writes.at(-1)).toBe('o1 c running'); // nothing after the lease was lost
  });

  it('a renewal that never answers loses the lease in time; recover() elsewhere takes the run over', async () => {
    const clock = new FakeClock();
    const watched = watchedLog(clock, { renew: () => new Promise(() => {}) });
    const { order } = twoSteps(watched.log, clock, ({ signal }: { signal: AbortSignal }) => {
      return new Promise((_, reject) => signal.addEventListener('abort', () => reject(signal.reason)));
    });
    const running = failureOf(order.run({ order: 'o1' }, { id: 'o1' }));
    await clock.advance(leaseMs);
    const error = await running;
    expect(isSagaLeaseLostError(error.cause)).toBe(true);
    expect(error.compensated).toEqual(['a']);
    // The log still shows b running: the recovering process cannot know whether it had its effect.
    const { order: recovering, effects } = twoSteps(watched.inner, clock);
    const result = await recovering.recover();
    expect(result).toEqual({
      recovered: ['o1'],
      completed: [],
      compensated: [],
      needsAttention: [{ sagaId: 'o1', step: 'b', reason: 'step-in-doubt' }],
    });
    expect(effects).toEqual(['undo a ch-o1 o1:a']); // at-least-once: undone here and by the runner, one key
  });

  it('a write the log refuses (another process took the run): that step never runs, nothing more is written, SagaLeaseLostError', async () => {
    const clock = new FakeClock();
    const watched = watchedLog(clock);
    const log: SagaLog = {
      ...watched.log,
      write: (lease, change) =>
        'step' in change && change.step === 'b' ? Promise.resolve(false) : watched.log.write(lease, change),
    };
    let ranB = false;
    const { order, effects } = twoSteps(log, clock, () => {
      ranB = true;
    });
    const error = await failureOf(order.run({ order: 'o1' }, { id: 'o1' }));
    expect(isSagaLeaseLostError(error.cause)).toBe(true);
    expect([error.step, error.compensated, ranB]).toEqual(['b', ['a'], false]);
    expect(effects).toEqual(['a o1', 'undo a ch-o1 o1:a']);
    expect(watched.writes).toEqual(['o1 a running', 'o1 a done']);
  });

  it('a log write that fails before a step: that step never runs, the ones before are undone', async () => {
    const clock = new FakeClock();
    const watched = watchedLog(clock);
    const down = new StoreUnavailableError('log down');
    const log: SagaLog = {
      ...watched.log,
      write: (lease, change) =>
        'step' in change && change.step === 'b' ? Promise.reject(down) : watched.log.write(lease, change),
    };
    let ranB = false;
    const { order, effects } = twoSteps(log, clock, () => {
      ranB = true;
    });
    const error = await failureOf(order.run({ order: 'o1' }, { id: 'o1' }));
    expect([error.step, error.cause, error.compensated, ranB]).toEqual(['b', down, ['a'], false]);
    expect(effects).toEqual(['a o1', 'undo a ch-o1 o1:a']);
    expect(watched.writes.at(-1)).toBe('o1 compensated');
  });

  it('a log write that fails after a step: the step is undone too', async () => {
    const clock = new FakeClock();
    const watched = watchedLog(clock);
    const log: SagaLog = {
      ...watched.log,
      write: (lease, change) =>
        'step' in change && change.state === 'done' && change.step === 'b'
          ? Promise.reject(new StoreUnavailableError('log down'))
          : watched.log.write(lease, change),
    };
    const { order, effects } = twoSteps(log, clock);
    const error = await failureOf(order.run({ order: 'o1' }, { id: 'o1' }));
    expect([error.step, error.compensated]).toEqual(['b', ['b', 'a']]);
    expect(effects).toEqual(['a o1', 'undo b o1:b', 'undo a ch-o1 o1:a']);
  });

  it('a failed start is the log error, and nothing runs', async () => {
    const clock = new FakeClock();
    const down = new StoreUnavailableError('log down');
    const { log } = watchedLog(clock, { start: () => Promise.reject(down) });
    const { order, effects } = twoSteps(log, clock);
    await expect(order.run({ order: 'o1' })).rejects.toBe(down);
    expect(effects).toEqual([]);
  });

  it('the caller aborting: the steps see it, the run is compensated and recorded so', async () => {
    const clock = new FakeClock();
    const { log, writes } = watchedLog(clock);
    const controller = new AbortController();
    const { order } = twoSteps(log, clock, ({ signal }: { signal: AbortSignal }) => {
      controller.abort(new Error('client left'));
      expect(signal.aborted).toBe(true);
      return 'B anyway';
    });
    const error = await failureOf(order.run({ order: 'o1' }, { id: 'o1', signal: controller.signal }));
    expect([error.step, error.compensated, (error.cause as Error).message]).toEqual([
      'b',
      ['b', 'a'],
      'client left',
    ]);
    expect(writes.at(-1)).toBe('o1 compensated');
  });
});

describe('saga with a log: a compensation that fails', () => {
  it('leaves the run compensating; once its lease lapsed, recover() retries only what is left', async () => {
    const clock = new FakeClock();
    const { log } = watchedLog(clock);
    let refunds = 0;
    let failRefund = true;
    const s = saga<number>({ name: 'pay', log, clock, leaseMs, compensation: once })
      .step({
        name: 'charge',
        run: () => 'ch-1',
        compensate: () => {
          refunds++;
          if (failRefund) throw new Error('refund service down');
        },
      })
      .step({ name: 'hold', run: () => 'h-1', compensate: () => {} })
      .step({ name: 'ship', run: () => Promise.reject(new Error('no truck')) });
    const error = await failureOf(s.run(1, { id: 'p1' }));
    expect([error.compensated, error.compensationErrors.map((e) => e.step), error.kind]).toEqual([
      ['hold'],
      ['charge'],
      'internal',
    ]);
    expect((await s.recover()).recovered).toEqual([]); // its lease has not lapsed yet
    await clock.advance(leaseMs);
    const first = await s.recover();
    expect(first.recovered).toEqual(['p1']);
    expect(first.compensated).toEqual([]);
    expect(first.needsAttention).toMatchObject([
      { sagaId: 'p1', step: 'charge', reason: 'compensation-failed' },
    ]);
    failRefund = false;
    await clock.advance(leaseMs);
    const second = await s.recover();
    expect([second.recovered, second.compensated, second.needsAttention]).toEqual([['p1'], ['p1'], []]);
    expect(refunds).toBe(3);
    await clock.advance(leaseMs);
    expect((await s.recover()).recovered).toEqual([]);
  });
});

describe('saga with a log: edges', () => {
  it('an undefined input is recorded as null', async () => {
    const clock = new FakeClock();
    const watched = watchedLog(clock);
    const inputs: string[] = [];
    const log: SagaLog = {
      ...watched.log,
      start: (lease, input) => {
        inputs.push(input);
        return watched.log.start(lease, input);
      },
    };
    await saga<undefined>({ name: 's', log, clock, leaseMs })
      .step({ name: 'a', run: () => 1 })
      .run(undefined);
    expect(inputs).toEqual(['null']);
  });

  it('an optional step whose failure cannot be recorded fails the run with the log error', async () => {
    const clock = new FakeClock();
    const watched = watchedLog(clock);
    const down = new StoreUnavailableError('log down');
    const log: SagaLog = {
      ...watched.log,
      write: (lease, change) =>
        'step' in change && change.state === 'skipped'
          ? Promise.reject(down)
          : watched.log.write(lease, change),
    };
    const s = saga<number>({ name: 's', log, clock, leaseMs })
      .step({ name: 'maybe', optional: true, run: () => Promise.reject(new Error('down')) })
      .step({ name: 'sure', run: () => 1 });
    const error = await failureOf(s.run(1, { id: 'r' }));
    expect([error.step, error.cause]).toEqual(['maybe', down]);
  });

  it('a step that completes after the lease was lost is undone, and not recorded done', async () => {
    const clock = new FakeClock();
    const watched = watchedLog(clock, { renew: () => Promise.resolve(false) });
    const { order, effects } = twoSteps(watched.log, clock, async () => {
      await clock.sleep(leaseMs);
      return 'B late';
    });
    const running = failureOf(order.run({ order: 'o1' }, { id: 'o1' }));
    await clock.advance(leaseMs);
    const error = await running;
    expect(isSagaLeaseLostError(error.cause)).toBe(true);
    expect([error.step, error.compensated]).toEqual(['b', ['b', 'a']]);
    expect(effects).toEqual(['a o1', 'undo b o1:b', 'undo a ch-o1 o1:a']);
    expect(watched.writes).not.toContain('o1 b done');
  });

  it('a lease of exactly 300 ms (and 3 × the log deadline) is accepted', () => {
    expect(() => saga({ leaseMs: 300, log: watchedLog(new FakeClock()).log })).not.toThrow();
    expect(() =>
      saga({ leaseMs: 3_000, log: watchedLog(new FakeClock(), { timeoutMs: 1_000 }).log }),
    ).not.toThrow();
  });
});
