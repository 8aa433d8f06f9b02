import { getEventListeners } from 'node:events';
import fc from 'fast-check';
import { describe, expect, it, vi } from 'vitest';
import { deferred } from '../../test/support/deferred.js';
import type { Context } from '../core/context.js';
import { isRejectedError, isTimeoutError, RejectedError } from '../core/errors.js';
import { setListenerErrorHandler } from '../core/events.js';
import { pipeline } from '../core/pipeline.js';
import { FakeClock } from '../testing/fake-clock.js';
import { timeout } from '../timeout/timeout.js';
import { type BulkheadRejectedEvent, bulkhead } from './bulkhead.js';
import { BulkheadFullError, isBulkheadFullError, isConcurrencyLimitError } from './errors.js';
import type { BulkheadOptions } from './options.js';

const tick = () => new Promise<void>((resolve) => setImmediate(resolve));

/** Observes a promise's settlement without awaiting it. */
function track<T>(promise: Promise<T>) {
  const state: { settled: boolean; ok?: boolean; value?: T; error?: unknown } = { settled: false };
  promise.then(
    (value) => Object.assign(state, { settled: true, ok: true, value }),
    (error: unknown) => Object.assign(state, { settled: true, ok: false, error }),
  );
  return state;
}

const honoursSignal = ({ signal }: Context) =>
  new Promise<never>((_, reject) => signal.addEventListener('abort', () => reject(signal.reason)));

describe('bulkhead: options', () => {
  const valid: BulkheadOptions = { maxConcurrent: 2, maxQueue: 2 };

  it.each([0, -1, 1.5, Number.NaN, Infinity, '2', undefined])('maxConcurrent %s is a TypeError', (v) => {
    expect(() => bulkhead({ ...valid, maxConcurrent: v as number })).toThrow(
      /expected "maxConcurrent" to be a positive integer/,
    );
  });

  it.each([-1, 1.5, Number.NaN, Infinity, '2', undefined, null])('maxQueue %s is a TypeError', (v) => {
    expect(() => bulkhead({ ...valid, maxQueue: v as number })).toThrow(
      /expected "maxQueue" to be a non-negative integer/,
    );
  });

  it.each([0, -5, Number.NaN, '10', false])('queueTimeoutMs %s is a TypeError', (v) => {
    expect(() => bulkhead({ ...valid, queueTimeoutMs: v as number })).toThrow(
      /expected "queueTimeoutMs" to be a positive number/,
    );
  });

  it('rejects a bad clock, a non-function onRejected and a non-object options argument', () => {
    expect(() => bulkhead({ ...valid, clock: { now: () => 0 } as never })).toThrow(
      /expected "clock" to be a Clock/,
    );
    expect(() => bulkhead({ ...valid, onRejected: 'x' as never })).toThrow(
      /expected "onRejected" to be a function/,
    );
    expect(() => bulkhead(undefined as never)).toThrow(/expected "maxConcurrent"/);
    expect(() => bulkhead(5 as never)).toThrow(/expected "bulkhead options" to be an options object/);
  });

  it('accepts maxQueue 0 and queueTimeoutMs Infinity, and reports its limits', () => {
    const b = bulkhead({ maxConcurrent: 3, maxQueue: 0, queueTimeoutMs: Infinity });
    expect([b.maxConcurrent, b.maxQueue, b.queueTimeoutMs, b.inFlight, b.queued]).toEqual([
      3,
      0,
      Infinity,
      0,
      0,
    ]);
  });

  it('execute rejects on a non-function operation and a bad deadline', async () => {
    const b = bulkhead(valid);
    await expect(b.execute(3 as never)).rejects.toThrow(/expected "operation" to be a function/);
    await expect(b.execute(() => 1, { deadline: Number.NaN })).rejects.toThrow(/"deadline"/);
  });
});

describe('bulkhead: admission and queueing', () => {
  it('runs maxConcurrent, queues maxQueue in FIFO order, refuses the rest at once', async () => {
    const rejected: BulkheadRejectedEvent[] = [];
    const b = bulkhead({ maxConcurrent: 2, maxQueue: 2, onRejected: (e) => rejected.push(e) });
    const gates = Array.from({ length: 4 }, () => deferred<string>());
    const started: number[] = [];
    const calls = gates.map((gate, i) =>
      track(
        b.execute(() => {
          started.push(i);
          return gate.promise;
        }),
      ),
    );
    expect(started).toEqual([0, 1]);
    expect([b.inFlight, b.queued]).toEqual([2, 2]);
    const op = vi.fn();
    const error = await b.execute(op).catch((e: unknown) => e);
    expect(op).not.toHaveBeenCalled();
    expect(error).toBeInstanceOf(BulkheadFullError);
    expect(error).toBeInstanceOf(RejectedError);
    expect(isBulkheadFullError(error)).toBe(true);
    expect(isRejectedError(error)).toBe(true);
    expect(isConcurrencyLimitError(error)).toBe(false);
    expect(error).toMatchObject({
      code: 'ERR_BULKHEAD_FULL',
      kind: 'overloaded',
      reason: 'queue-full',
      maxConcurrent: 2,
      maxQueue: 2,
      queueTimeoutMs: Infinity,
    });
    expect(rejected).toEqual([{ policy: 'bulkhead', reason: 'queue-full', error }]);
    expect([b.inFlight, b.queued]).toEqual([2, 2]);

    gates[1]!.resolve('b');
    await tick();
    expect(started).toEqual([0, 1, 2]); // the oldest waiter got the slot
    expect([b.inFlight, b.queued]).toEqual([2, 1]);
    gates[0]!.resolve('a');
    await tick();
    expect(started).toEqual([0, 1, 2, 3]);
    gates[2]!.resolve('c');
    gates[3]!.resolve('d');
    await tick();
    expect(calls.map((c) => c.value)).toEqual(['a', 'b', 'c', 'd']);
    expect([b.inFlight, b.queued]).toEqual([0, 0]);
  });

  it('a freed slot goes to the oldest waiter, never to a newcomer', async () => {
    const b = bulkhead({ maxConcurrent: 1, maxQueue: 5 });
    const started: string[] = [];
    const gate = deferred();
    const first = b.execute(async () => {
      started.push('first');
      await gate.promise;
    });
    const waiter = b.execute(() => {
      started.push('waiter');
    });
    // A newcomer arrives in the same tick the first call ends.
    gate.resolve(undefined);
    const newcomer = b.execute(() => {
      started.push('newcomer');
    });
    await Promise.all([first, waiter, newcomer]);
    expect(started).toEqual(['first', 'waiter', 'newcomer']);
  });

  it('maxQueue 0 refuses as soon as every slot is busy', async () => {
    const b = bulkhead({ maxConcurrent: 1, maxQueue: 0 });
    const gate = deferred();
    const held = b.execute(() => gate.promise);
    await expect(b.execute(() => 1)).rejects.toMatchObject({ reason: 'queue-full' });
    gate.resolve(1);
    await held;
    await expect(b.execute(() => 2)).resolves.toBe(2);
  });

  it('an already-aborted signal rejects with its reason, queued or not', async () => {
    const b = bulkhead({ maxConcurrent: 1, maxQueue: 1 });
    const reason = new Error('gone');
    const op = vi.fn();
    await expect(b.execute(op, { signal: AbortSignal.abort(reason) })).rejects.toBe(reason);
    const gate = deferred();
    const held = b.execute(() => gate.promise);
    await expect(b.execute(op, { signal: AbortSignal.abort(reason) })).rejects.toBe(reason);
    // inside a pipeline too (the step path reads the signal only when it must queue)
    await expect(pipeline(b).execute(op, { signal: AbortSignal.abort(reason) })).rejects.toBe(reason);
    expect(op).not.toHaveBeenCalled();
    expect([b.inFlight, b.queued]).toEqual([1, 0]);
    gate.resolve(0);
    await held;
  });

  it('a call handed on with an already-aborted context by an outer policy is not queued: it rejects at once', async () => {
    const clock = new FakeClock();
    const b = bulkhead({ maxConcurrent: 1, maxQueue: 1, queueTimeoutMs: 1_000, clock });
    const gate = deferred();
    const held = b.execute(() => gate.promise);
    const reason = new Error('caller gone');
    // Another library's policy that runs its operation without checking the signal.
    const careless = {
      execute: <T>(operation: (context: Context) => T | Promise<T>) =>
        Promise.resolve(operation({ signal: AbortSignal.abort(reason), attempt: 1 })),
    };
    const op = vi.fn();
    const call = track(pipeline(careless, b).execute(op));
    await tick();
    expect(call).toMatchObject({ settled: true, ok: false, error: reason });
    expect([b.inFlight, b.queued]).toEqual([1, 0]);
    expect(clock.pendingTimers).toBe(0);
    gate.resolve(0);
    await held;
    expect(op).not.toHaveBeenCalled();
  });

  it('drains a deep queue of synchronous operations without growing the stack', async () => {
    const b = bulkhead({ maxConcurrent: 1, maxQueue: 100_000 });
    const n = 50_000;
    const calls: Promise<number>[] = [];
    for (let i = 0; i < n; i++) calls.push(b.execute(() => i));
    const results = await Promise.all(calls);
    expect(results[n - 1]).toBe(n - 1);
    expect([b.inFlight, b.queued]).toEqual([0, 0]);
  });
});

describe('bulkhead: leaving the queue', () => {
  it('a queued caller that aborts leaves at once with the reason and never takes a slot', async () => {
    const b = bulkhead({ maxConcurrent: 1, maxQueue: 3 });
    const gate = deferred();
    const held = b.execute(() => gate.promise);
    const controller = new AbortController();
    const op = vi.fn();
    const leaving = track(b.execute(op, { signal: controller.signal }));
    const next = b.execute(() => 'next');
    expect(b.queued).toBe(2);
    const reason = new Error('user left');
    controller.abort(reason);
    await tick();
    expect(leaving).toMatchObject({ settled: true, ok: false, error: reason });
    expect(getEventListeners(controller.signal, 'abort')).toHaveLength(0);
    expect([b.inFlight, b.queued]).toEqual([1, 1]);
    gate.resolve(0);
    await expect(next).resolves.toBe('next');
    expect(op).not.toHaveBeenCalled();
    expect([b.inFlight, b.queued]).toEqual([0, 0]);
    await held;
  });

  it('the abort listener is removed when a waiter gets its slot', async () => {
    const b = bulkhead({ maxConcurrent: 1, maxQueue: 1 });
    const gate = deferred();
    const held = b.execute(() => gate.promise);
    const controller = new AbortController();
    const added = vi.spyOn(controller.signal, 'addEventListener');
    const removed = vi.spyOn(controller.signal, 'removeEventListener');
    const queued = b.execute(() => 'ran', { signal: controller.signal });
    expect(added).toHaveBeenCalledTimes(1);
    gate.resolve(0);
    await expect(queued).resolves.toBe('ran');
    expect(removed).toHaveBeenCalledWith('abort', added.mock.calls[0]![1]);
    await held;
  });

  it('a queued caller leaves after exactly queueTimeoutMs with reason queue-timeout', async () => {
    const clock = new FakeClock();
    const rejected: BulkheadRejectedEvent[] = [];
    const b = bulkhead({ maxConcurrent: 1, maxQueue: 2, queueTimeoutMs: 100, clock });
    b.onRejected((e) => rejected.push(e));
    const gate = deferred();
    const held = b.execute(() => gate.promise);
    const op = vi.fn();
    const waiting = track(b.execute(op));
    await clock.advance(99);
    expect(waiting.settled).toBe(false);
    await clock.advance(1);
    expect(waiting.settled).toBe(true);
    expect(isBulkheadFullError(waiting.error)).toBe(true);
    expect(isTimeoutError(waiting.error)).toBe(false);
    expect(waiting.error).toMatchObject({
      reason: 'queue-timeout',
      kind: 'overloaded',
      queueTimeoutMs: 100,
      message: expect.stringMatching(/queue timeout/),
    });
    expect(rejected).toEqual([{ policy: 'bulkhead', reason: 'queue-timeout', error: waiting.error }]);
    expect([b.inFlight, b.queued]).toEqual([1, 0]);
    gate.resolve(0);
    await held;
    expect(op).not.toHaveBeenCalled();
    expect(b.inFlight).toBe(0);
    expect(clock.pendingTimers).toBe(0);
  });

  it('every queue timeout shares one timer; each waiter expires at its own time', async () => {
    const clock = new FakeClock();
    const b = bulkhead({ maxConcurrent: 1, maxQueue: 100, queueTimeoutMs: 50, clock });
    const gate = deferred();
    const held = b.execute(() => gate.promise);
    const expiredAt: number[] = [];
    const waits: Promise<unknown>[] = [];
    for (let i = 0; i < 10; i++) {
      waits.push(b.execute(() => 'x').catch(() => expiredAt.push(clock.now())));
      await clock.advance(5);
    }
    expect(clock.pendingTimers).toBe(1);
    await clock.advance(100);
    await Promise.all(waits);
    expect(expiredAt).toEqual(Array.from({ length: 10 }, (_, i) => 50 + 5 * i));
    expect(clock.pendingTimers).toBe(0);
    gate.resolve(0);
    await held;
  });

  it('a waiter granted a slot before its timeout never times out later', async () => {
    const clock = new FakeClock();
    const b = bulkhead({ maxConcurrent: 1, maxQueue: 1, queueTimeoutMs: 100, clock });
    const gate = deferred();
    const held = b.execute(() => gate.promise);
    const work = deferred<string>();
    const waiter = track(b.execute(() => work.promise));
    await clock.advance(50);
    gate.resolve(0);
    await held;
    expect(b.inFlight).toBe(1);
    await clock.advance(200); // past its queue deadline while running
    expect(waiter.settled).toBe(false);
    work.resolve('done');
    await tick();
    expect(waiter).toMatchObject({ ok: true, value: 'done' });
    expect([b.inFlight, b.queued, clock.pendingTimers]).toEqual([0, 0, 0]);
  });

  it('a clock that goes backwards still times every waiter (own timer), and grants clear it', async () => {
    const fake = new FakeClock(1_000);
    let skew = 0;
    const clock = {
      now: () => fake.now() - skew,
      sleep: (ms: number, signal?: AbortSignal) => fake.sleep(ms, signal),
      setTimer: (callback: () => void, ms: number) => fake.setTimer(callback, ms),
      clearTimer: (handle: unknown) => fake.clearTimer(handle),
    };
    const b = bulkhead({ maxConcurrent: 1, maxQueue: 3, queueTimeoutMs: 100, clock });
    const gate = deferred();
    const held = b.execute(() => gate.promise);
    const first = track(b.execute(() => 'first'));
    skew = 50; // the next deadline is earlier than the queued one
    const second = track(b.execute(() => 'second'));
    skew = 80;
    const third = track(b.execute(() => 'third'));
    expect(fake.pendingTimers).toBe(3); // the shared timer and two of their own
    await fake.advance(100);
    expect([first.settled, second.settled, third.settled]).toEqual([false, true, true]);
    // the first waits until the (skewed) clock itself reaches its deadline
    await fake.advance(79);
    expect(first.settled).toBe(false);
    await fake.advance(1);
    expect(first.settled).toBe(true);
    expect([first.error, second.error, third.error].every(isBulkheadFullError)).toBe(true);
    // and a waiter with its own timer that gets a slot clears it
    skew = 0;
    const fourth = track(b.execute(() => 'fourth'));
    skew = 90;
    const fifth = track(b.execute(() => 'fifth'));
    gate.resolve(0);
    await held;
    await tick();
    expect([fourth.value, fifth.value]).toEqual(['fourth', 'fifth']);
    await fake.advance(100);
    expect(fake.pendingTimers).toBe(0);
    expect([b.inFlight, b.queued]).toEqual([0, 0]);
  });

  it('a timeout outside the bulkhead makes a queued caller leave with the TimeoutError', async () => {
    const clock = new FakeClock();
    const b = bulkhead({ maxConcurrent: 1, maxQueue: 1, clock });
    const policy = pipeline(timeout(100, { clock }), b);
    const gate = deferred();
    const held = b.execute(() => gate.promise);
    const op = vi.fn();
    const call = track(policy.execute(op));
    await tick();
    expect(b.queued).toBe(1);
    await clock.advance(100);
    expect(isTimeoutError(call.error)).toBe(true);
    expect([b.inFlight, b.queued]).toEqual([1, 0]);
    gate.resolve(0);
    await held;
    expect(op).not.toHaveBeenCalled();
  });

  it('many waiters leaving from the middle keep the order and the counts right', async () => {
    const b = bulkhead({ maxConcurrent: 1, maxQueue: 20_000 });
    const gate = deferred();
    const held = b.execute(() => gate.promise);
    const controllers: AbortController[] = [];
    const started: number[] = [];
    const calls: Promise<unknown>[] = [];
    for (let i = 0; i < 10_000; i++) {
      const controller = new AbortController();
      controllers.push(controller);
      calls.push(b.execute(() => started.push(i), { signal: controller.signal }).catch(() => {}));
    }
    for (let i = 1; i < 10_000; i += 2) controllers[i]!.abort(new Error('left'));
    expect(b.queued).toBe(5_000);
    gate.resolve(0);
    await Promise.all([held, ...calls]);
    expect(started).toEqual(Array.from({ length: 5_000 }, (_, i) => i * 2));
    expect([b.inFlight, b.queued]).toEqual([0, 0]);
  });
});

describe('bulkhead: the slot is released exactly once', () => {
  type Ending = 'resolve' | 'reject' | 'sync-throw' | 'sync-value' | 'abort';
  const endings: Ending[] = ['resolve', 'reject', 'sync-throw', 'sync-value', 'abort'];

  it.each([
    [false, false],
    [true, false],
    [false, true],
    [true, true],
  ])(
    'every ending frees its slot once (via pipeline: %s, queued first: %s)',
    async (viaPipeline, queuedFirst) => {
      const b = bulkhead({ maxConcurrent: endings.length, maxQueue: endings.length });
      const target = viaPipeline ? pipeline(b) : b;
      const blocker = deferred();
      const blockers = queuedFirst
        ? Array.from({ length: endings.length }, () => b.execute(() => blocker.promise))
        : [];
      const gate = deferred();
      const controllers = endings.map(() => new AbortController());
      const calls = endings.map((ending, i) =>
        target
          .execute(
            (ctx) => {
              switch (ending) {
                case 'resolve':
                  return gate.promise.then(() => 'value');
                case 'reject':
                  return gate.promise.then(() => {
                    throw new Error('failed');
                  });
                case 'sync-throw':
                  throw new Error('sync');
                case 'sync-value':
                  return 'sync';
                case 'abort':
                  return honoursSignal(ctx);
              }
            },
            { signal: controllers[i]!.signal },
          )
          .then(
            () => true,
            () => false,
          ),
      );
      if (queuedFirst) {
        expect(b.queued).toBe(endings.length);
        blocker.resolve(0);
        await Promise.all(blockers);
      }
      await tick();
      expect(b.inFlight).toBe(3);
      gate.resolve(0);
      controllers[4]!.abort(new Error('stop'));
      expect(await Promise.all(calls)).toEqual([true, false, false, true, false]);
      expect([b.inFlight, b.queued]).toEqual([0, 0]);
      // Exactly once: full capacity again, and not one more.
      const hold = deferred();
      const held = Array.from({ length: endings.length * 2 }, () => b.execute(() => hold.promise));
      expect([b.inFlight, b.queued]).toEqual([endings.length, endings.length]);
      await expect(b.execute(() => 1)).rejects.toMatchObject({ reason: 'queue-full' });
      hold.resolve(0);
      await Promise.all(held);
      expect([b.inFlight, b.queued]).toEqual([0, 0]);
    },
  );

  it('a throwing onRejected listener never breaks the refusal', async () => {
    const reported: unknown[] = [];
    const previous = setListenerErrorHandler((e) => reported.push(e));
    try {
      const b = bulkhead({
        maxConcurrent: 1,
        maxQueue: 0,
        onRejected: () => {
          throw new Error('listener bug');
        },
      });
      const gate = deferred();
      const held = b.execute(() => gate.promise);
      await expect(b.execute(() => 1)).rejects.toBeInstanceOf(BulkheadFullError);
      expect(reported).toHaveLength(1);
      gate.resolve(0);
      await held;
    } finally {
      setListenerErrorHandler(previous);
    }
  });
});

describe('bulkhead: churn (property)', () => {
  it('bounds hold, nobody who left ever runs, FIFO holds, and everything drains to 0/0', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.record({
          maxConcurrent: fc.integer({ min: 1, max: 4 }),
          maxQueue: fc.integer({ min: 0, max: 6 }),
          queueTimeoutMs: fc.option(fc.integer({ min: 1, max: 40 }), { nil: undefined }),
        }),
        fc.array(
          fc.record({
            startAt: fc.integer({ min: 0, max: 60 }),
            durationMs: fc.integer({ min: 0, max: 30 }),
            abortAfterMs: fc.option(fc.integer({ min: 0, max: 50 }), { nil: undefined }),
            fails: fc.boolean(),
            viaPipeline: fc.boolean(),
          }),
          { maxLength: 40 },
        ),
        async (limits, calls) => {
          const clock = new FakeClock();
          const b = bulkhead({ ...limits, clock });
          let running = 0;
          let peakRunning = 0;
          let peakQueued = 0;
          let seq = 0;
          const startOrder: number[] = [];
          const outcomes: Promise<string>[] = [];
          const check = () => {
            expect(b.inFlight).toBeLessThanOrEqual(limits.maxConcurrent);
            expect(b.queued).toBeLessThanOrEqual(limits.maxQueue);
            expect(running).toBeLessThanOrEqual(b.inFlight);
            peakQueued = Math.max(peakQueued, b.queued);
          };
          for (const call of calls) {
            clock.setTimer(() => {
              const id = seq++;
              const controller = new AbortController();
              let left = false;
              const target = call.viaPipeline ? pipeline(b) : b;
              const op = async ({ signal }: Context) => {
                expect(left).toBe(false);
                startOrder.push(id);
                running++;
                peakRunning = Math.max(peakRunning, running);
                check();
                try {
                  await clock.sleep(call.durationMs, signal);
                  if (call.fails) throw new Error('failed');
                  return 'ok';
                } finally {
                  running--;
                }
              };
              outcomes.push(
                target.execute(op, { signal: controller.signal }).then(
                  () => 'ok',
                  (e: unknown) => {
                    if (isBulkheadFullError(e)) {
                      left = true;
                      return e.reason;
                    }
                    return 'failed';
                  },
                ),
              );
              check();
              if (call.abortAfterMs !== undefined) {
                clock.setTimer(() => {
                  controller.abort(new Error('abort'));
                  check();
                }, call.abortAfterMs);
              }
            }, call.startAt);
          }
          await clock.advance(500);
          const results = await Promise.all(outcomes);
          expect(results).toHaveLength(calls.length);
          expect(peakRunning).toBeLessThanOrEqual(limits.maxConcurrent);
          expect(peakQueued).toBeLessThanOrEqual(limits.maxQueue);
          // FIFO: calls start in the order they arrived.
          expect(startOrder).toEqual([...startOrder].sort((x, y) => x - y));
          if (limits.queueTimeoutMs === undefined) expect(results).not.toContain('queue-timeout');
          expect([b.inFlight, b.queued]).toEqual([0, 0]);
          expect(clock.pendingTimers).toBe(0);
        },
      ),
      { numRuns: 200 },
    );
  });
});
