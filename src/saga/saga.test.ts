import { describe, expect, it } from 'vitest';
import { pipeline } from '../core/pipeline.js';
import { constant } from '../retry/backoff.js';
import { retryAll } from '../retry/retry.js';
import { FakeClock } from '../testing/fake-clock.js';
import { timeout } from '../timeout/timeout.js';
import { isSagaFailedError, type SagaFailedError } from './errors.js';
import { saga } from './saga.js';

/** A saga whose steps record what ran and what was undone, with the signals compensations got. */
function recorded() {
  const log: string[] = [];
  const signals: AbortSignal[] = [];
  const keys: string[] = [];
  const step = (
    name: string,
    options: { fail?: unknown; optional?: boolean; compensateFails?: unknown } = {},
  ) => ({
    name,
    optional: options.optional,
    run: () => {
      log.push(`run ${name}`);
      if (options.fail !== undefined) throw options.fail;
      return `${name} done`;
    },
    compensate: ({
      output,
      signal,
      idempotencyKey,
    }: {
      output: unknown;
      signal: AbortSignal;
      idempotencyKey: string;
    }) => {
      log.push(`undo ${name} (${String(output)})`);
      signals.push(signal);
      keys.push(idempotencyKey);
      if (options.compensateFails !== undefined) throw options.compensateFails;
    },
  });
  return { log, signals, keys, step };
}

// One try, errors passed through as they are.
const once = pipeline(timeout(60_000));

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

describe('saga: steps', () => {
  it('runs the steps in order, each seeing the input and the outputs before it', async () => {
    const seen: unknown[] = [];
    const order = saga<{ amount: number }>()
      .step({ name: 'reserve', run: ({ input }) => input.amount * 2 })
      .step({
        name: 'charge',
        run: ({ input, outputs, sagaId }) => {
          seen.push(sagaId);
          return `${input.amount}:${outputs.reserve}`;
        },
      });
    const result = await order.run({ amount: 21 }, { id: 'saga-1' });
    expect(result).toEqual({ outputs: { reserve: 42, charge: '21:42' }, skipped: [] });
    expect(seen).toEqual(['saga-1']);
    expect(order.steps).toEqual(['reserve', 'charge']);
    expect(order.name).toBe('saga');
    // Types follow the steps.
    const total: number = result.outputs.reserve;
    const text: string = result.outputs.charge;
    expect([total, text]).toEqual([42, '21:42']);
    const optional = await saga()
      .step({ name: 'maybe', optional: true, run: () => 'x' })
      .run(undefined);
    const maybe: string | undefined = optional.outputs.maybe;
    expect(maybe).toBe('x');
  });

  it('step() returns a new saga: the one it came from is unchanged', async () => {
    const base = saga<number>().step({ name: 'a', run: ({ input }) => input });
    const longer = base.step({ name: 'b', run: ({ outputs }) => outputs.a + 1 });
    expect(base.steps).toEqual(['a']);
    expect((await longer.run(1)).outputs).toEqual({ a: 1, b: 2 });
    expect((await base.run(1)).outputs).toEqual({ a: 1 });
  });
});

describe('saga: compensation', () => {
  it('a mandatory step fails: completed steps are compensated in reverse order, the failed one is not', async () => {
    const { log, keys, step } = recorded();
    const cause = Object.assign(new Error('bad card number'), { status: 400 });
    const error = await failureOf(
      saga({ compensation: once })
        .step(step('a'))
        .step(step('b'))
        .step(step('c', { fail: cause }))
        .step(step('d'))
        .run(undefined, { id: 's1' }),
    );
    expect(log).toEqual(['run a', 'run b', 'run c', 'undo b (b done)', 'undo a (a done)']);
    expect(error.step).toBe('c');
    expect(error.cause).toBe(cause);
    expect(error.sagaId).toBe('s1');
    expect(error.compensated).toEqual(['b', 'a']);
    expect(error.compensationErrors).toEqual([]);
    expect(error.kind).toBe('invalid'); // the cause's kind (400): nothing is left behind
    expect(error.code).toBe('ERR_SAGA_FAILED');
    expect(keys).toEqual(['s1:b', 's1:a']);
  });

  it('an optional step may fail: it is skipped; a later failure compensates the optional step that succeeded', async () => {
    const { log, step } = recorded();
    const skipped = new Error('no loyalty points');
    const order = saga({ compensation: once })
      .step(step('a'))
      .step(step('points', { fail: skipped, optional: true }))
      .step(step('coupon', { optional: true }));
    const result = await order.run(undefined);
    expect(result.skipped).toEqual([{ step: 'points', error: skipped }]);
    expect(result.outputs).toEqual({ a: 'a done', coupon: 'coupon done' });
    log.length = 0;
    const error = await failureOf(order.step(step('ship', { fail: new Error('no stock') })).run(undefined));
    expect(error.compensated).toEqual(['coupon', 'a']);
    expect(log).toEqual([
      'run a',
      'run points',
      'run coupon',
      'run ship',
      'undo coupon (coupon done)',
      'undo a (a done)',
    ]);
  });

  it('a failing compensation is reported, and the others still run', async () => {
    const { log, step } = recorded();
    const stuck = new Error('refund service down');
    const failed: string[] = [];
    const compensated: string[] = [];
    const error = await failureOf(
      saga({
        compensation: once,
        onCompensationFailed: ({ step: name }) => failed.push(name),
        onCompensated: ({ step: name }) => compensated.push(name),
      })
        .step(step('a'))
        .step(step('b', { compensateFails: stuck }))
        .step(step('c'))
        .step(step('d', { fail: new Error('boom') }))
        .run(undefined),
    );
    expect(log.filter((l) => l.startsWith('undo'))).toEqual([
      'undo c (c done)',
      'undo b (b done)',
      'undo a (a done)',
    ]);
    expect(error.compensated).toEqual(['c', 'a']);
    expect(error.compensationErrors).toEqual([{ step: 'b', error: stuck }]);
    expect(error.kind).toBe('internal');
    expect(error.message).toBe(
      'the saga failed at step "d"; 2 step(s) compensated, 1 compensation(s) failed',
    );
    expect(failed).toEqual(['b']);
    expect(compensated).toEqual(['c', 'a']);
  });

  it('a step without compensate is not undone, and not listed', async () => {
    const error = await failureOf(
      saga({ compensation: once })
        .step({ name: 'read', run: () => 1 })
        .step({ name: 'write', run: () => Promise.reject(new Error('x')) })
        .run(undefined),
    );
    expect(error.compensated).toEqual([]);
    expect(error.compensationErrors).toEqual([]);
  });

  it('the default compensation policy tries three times with backoff, then reports the failure', async () => {
    const clock = new FakeClock(0);
    let tries = 0;
    const run = saga({ clock })
      .step({
        name: 'a',
        run: () => 1,
        compensate: () => {
          tries++;
          throw Object.assign(new Error('unavailable'), { status: 503 });
        },
      })
      .step({ name: 'b', run: () => Promise.reject(new Error('b failed')) })
      .run(undefined);
    const failure = failureOf(run);
    for (let i = 0; i < 20 && tries < 3; i++) await clock.advance(1_000);
    expect(tries).toBe(3); // the backoff ran on the saga's clock
    const error = await failure;
    expect(error.compensationErrors).toHaveLength(1);
  });

  it('the default compensation policy gives each try 30 s', async () => {
    const clock = new FakeClock(0);
    let tries = 0;
    let settled = false;
    const failure = failureOf(
      saga({ clock })
        .step({
          name: 'a',
          run: () => 1,
          compensate: () => {
            tries++;
            return new Promise(() => {}); // never answers
          },
        })
        .step({ name: 'b', run: () => Promise.reject(new Error('b failed')) })
        .run(undefined),
    ).finally(() => (settled = true));
    await clock.advance(29_999);
    expect(tries).toBe(1);
    for (let i = 0; i < 10 && !settled; i++) await clock.advance(30_000);
    expect(settled).toBe(true);
    expect(tries).toBe(3);
    expect((await failure).compensationErrors).toHaveLength(1);
  });
});

describe('saga: cancellation', () => {
  it('the caller aborts mid-step: the step fails, and compensation runs under a signal the abort does not reach', async () => {
    const { signals, step } = recorded();
    const controller = new AbortController();
    const reason = new Error('client went away');
    const error = await failureOf(
      saga({ compensation: once })
        .step(step('a'))
        .step({
          name: 'slow',
          run: ({ signal }) =>
            new Promise((_, reject) => {
              signal.addEventListener('abort', () => reject(signal.reason));
              controller.abort(reason);
            }),
        })
        .run(undefined, { signal: controller.signal }),
    );
    expect(error.step).toBe('slow');
    expect(error.cause).toBe(reason);
    expect(error.compensated).toEqual(['a']);
    expect(signals).toHaveLength(1);
    expect(signals[0]).not.toBe(controller.signal);
    expect(signals[0]!.aborted).toBe(false);
  });

  it('a step that completes after the caller aborted is compensated too; a failed optional step under an abort fails the saga', async () => {
    const { log, step } = recorded();
    const controller = new AbortController();
    const error = await failureOf(
      saga({ compensation: once })
        .step(step('a'))
        .step({
          name: 'ignores its signal',
          run: () => {
            controller.abort(new Error('left'));
            return 'done anyway';
          },
          compensate: () => {
            log.push('undo ignores its signal');
          },
        })
        .step(step('never'))
        .run(undefined, { signal: controller.signal }),
    );
    expect(error.step).toBe('ignores its signal');
    expect((error.cause as Error).message).toBe('left');
    expect(error.compensated).toEqual(['ignores its signal', 'a']);
    expect(log).not.toContain('run never');

    const again = new AbortController();
    const optionalError = await failureOf(
      saga({ compensation: once })
        .step(step('a'))
        .step({
          name: 'optional',
          optional: true,
          run: () => {
            again.abort(new Error('left'));
            throw new Error('failed as the caller left');
          },
        })
        .run(undefined, { signal: again.signal }),
    );
    expect(optionalError.step).toBe('optional');
  });

  it('a signal aborted before the run fails the first step; nothing runs', async () => {
    const { log, step } = recorded();
    const error = await failureOf(
      saga()
        .step(step('a'))
        .run(undefined, { signal: AbortSignal.abort('gone') }),
    );
    expect([error.step, error.cause, error.compensated]).toEqual(['a', 'gone', []]);
    expect(log).toEqual([]);
  });

  it('without a caller’s signal, steps get one that never aborts', async () => {
    let aborted: boolean | undefined;
    await saga()
      .step({ name: 'a', run: ({ signal }) => (aborted = signal.aborted) })
      .run(undefined);
    expect(aborted).toBe(false);
  });
});

describe('saga: policies and events', () => {
  it('a step’s retry policy runs around it', async () => {
    let tries = 0;
    const clock = new FakeClock(0);
    const result = saga()
      .step({
        name: 'flaky',
        retry: retryAll({ maxAttempts: 3, backoff: constant(10), clock }),
        run: () => {
          tries++;
          if (tries < 3) throw new Error('flaky');
          return 'ok';
        },
      })
      .run(undefined);
    await clock.advance(10);
    await clock.advance(10);
    expect((await result).outputs).toEqual({ flaky: 'ok' });
    expect(tries).toBe(3);
  });

  it('a step’s policy gets the step’s context and the caller’s signal', async () => {
    const controller = new AbortController();
    const seen: unknown[] = [];
    const error = await failureOf(
      saga<string>()
        .step({ name: 'a', run: () => 'first' })
        .step({
          name: 'b',
          retry: retryAll({ maxAttempts: 5 }),
          run: ({ input, outputs, sagaId }) => {
            seen.push([input, outputs.a, sagaId]);
            controller.abort(new Error('left'));
            throw new Error('retry me');
          },
        })
        .run('in', { signal: controller.signal, id: 'id-1' }),
    );
    expect(seen).toEqual([['in', 'first', 'id-1']]); // the abort stopped the retries
    expect(error.step).toBe('b');
  });

  it('onCompensated and onCompensationFailed subscribe and unsubscribe; the onStepFailed option subscribes', async () => {
    const events: string[] = [];
    const s = saga({ compensation: once, onStepFailed: ({ step }) => events.push(`failed ${step}`) })
      .step({ name: 'ok', run: () => 1, compensate: () => {} })
      .step({ name: 'bad undo', run: () => 1, compensate: () => Promise.reject(new Error('x')) })
      .step({ name: 'fails', run: () => Promise.reject(new Error('y')) });
    const offCompensated = s.onCompensated(({ step }) => events.push(`undone ${step}`));
    const offFailed = s.onCompensationFailed(({ step }) => events.push(`undo failed ${step}`));
    await failureOf(s.run(undefined));
    expect(events).toEqual(['failed fails', 'undo failed bad undo', 'undone ok']);
    offCompensated();
    offFailed();
    await failureOf(s.run(undefined));
    expect(events).toEqual(['failed fails', 'undo failed bad undo', 'undone ok', 'failed fails']);
  });

  it('onStepFailed tells optional from mandatory; a saga and the sagas step() made from it share their events', async () => {
    const events: unknown[] = [];
    const base = saga({ name: 'order', compensation: once });
    const dispose = base.onStepFailed(({ policy, step, optional }) => events.push([policy, step, optional]));
    const derived = base
      .step({ name: 'maybe', optional: true, run: () => Promise.reject(new Error('x')) })
      .step({ name: 'must', run: () => Promise.reject(new Error('y')) });
    await failureOf(derived.run(undefined));
    expect(events).toEqual([
      ['order', 'maybe', true],
      ['order', 'must', false],
    ]);
    dispose();
    await failureOf(derived.run(undefined));
    expect(events).toHaveLength(2);
  });
});

describe('saga: bad input', () => {
  it.each([
    [{ name: '' }, /"name"/],
    [{ compensation: {} }, /"compensation" to be a policy/],
    [{ compensation: null }, /"compensation" to be a policy/],
    [{ compensaton: once }, /unknown option "compensaton" in saga options/],
  ])('saga(%j) is a TypeError', (options, message) => {
    expect(() => saga(options as never)).toThrow(message);
  });

  it('bad steps, a name taken twice and bad run options are TypeErrors', async () => {
    const s = saga().step({ name: 'a', run: () => 1 });
    expect(() => s.step({ name: 'a', run: () => 2 })).toThrow(/unique, got "a" twice/);
    expect(() => s.step({ name: '', run: () => 2 } as never)).toThrow(/"name"/);
    expect(() => s.step({ name: 'b' } as never)).toThrow(/"run"/);
    expect(() => s.step({ name: 'b', run: () => 1, compensate: 5 } as never)).toThrow(/"compensate"/);
    expect(() => s.step({ name: 'b', run: () => 1, retry: {} } as never)).toThrow(/"retry"/);
    expect(() => s.step({ name: 'b', run: () => 1, optinal: true } as never)).toThrow(
      /unknown option "optinal" in step/,
    );
    await expect(s.run(undefined, { id: '' })).rejects.toThrow(/"id"/);
    await expect(s.run(undefined, { signal: 'x' } as never)).rejects.toThrow(/"signal"/);
    await expect(s.run(undefined, { ids: 'x' } as never)).rejects.toThrow(
      /unknown option "ids" in run options/,
    );
  });
});
