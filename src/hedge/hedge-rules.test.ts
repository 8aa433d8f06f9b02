/**
 * The hedge's rules at their edges: what stops further tries (a caller abort from inside a try,
 * a refused budget, the deadline), when the next try starts after a failure, which timers it arms
 * and clears, what its events and errors carry, and how it treats a broken inner step, a caller
 * abort that happens before it runs, and a hedge nested in another.
 */
import { describe, expect, it, vi } from 'vitest';
import type { Clock, TimerHandle } from '../core/clock.js';
import type { Context } from '../core/context.js';
import { ResilienceError } from '../core/errors.js';
import { pipeline } from '../core/pipeline.js';
import { type ComposablePolicy, type Policy, runStep, type Step } from '../core/policy.js';
import type { FailureEvent } from '../core/policy-events.js';
import { retryBudget } from '../retry/budget.js';
import { FakeClock } from '../testing/fake-clock.js';
import { HedgeCanceledError, isHedgeCanceledError } from './errors.js';
import { type HedgeEvent, hedge } from './hedge.js';

const transient = (message: string, retryAfterMs?: number) =>
  new ResilienceError(message, { code: 'E_FLAKY', kind: 'transient', retryAfterMs });
const badRequest = () => Object.assign(new Error('bad request'), { status: 400 });

/** Runs until its signal aborts, then rejects with the signal's reason. */
const untilAborted = ({ signal }: Context) =>
  new Promise<never>((_, reject) => {
    if (signal.aborted) reject(signal.reason);
    signal.addEventListener('abort', () => reject(signal.reason), { once: true });
  });

type Settled = { ok: true; value: unknown; at: number } | { ok: false; error: unknown; at: number };

/** Captures when and how a call settles, without an unhandled rejection. */
function track(clock: FakeClock, promise: Promise<unknown>) {
  const state: { result: Settled | undefined } = { result: undefined };
  promise.then(
    (value) => {
      state.result = { ok: true, value, at: clock.now() };
    },
    (error: unknown) => {
      state.result = { ok: false, error, at: clock.now() };
    },
  );
  return state;
}

/** Lets every pending promise callback run, without moving the fake clock. */
const flush = () => new Promise<void>((resolve) => setImmediate(resolve));

describe('hedge: what stops further tries', () => {
  it.each([0, 100])(
    'a try that aborts the caller as it starts ends the call: no other try starts, no timer is left (delayMs %i)',
    async (delayMs) => {
      const clock = new FakeClock();
      const caller = new AbortController();
      const op = vi.fn((ctx: Context) => {
        caller.abort('stop');
        return untilAborted(ctx);
      });
      const call = track(
        clock,
        hedge({ attempts: 3, delayMs, clock }).execute(op, { signal: caller.signal }),
      );
      expect(clock.pendingTimers).toBe(0);
      await clock.advance(1_000);
      expect(call.result).toEqual({ ok: false, error: 'stop', at: 0 });
      expect(op).toHaveBeenCalledTimes(1);
    },
  );

  it('delayMs 0 with a budget for one hedge: two tries start, the refusal is reported once, no timer is armed', async () => {
    const clock = new FakeClock();
    const budget = retryBudget({ ratio: 0, minPerSecond: 0.1, windowMs: 10_000, clock });
    const exhausted = vi.fn();
    budget.onExhausted(exhausted);
    const caller = new AbortController();
    const op = vi.fn(untilAborted);
    const call = track(
      clock,
      hedge({ attempts: 4, delayMs: 0, budget, clock }).execute(op, { signal: caller.signal }),
    );
    expect(op.mock.calls.map(([ctx]) => ctx.attempt)).toEqual([1, 2]);
    expect(exhausted).toHaveBeenCalledTimes(1);
    expect(clock.pendingTimers).toBe(0);
    caller.abort('done');
    await clock.advance(0);
    expect(call.result).toMatchObject({ ok: false, error: 'done' });
  });

  it.each([
    ['fails', undefined],
    ['fails asking for a 50 ms pause', 50],
  ])(
    'once the budget refused a hedge, none starts in that call, even after the budget earned one: the first try %s, the call fails with it at once',
    async (_case, retryAfterMs) => {
      const clock = new FakeClock();
      const budget = retryBudget({ ratio: 1, minPerSecond: 0, clock });
      const policy = hedge({ attempts: 3, delayMs: 100, budget, clock });
      const flaky = transient('slow failure', retryAfterMs);
      const op = vi.fn(() => clock.sleep(300).then(() => Promise.reject(flaky)));
      const call = track(clock, policy.execute(op));
      await clock.advance(150); // the hedge at 100 was refused
      expect(await policy.execute(() => 'quick')).toBe('quick'); // deposits: a hedge earned
      expect(budget.available).toBe(1);
      await clock.advance(1_000);
      expect(call.result).toEqual({ ok: false, error: flaky, at: 300 });
      expect(op).toHaveBeenCalledTimes(1);
      expect(budget.available).toBe(1);
    },
  );

  it('arms no timer for a try that would start exactly at the deadline', async () => {
    const clock = new FakeClock();
    const caller = new AbortController();
    const op = vi.fn(untilAborted);
    const call = track(
      clock,
      hedge({ attempts: 3, delayMs: 100, clock }).execute(op, { signal: caller.signal, deadline: 200 }),
    );
    await clock.advance(100);
    expect(op).toHaveBeenCalledTimes(2);
    expect(clock.pendingTimers).toBe(0); // the third try would start at 200: the deadline
    caller.abort('enough');
    await clock.advance(0);
    expect(call.result).toEqual({ ok: false, error: 'enough', at: 100 });
  });

  it('a failure starts the next try in the same turn, without waiting for any timer', async () => {
    const clock = new FakeClock();
    const op = vi.fn(({ attempt }: Context) =>
      attempt === 1 ? Promise.reject(transient('at once')) : Promise.resolve(`value ${attempt}`),
    );
    const call = track(clock, hedge({ attempts: 2, delayMs: 100, clock }).execute(op));
    await flush();
    expect(op).toHaveBeenCalledTimes(2);
    expect(call.result).toEqual({ ok: true, value: 'value 2', at: 0 });
  });
});

describe('hedge: events, errors and the clock', () => {
  it('a delay hedge event has no error property; a failure hedge event has the error', async () => {
    const clock = new FakeClock();
    const events: HedgeEvent[] = [];
    const flaky = transient('reset');
    const op = ({ attempt, signal }: Context) =>
      attempt === 2
        ? Promise.reject(flaky)
        : attempt === 3
          ? Promise.resolve('third')
          : untilAborted({ signal, attempt });
    const call = track(
      clock,
      hedge({ attempts: 3, delayMs: 100, clock, onHedge: (e) => events.push(e) }).execute(op),
    );
    await clock.advance(100);
    expect(call.result).toEqual({ ok: true, value: 'third', at: 100 });
    expect(events[0]).toStrictEqual({ attempt: 2, trigger: 'delay', delayMs: 100 });
    expect(events[1]).toStrictEqual({ attempt: 3, trigger: 'failure', delayMs: 0, error: flaky });
  });

  it('HedgeCanceledError says which try settled the call, and may be shown to clients', () => {
    const error = new HedgeCanceledError(3);
    expect(error.message).toBe('hedge: try 3 settled the call; this try is no longer needed');
    expect(error).toMatchObject({ settledBy: 3, code: 'ERR_HEDGE_CANCELED', kind: 'canceled', expose: true });
  });

  it('only ever clears timers the clock gave out', async () => {
    const clock = new FakeClock();
    const issued = new Set<TimerHandle>();
    const foreign: unknown[] = [];
    const strict: Clock = {
      now: () => clock.now(),
      sleep: (ms, signal) => clock.sleep(ms, signal),
      setTimer: (callback, ms) => {
        const handle = clock.setTimer(callback, ms);
        issued.add(handle);
        return handle;
      },
      clearTimer: (handle) => {
        if (!issued.has(handle)) foreign.push(handle);
        clock.clearTimer(handle);
      },
    };
    const policy = hedge({ attempts: 3, delayMs: 100, clock: strict });
    const caller = new AbortController();
    const calls = [
      policy.execute(() => 'at once'),
      policy.execute(({ attempt }) => (attempt === 1 ? Promise.reject(transient('a')) : 'b')),
      policy.execute(() => Promise.reject(badRequest())),
      policy.execute(({ attempt }) => clock.sleep(attempt === 1 ? 500 : 10).then(() => attempt)),
      policy.execute(untilAborted, { signal: caller.signal }),
    ].map((p) => p.catch((e: unknown) => e));
    await clock.advance(150);
    caller.abort('gone');
    await clock.advance(1_000);
    expect(await Promise.all(calls)).toMatchObject(['at once', 'b', { status: 400 }, 2, 'gone']);
    expect(foreign).toEqual([]);
  });
});

describe('hedge: around the policy', () => {
  /** A policy of another kind that aborts the caller, then runs the rest of the pipeline all the same. */
  const abortsThenRuns = (caller: AbortController): Policy => ({
    execute: async (operation, options) => {
      caller.abort('left while queued');
      return operation({ signal: options!.signal!, attempt: 1 });
    },
  });

  it.each([1, 2])(
    'a caller that aborted before the hedge runs gets its reason; no try starts (attempts %i)',
    async (attempts) => {
      const clock = new FakeClock();
      const caller = new AbortController();
      const op = vi.fn(() => 'never');
      const policy = pipeline(abortsThenRuns(caller), hedge({ attempts, delayMs: 100, clock }));
      await expect(policy.execute(op, { signal: caller.signal })).rejects.toBe('left while queued');
      expect(op).not.toHaveBeenCalled();
      expect(clock.pendingTimers).toBe(0);
    },
  );

  it.each([
    [
      'throws',
      (boom: Error): Promise<never> => {
        throw boom;
      },
    ],
    ['rejects', (boom: Error) => Promise.reject(boom)],
  ])('an inner step that %s (a broken policy) fails its try like any failure', async (_case, breakWith) => {
    const clock = new FakeClock();
    const boom = new Error('broken step');
    const broken: ComposablePolicy = {
      execute: () => Promise.reject(new Error('unused')),
      [runStep]: <T>(next: Step<T>, ctx: Context) => (ctx.attempt === 1 ? breakWith(boom) : next(ctx)),
    };
    const op = vi.fn(({ attempt }: Context) => `value ${attempt}`);
    const call = track(clock, pipeline(hedge({ attempts: 2, delayMs: 100, clock }), broken).execute(op));
    await clock.advance(0);
    expect(call.result).toEqual({ ok: true, value: 'value 2', at: 0 });
    expect(op).toHaveBeenCalledTimes(1);
  });

  it('nested hedges: the tries inside a losing outer try are aborted with the outer call’s reason', async () => {
    const clock = new FakeClock();
    const policy = pipeline(
      hedge({ attempts: 2, delayMs: 100, clock }),
      hedge({ attempts: 2, delayMs: 1_000, clock }),
    );
    const signals: AbortSignal[] = [];
    const op = (ctx: Context) => {
      signals.push(ctx.signal);
      return signals.length === 1 ? untilAborted(ctx) : clock.sleep(10).then(() => 'fast');
    };
    const call = track(clock, policy.execute(op));
    await clock.advance(110);
    expect(call.result).toEqual({ ok: true, value: 'fast', at: 110 });
    const reason = signals[0]!.reason;
    expect(isHedgeCanceledError(reason)).toBe(true);
    expect((reason as HedgeCanceledError).settledBy).toBe(2); // the outer call's winner
  });

  it('onFailure says handled when the call failed after starting a hedge, not when one try ended it', async () => {
    const clock = new FakeClock();
    const failures: FailureEvent[] = [];
    const policy = hedge({ attempts: 2, delayMs: 100, clock, onFailure: (e) => failures.push(e) });
    await policy.execute(() => Promise.reject(transient('every try'))).catch(() => {});
    await policy.execute(() => Promise.reject(badRequest())).catch(() => {});
    expect(failures.map((e) => [e.kind, e.handled])).toEqual([
      ['transient', true],
      ['invalid', false],
    ]);
  });

  it('attempts 1 with a budget: a success deposits, a failure does not', async () => {
    const clock = new FakeClock();
    const budget = retryBudget({ ratio: 1, minPerSecond: 0, clock });
    const policy = hedge({ attempts: 1, budget, clock });
    await policy.execute(() => Promise.reject(transient('no'))).catch(() => {});
    expect(budget.available).toBe(0);
    expect(await policy.execute(() => 'yes')).toBe('yes');
    expect(budget.available).toBe(1);
  });
});
