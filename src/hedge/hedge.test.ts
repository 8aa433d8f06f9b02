import { afterEach, describe, expect, expectTypeOf, it, vi } from 'vitest';
import type { Context } from '../core/context.js';
import { ResilienceError, TimeoutError } from '../core/errors.js';
import { setListenerErrorHandler } from '../core/events.js';
import { pipeline } from '../core/pipeline.js';
import { constant } from '../retry/backoff.js';
import { retryBudget } from '../retry/budget.js';
import { retry } from '../retry/retry.js';
import { FakeClock } from '../testing/fake-clock.js';
import { timeout } from '../timeout/timeout.js';
import { HedgeCanceledError, isHedgeCanceledError } from './errors.js';
import { type HedgeEvent, hedge } from './hedge.js';

const transient = (message: string, retryAfterMs?: number) =>
  new ResilienceError(message, { code: 'E_FLAKY', kind: 'transient', retryAfterMs });
const badRequest = (message = 'bad request') => Object.assign(new Error(message), { status: 400 });

/** How one try behaves: settle after `ms` with a value or an error; `ms: Infinity` runs until aborted. */
type Plan = { readonly ms: number; readonly value?: string; readonly error?: unknown };

interface TryRecord {
  readonly attempt: number;
  readonly startedAt: number;
  readonly signal: AbortSignal;
  settledAt?: number;
}

/**
 * A simulated dependency whose tries follow a script (indexed by `context.attempt`). Every try
 * honours its signal: an abort ends it at once with the signal's reason.
 */
function dependency(clock: FakeClock, plans: readonly Plan[]) {
  const tries: TryRecord[] = [];
  const op = vi.fn(async (ctx: Context): Promise<string> => {
    const plan = plans[ctx.attempt - 1] ?? plans[plans.length - 1]!;
    const record: TryRecord = { attempt: ctx.attempt, startedAt: clock.now(), signal: ctx.signal };
    tries.push(record);
    if (plan.ms === Infinity) {
      await new Promise((_, reject) => {
        if (ctx.signal.aborted) reject(ctx.signal.reason);
        ctx.signal.addEventListener('abort', () => reject(ctx.signal.reason), { once: true });
      });
    } else {
      await clock.sleep(plan.ms, ctx.signal);
    }
    record.settledAt = clock.now();
    if (plan.error !== undefined) throw plan.error;
    return plan.value ?? `value ${ctx.attempt}`;
  });
  return { op, tries };
}

type Settled<T> = { ok: true; value: T; at: number } | { ok: false; error: unknown; at: number };

/** Captures when and how a call settles, without an unhandled rejection. */
function track<T>(clock: FakeClock, promise: Promise<T>) {
  const state: { result: Settled<T> | undefined } = { result: undefined };
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

const never: Plan = { ms: Infinity };

afterEach(() => {
  vi.restoreAllMocks();
});

describe('hedge: winners and losers', () => {
  it('the first success wins and every other in-flight try is aborted with HedgeCanceledError', async () => {
    const clock = new FakeClock();
    const { op, tries } = dependency(clock, [never, never, { ms: 50, value: 'fast' }]);
    const call = track(clock, hedge({ attempts: 3, delayMs: 100, clock }).execute(op));
    await clock.advance(249);
    expect(call.result).toBeUndefined();
    await clock.advance(1);
    expect(call.result).toEqual({ ok: true, value: 'fast', at: 250 });
    expect(tries.map((t) => t.attempt)).toEqual([1, 2, 3]);
    const [first, second, third] = tries;
    for (const loser of [first!, second!]) {
      expect(loser.signal.aborted).toBe(true);
      expect(isHedgeCanceledError(loser.signal.reason)).toBe(true);
      expect(loser.signal.reason).toBeInstanceOf(HedgeCanceledError);
      expect((loser.signal.reason as HedgeCanceledError).settledBy).toBe(3);
      expect((loser.signal.reason as HedgeCanceledError).kind).toBe('canceled');
      expect((loser.signal.reason as HedgeCanceledError).code).toBe('ERR_HEDGE_CANCELED');
    }
    expect(third!.signal.aborted).toBe(false);
    expect(clock.pendingTimers).toBe(0);
  });

  it('a loser that ignores its signal cannot change the result, and its late value is dropped', async () => {
    const clock = new FakeClock();
    const signals: AbortSignal[] = [];
    const op = vi.fn(async ({ attempt, signal }: Context) => {
      signals.push(signal);
      await clock.sleep(attempt === 1 ? 500 : 50); // ignores the signal
      return `value ${attempt}`;
    });
    const budget = retryBudget({ ratio: 1, minPerSecond: 0.1, windowMs: 10_000, clock });
    const call = track(clock, hedge({ attempts: 2, delayMs: 100, budget, clock }).execute(op));
    await clock.advance(150);
    expect(call.result).toEqual({ ok: true, value: 'value 2', at: 150 });
    expect(signals[0]!.aborted).toBe(true);
    await clock.advance(1_000);
    expect(call.result).toEqual({ ok: true, value: 'value 2', at: 150 });
    expect(op).toHaveBeenCalledTimes(2);
    // One hedge withdrawn, one success deposited: the loser's late value counts for nothing.
    expect(budget.available).toBe(1);
  });

  it('a first try that settles before delayMs starts no hedge and leaves no timer', async () => {
    const clock = new FakeClock();
    const events: HedgeEvent[] = [];
    const { op, tries } = dependency(clock, [{ ms: 99, value: 'quick' }]);
    const policy = hedge({ attempts: 3, delayMs: 100, clock, onHedge: (e) => events.push(e) });
    const call = track(clock, policy.execute(op));
    expect(clock.pendingTimers).toBe(2); // the stagger timer and the operation's own sleep
    await clock.advance(99);
    expect(call.result).toEqual({ ok: true, value: 'quick', at: 99 });
    expect(clock.pendingTimers).toBe(0);
    await clock.advance(1_000);
    expect(tries).toHaveLength(1);
    expect(events).toEqual([]);
  });

  it('creates no AbortController for a try that never reads its signal, and never calls abort()', async () => {
    const clock = new FakeClock();
    const Original = globalThis.AbortController;
    let created = 0;
    const abort = vi.spyOn(Original.prototype, 'abort');
    globalThis.AbortController = class extends Original {
      constructor() {
        super();
        created++;
      }
    };
    try {
      const policy = hedge({ attempts: 3, delayMs: 100, clock });
      const call = track(
        clock,
        policy.execute(() => clock.sleep(10).then(() => 'ok')),
      );
      await clock.advance(10);
      expect(call.result).toEqual({ ok: true, value: 'ok', at: 10 });
      // Losers that never read their signal are not given a controller either.
      const lazy = track(
        clock,
        policy.execute(({ attempt }) => clock.sleep(attempt === 1 ? 1_000 : 10).then(() => attempt)),
      );
      await clock.advance(110);
      expect(lazy.result).toEqual({ ok: true, value: 2, at: 120 });
      expect(created).toBe(0);
      expect(abort).not.toHaveBeenCalled();
      await clock.advance(1_000);
    } finally {
      globalThis.AbortController = Original;
    }
  });

  it('each try gets its own signal, a child of the caller signal, and sees context.attempt = n', async () => {
    const clock = new FakeClock();
    const caller = new AbortController();
    const { op, tries } = dependency(clock, [never, never, { ms: 10 }]);
    const call = track(
      clock,
      hedge({ attempts: 3, delayMs: 100, clock }).execute(op, { signal: caller.signal }),
    );
    await clock.advance(210);
    expect(call.result).toEqual({ ok: true, value: 'value 3', at: 210 });
    expect(tries.map((t) => t.attempt)).toEqual([1, 2, 3]);
    const signals = new Set(tries.map((t) => t.signal));
    expect(signals.size).toBe(3);
    expect(signals.has(caller.signal)).toBe(false);
    expect(caller.signal.aborted).toBe(false); // aborting the losers does not touch the caller
  });
});

describe('hedge: staggered starts', () => {
  it('starts try n at exactly (n - 1) × delayMs while the earlier tries run, and emits onHedge', async () => {
    const clock = new FakeClock(1_000);
    const events: HedgeEvent[] = [];
    const { op, tries } = dependency(clock, [never, never, never, { ms: 40, value: 'last' }]);
    const policy = hedge({ attempts: 4, delayMs: 100, clock });
    const dispose = policy.onHedge((e) => events.push(e));
    const call = track(clock, policy.execute(op));
    await clock.advance(99);
    expect(tries.map((t) => t.startedAt)).toEqual([1_000]);
    await clock.advance(1);
    expect(tries.map((t) => t.startedAt)).toEqual([1_000, 1_100]);
    await clock.advance(100);
    expect(tries.map((t) => t.startedAt)).toEqual([1_000, 1_100, 1_200]);
    await clock.advance(100);
    expect(tries.map((t) => t.startedAt)).toEqual([1_000, 1_100, 1_200, 1_300]);
    expect(clock.pendingTimers).toBe(1); // the last try's sleep: no stagger timer after the last try
    await clock.advance(40);
    expect(call.result).toEqual({ ok: true, value: 'last', at: 1_340 });
    expect(events).toEqual([
      { attempt: 2, trigger: 'delay', delayMs: 100 },
      { attempt: 3, trigger: 'delay', delayMs: 100 },
      { attempt: 4, trigger: 'delay', delayMs: 100 },
    ]);
    dispose();
    await clock.advance(1_000);
    expect(tries).toHaveLength(4);
  });

  it('delayMs: 0 starts every try at once', async () => {
    const clock = new FakeClock();
    const events: HedgeEvent[] = [];
    const { op, tries } = dependency(clock, [{ ms: 30 }, { ms: 10 }, { ms: 20 }]);
    const call = track(
      clock,
      hedge({ attempts: 3, delayMs: 0, clock, onHedge: (e) => events.push(e) }).execute(op),
    );
    expect(tries.map((t) => [t.attempt, t.startedAt])).toEqual([
      [1, 0],
      [2, 0],
      [3, 0],
    ]);
    expect(events.map((e) => [e.attempt, e.trigger, e.delayMs])).toEqual([
      [2, 'delay', 0],
      [3, 'delay', 0],
    ]);
    await clock.advance(10);
    expect(call.result).toEqual({ ok: true, value: 'value 2', at: 10 });
    expect(tries[0]!.signal.aborted).toBe(true);
    expect(tries[2]!.signal.aborted).toBe(true);
    expect(clock.pendingTimers).toBe(0);
  });

  it('a non-fatal failure starts the next try at once; the stagger resumes from there', async () => {
    const clock = new FakeClock();
    const events: HedgeEvent[] = [];
    const flaky = transient('reset');
    const { op, tries } = dependency(clock, [{ ms: 30, error: flaky }, never, { ms: 5, value: 'third' }]);
    const call = track(
      clock,
      hedge({ attempts: 3, delayMs: 100, clock, onHedge: (e) => events.push(e) }).execute(op),
    );
    await clock.advance(30);
    expect(tries.map((t) => t.startedAt)).toEqual([0, 30]); // not 100
    await clock.advance(99);
    expect(tries).toHaveLength(2);
    await clock.advance(1);
    expect(tries.map((t) => t.startedAt)).toEqual([0, 30, 130]);
    await clock.advance(5);
    expect(call.result).toEqual({ ok: true, value: 'third', at: 135 });
    expect(events).toEqual([
      { attempt: 2, trigger: 'failure', delayMs: 0, error: flaky },
      { attempt: 3, trigger: 'delay', delayMs: 100 },
    ]);
    expect(clock.pendingTimers).toBe(0);
  });

  it('an unclassified error (kind internal) is not fatal: it also starts the next try at once', async () => {
    const clock = new FakeClock();
    const { op, tries } = dependency(clock, [{ ms: 10, error: new Error('replica bug') }, { ms: 10 }]);
    const call = track(clock, hedge({ attempts: 2, delayMs: 1_000, clock }).execute(op));
    await clock.advance(20);
    expect(tries.map((t) => t.startedAt)).toEqual([0, 10]);
    expect(call.result).toEqual({ ok: true, value: 'value 2', at: 20 });
  });

  it('a failure that asks for a pause (retryAfterMs) delays the next try by that much (server pushback)', async () => {
    const clock = new FakeClock();
    const events: HedgeEvent[] = [];
    const limited = new ResilienceError('slow down', {
      code: 'E_LIMIT',
      kind: 'rate_limited',
      retryAfterMs: 500,
    });
    const { op, tries } = dependency(clock, [{ ms: 10, error: limited }, { ms: 10 }]);
    const call = track(
      clock,
      hedge({ attempts: 2, delayMs: 100, clock, onHedge: (e) => events.push(e) }).execute(op),
    );
    await clock.advance(100);
    expect(tries).toHaveLength(1); // the 100 ms stagger was replaced by the 500 ms pause
    await clock.advance(409);
    expect(tries).toHaveLength(1);
    await clock.advance(1);
    expect(tries.map((t) => t.startedAt)).toEqual([0, 510]);
    await clock.advance(10);
    expect(call.result).toEqual({ ok: true, value: 'value 2', at: 520 });
    expect(events).toEqual([{ attempt: 2, trigger: 'failure', delayMs: 500, error: limited }]);
  });

  it('an HTTP Retry-After header on the error is honoured the same way', async () => {
    const clock = new FakeClock();
    const busy = Object.assign(new Error('busy'), { status: 503, headers: { 'retry-after': '2' } });
    const { op, tries } = dependency(clock, [{ ms: 0, error: busy }, { ms: 0 }]);
    const call = track(clock, hedge({ attempts: 2, delayMs: 100, clock }).execute(op));
    await clock.advance(2_000);
    expect(tries.map((t) => t.startedAt)).toEqual([0, 2_000]);
    expect(call.result).toEqual({ ok: true, value: 'value 2', at: 2_000 });
  });
});

describe('hedge: failures', () => {
  it('when every try fails, rejects with the LAST error to arrive, not the last try started', async () => {
    const clock = new FakeClock();
    const errors = [transient('first, slow'), transient('second, fast'), transient('third')];
    const { op, tries } = dependency(clock, [
      { ms: 300, error: errors[0] }, // starts 0, fails at 300: the last to arrive
      { ms: 20, error: errors[1] }, // starts 100, fails at 120 -> the third starts at once
      { ms: 80, error: errors[2] }, // starts 120, fails at 200
    ]);
    const call = track(clock, hedge({ attempts: 3, delayMs: 100, clock }).execute(op));
    await clock.advance(299);
    expect(call.result).toBeUndefined();
    await clock.advance(1);
    expect(call.result).toEqual({ ok: false, error: errors[0], at: 300 });
    expect(tries.map((t) => [t.attempt, t.startedAt, t.settledAt])).toEqual([
      [1, 0, 300],
      [2, 100, 120],
      [3, 120, 200],
    ]);
    expect(clock.pendingTimers).toBe(0);
  });

  it('attempts run out: the last failure is returned unchanged (not wrapped)', async () => {
    const clock = new FakeClock();
    const last = transient('b');
    const { op } = dependency(clock, [
      { ms: 10, error: transient('a') },
      { ms: 10, error: last },
    ]);
    const call = track(clock, hedge({ attempts: 2, delayMs: 100, clock }).execute(op));
    await clock.advance(20);
    expect(call.result).toEqual({ ok: false, error: last, at: 20 });
    expect(op).toHaveBeenCalledTimes(2);
  });

  it('a fatal (permanent) failure ends the call at once and aborts the other tries', async () => {
    const clock = new FakeClock();
    const invalid = badRequest();
    const { op, tries } = dependency(clock, [never, { ms: 10, error: invalid }, { ms: 1 }]);
    const call = track(clock, hedge({ attempts: 3, delayMs: 100, clock }).execute(op));
    await clock.advance(110);
    expect(call.result).toEqual({ ok: false, error: invalid, at: 110 });
    expect(tries[0]!.signal.aborted).toBe(true);
    expect((tries[0]!.signal.reason as HedgeCanceledError).settledBy).toBe(2);
    await clock.advance(1_000);
    expect(tries).toHaveLength(2); // the third never starts
    expect(clock.pendingTimers).toBe(0);
  });

  it.each([
    ['unauthorized', 401],
    ['forbidden', 403],
    ['not_found', 404],
    ['conflict', 409],
  ])('%s (HTTP %i) is fatal by default', async (_kind, status) => {
    const clock = new FakeClock();
    const error = Object.assign(new Error('no'), { status });
    const { op } = dependency(clock, [{ ms: 5, error }, { ms: 1 }]);
    const call = track(clock, hedge({ attempts: 2, delayMs: 100, clock }).execute(op));
    await clock.advance(1_000);
    expect(call.result).toEqual({ ok: false, error, at: 5 });
    expect(op).toHaveBeenCalledTimes(1);
  });

  it('isFatal overrides which failures end the call; a throwing isFatal ends it with its own error', async () => {
    const clock = new FakeClock();
    const flaky = transient('treated as fatal');
    const a = dependency(clock, [{ ms: 5, error: flaky }, { ms: 1 }]);
    const strict = hedge({ attempts: 2, delayMs: 100, clock, isFatal: () => true });
    const r1 = track(clock, strict.execute(a.op));
    await clock.advance(200);
    expect(r1.result).toEqual({ ok: false, error: flaky, at: 5 });
    expect(a.op).toHaveBeenCalledTimes(1);

    const lenient = hedge({ attempts: 2, delayMs: 100, clock, isFatal: () => false });
    const b = dependency(clock, [
      { ms: 5, error: badRequest() },
      { ms: 1, value: 'second' },
    ]);
    const r2 = track(clock, lenient.execute(b.op));
    await clock.advance(200);
    expect(r2.result).toMatchObject({ ok: true, value: 'second' });

    const bug = new Error('predicate bug');
    const c = dependency(clock, [{ ms: 5, error: flaky }, never]);
    const broken = hedge({
      attempts: 2,
      delayMs: 100,
      clock,
      isFatal: () => {
        throw bug;
      },
    });
    const r3 = track(clock, broken.execute(c.op));
    await clock.advance(200);
    expect(r3.result).toMatchObject({ ok: false, error: bug });
    expect(clock.pendingTimers).toBe(0);
  });

  it('synchronous throws and synchronous values are tries like any other', async () => {
    const clock = new FakeClock();
    const policy = hedge({ attempts: 2, delayMs: 100, clock });
    const call = track(
      clock,
      policy.execute(({ attempt }) => {
        if (attempt === 1) throw transient('sync');
        return 'sync value';
      }),
    );
    await clock.advance(0);
    expect(call.result).toEqual({ ok: true, value: 'sync value', at: 0 });
    expect(clock.pendingTimers).toBe(0);
  });
});

describe('hedge: cancellation', () => {
  it('a caller abort aborts every try with its reason and rejects with it at once; no try starts after', async () => {
    const clock = new FakeClock();
    const caller = new AbortController();
    const reason = new Error('user left');
    const { op, tries } = dependency(clock, [never, never, never]);
    const call = track(
      clock,
      hedge({ attempts: 3, delayMs: 100, clock }).execute(op, { signal: caller.signal }),
    );
    await clock.advance(150);
    expect(tries).toHaveLength(2);
    caller.abort(reason);
    await clock.advance(0);
    expect(call.result).toEqual({ ok: false, error: reason, at: 150 });
    for (const t of tries) expect(t.signal.reason).toBe(reason);
    expect(clock.pendingTimers).toBe(0);
    await clock.advance(1_000);
    expect(tries).toHaveLength(2);
  });

  it('rejects at once on a caller abort even when the tries ignore their signals', async () => {
    const clock = new FakeClock();
    const caller = new AbortController();
    const op = vi.fn(() => new Promise<string>(() => {}));
    const call = track(
      clock,
      hedge({ attempts: 2, delayMs: 100, clock }).execute(op, { signal: caller.signal }),
    );
    await clock.advance(10);
    caller.abort('gone');
    await clock.advance(0);
    expect(call.result).toEqual({ ok: false, error: 'gone', at: 10 });
    expect(op).toHaveBeenCalledTimes(1);
    expect(clock.pendingTimers).toBe(0);
  });

  it('an onHedge listener that aborts the caller stops the hedge from starting', async () => {
    const clock = new FakeClock();
    const caller = new AbortController();
    const { op, tries } = dependency(clock, [never, never]);
    const policy = hedge({ attempts: 2, delayMs: 100, clock, onHedge: () => caller.abort('enough') });
    const call = track(clock, policy.execute(op, { signal: caller.signal }));
    await clock.advance(100);
    expect(call.result).toEqual({ ok: false, error: 'enough', at: 100 });
    expect(tries).toHaveLength(1);
    expect(tries[0]!.signal.reason).toBe('enough');
    expect(clock.pendingTimers).toBe(0);
  });

  it('an already-aborted signal rejects without calling the operation', async () => {
    const clock = new FakeClock();
    const op = vi.fn(() => 'never');
    const policy = hedge({ attempts: 2, clock });
    await expect(policy.execute(op, { signal: AbortSignal.abort('early') })).rejects.toBe('early');
    await expect(pipeline(policy).execute(op, { signal: AbortSignal.abort('early too') })).rejects.toBe(
      'early too',
    );
    expect(op).not.toHaveBeenCalled();
    expect(clock.pendingTimers).toBe(0);
  });

  it('a try that reads its signal after the caller aborted sees it aborted', async () => {
    const clock = new FakeClock();
    const caller = new AbortController();
    let late: AbortSignal | undefined;
    const call = track(
      clock,
      hedge({ attempts: 2, delayMs: 100, clock }).execute(
        async (ctx) => {
          await clock.sleep(50);
          late = ctx.signal;
          return 'x';
        },
        { signal: caller.signal },
      ),
    );
    caller.abort('stop');
    await clock.advance(50);
    expect(call.result).toMatchObject({ ok: false, error: 'stop' });
    expect(late?.aborted).toBe(true);
    expect(late?.reason).toBe('stop');
  });

  it('stops listening to the caller signal once the call settles', async () => {
    const clock = new FakeClock();
    const caller = new AbortController();
    const add = vi.spyOn(caller.signal, 'addEventListener');
    const remove = vi.spyOn(caller.signal, 'removeEventListener');
    const { op } = dependency(clock, [{ ms: 10 }]);
    const call = track(
      clock,
      hedge({ attempts: 2, delayMs: 100, clock }).execute(op, { signal: caller.signal }),
    );
    await clock.advance(10);
    expect(call.result).toMatchObject({ ok: true });
    const ours = add.mock.calls.filter(
      ([type, listener]) => type === 'abort' && typeof listener === 'object',
    );
    expect(ours).toHaveLength(1);
    expect(remove).toHaveBeenCalledWith('abort', ours[0]![1]);
  });
});

describe('hedge: deadlines', () => {
  it('starts no try at or after context.deadline', async () => {
    const clock = new FakeClock();
    const last = transient('late');
    const { op, tries } = dependency(clock, [
      { ms: 400, error: transient('a') },
      { ms: 200, error: transient('b') },
      { ms: 210, error: last }, // 200 + 210: the last to arrive
    ]);
    const call = track(clock, hedge({ attempts: 5, delayMs: 100, clock }).execute(op, { deadline: 300 }));
    await clock.advance(1_000);
    expect(tries.map((t) => t.startedAt)).toEqual([0, 100, 200]); // 300 is the deadline: no try there
    // The hedge does not enforce the deadline itself (an outer timeout does): it waits for its tries.
    expect(call.result).toEqual({ ok: false, error: last, at: 410 });
    expect(clock.pendingTimers).toBe(0);
  });

  it('a failure after the deadline starts no further try', async () => {
    const clock = new FakeClock();
    const late = transient('after the deadline');
    const { op } = dependency(clock, [{ ms: 80, error: late }, { ms: 1 }]);
    const call = track(clock, hedge({ attempts: 2, delayMs: 1_000, clock }).execute(op, { deadline: 50 }));
    await clock.advance(100);
    expect(call.result).toEqual({ ok: false, error: late, at: 80 });
    expect(op).toHaveBeenCalledTimes(1);
  });

  it('a pushback that cannot fit before the deadline ends the call with that failure', async () => {
    const clock = new FakeClock();
    const limited = transient('wait 500', 500);
    const { op } = dependency(clock, [{ ms: 10, error: limited }, { ms: 1 }]);
    const call = track(clock, hedge({ attempts: 2, delayMs: 100, clock }).execute(op, { deadline: 300 }));
    await clock.advance(10);
    expect(call.result).toEqual({ ok: false, error: limited, at: 10 });
    expect(op).toHaveBeenCalledTimes(1);
    expect(clock.pendingTimers).toBe(0);
  });

  it('inside an outer timeout: hedges stop at its deadline and the call fails with its TimeoutError', async () => {
    const clock = new FakeClock();
    const { op, tries } = dependency(clock, [never, never, never, never]);
    const policy = pipeline(timeout(250, { clock }), hedge({ attempts: 4, delayMs: 100, clock }));
    const call = track(clock, policy.execute(op));
    await clock.advance(250);
    expect(tries.map((t) => t.startedAt)).toEqual([0, 100, 200]);
    expect(call.result?.ok).toBe(false);
    expect((call.result as { error: unknown }).error).toBeInstanceOf(TimeoutError);
    for (const t of tries) expect(t.signal.reason).toBeInstanceOf(TimeoutError);
  });
});

describe('hedge: budget', () => {
  it('each hedge withdraws from the budget; a refused hedge is not started, nor any after it', async () => {
    const clock = new FakeClock();
    // Floor of one retry in the window and nothing earned: one hedge in total.
    const budget = retryBudget({ ratio: 0, minPerSecond: 0.1, windowMs: 10_000, clock });
    const exhausted: unknown[] = [];
    budget.onExhausted((e) => exhausted.push(e));
    const events: HedgeEvent[] = [];
    const policy = hedge({ attempts: 4, delayMs: 100, budget, clock, onHedge: (e) => events.push(e) });
    const a = dependency(clock, [{ ms: 350 }, never, never, never]);
    const first = track(clock, policy.execute(a.op));
    await clock.advance(350);
    expect(a.tries.map((t) => t.startedAt)).toEqual([0, 100]); // the hedge at 200 was refused
    expect(first.result).toEqual({ ok: true, value: 'value 1', at: 350 });
    expect(events.map((e) => e.attempt)).toEqual([2]);
    expect(exhausted).toHaveLength(1);

    const b = dependency(clock, [{ ms: 250 }]);
    const second = track(clock, policy.execute(b.op));
    await clock.advance(250);
    expect(b.tries).toHaveLength(1);
    expect(second.result).toMatchObject({ ok: true, value: 'value 1' });
    expect(clock.pendingTimers).toBe(0);
  });

  it('a refused hedge after a failure with nothing else running fails with that original error', async () => {
    const clock = new FakeClock();
    const budget = retryBudget({ ratio: 0, minPerSecond: 0, clock });
    const flaky = transient('once');
    const { op } = dependency(clock, [{ ms: 10, error: flaky }, { ms: 1 }]);
    const call = track(clock, hedge({ attempts: 2, delayMs: 100, budget, clock }).execute(op));
    await clock.advance(10);
    expect(call.result).toEqual({ ok: false, error: flaky, at: 10 });
    expect(op).toHaveBeenCalledTimes(1);
    expect(clock.pendingTimers).toBe(0);
  });

  it('successful calls deposit, earning hedges for later calls', async () => {
    const clock = new FakeClock();
    const budget = retryBudget({ ratio: 0.5, minPerSecond: 0, clock });
    const policy = hedge({ attempts: 2, delayMs: 100, budget, clock });
    expect(budget.available).toBe(0);
    for (let i = 0; i < 2; i++) {
      const fast = track(
        clock,
        policy.execute(() => 'quick'),
      );
      await clock.advance(0);
      expect(fast.result).toMatchObject({ ok: true });
    }
    expect(budget.available).toBe(1);
    const { op, tries } = dependency(clock, [never, { ms: 10 }]);
    const hedged = track(clock, policy.execute(op));
    await clock.advance(110);
    expect(tries).toHaveLength(2);
    expect(hedged.result).toEqual({ ok: true, value: 'value 2', at: clock.now() });
    // One withdrawal for the hedge, one deposit for the successful call: 3 × 0.5 − 1 = 0.5.
    expect(budget.available).toBe(0);
  });

  it('failed calls deposit nothing', async () => {
    const clock = new FakeClock();
    const budget = retryBudget({ ratio: 1, minPerSecond: 0, clock });
    const policy = hedge({ attempts: 2, delayMs: 100, budget, clock });
    const call = track(
      clock,
      policy.execute(() => {
        throw badRequest();
      }),
    );
    await clock.advance(0);
    expect(call.result?.ok).toBe(false);
    expect(budget.available).toBe(0);
  });
});

describe('hedge: variants', () => {
  it('try n runs variants[n - 1] instead of the operation; attempts defaults to variants.length', async () => {
    const clock = new FakeClock();
    const seen: Array<[string, number, number]> = [];
    const region =
      (name: string, ms: number) =>
      async ({ attempt, signal }: Context): Promise<string> => {
        seen.push([name, attempt, clock.now()]);
        await clock.sleep(ms, signal);
        return name;
      };
    const eu = region('eu', 1_000);
    const us = region('us', 1_000);
    const ap = region('ap', 30);
    const policy = hedge({ variants: [eu, us, ap], delayMs: 100, clock });
    const operation = vi.fn(() => 'not called');
    const call = track(clock, policy.execute(operation));
    await clock.advance(230);
    expect(call.result).toEqual({ ok: true, value: 'ap', at: 230 });
    expect(seen).toEqual([
      ['eu', 1, 0],
      ['us', 2, 100],
      ['ap', 3, 200],
    ]);
    expect(operation).not.toHaveBeenCalled();
    expect(clock.pendingTimers).toBe(0);
  });

  it('types: execute resolves with the operation type, or the variants type with variants', async () => {
    const clock = new FakeClock();
    const plain = hedge({ clock, delayMs: 0 });
    expectTypeOf(plain.execute(() => 'text')).toEqualTypeOf<Promise<string>>();
    const numbers = hedge({ clock, delayMs: 0, variants: [async () => 1, () => 2] });
    const result = numbers.execute(async () => 3);
    expectTypeOf(result).toEqualTypeOf<Promise<number>>();
    const call = track(clock, result);
    await clock.advance(0);
    // Both start at once; the synchronous variant settles a microtask earlier and wins.
    expect(call.result).toMatchObject({ ok: true, value: 2 });
    // Both are policies: they compose.
    expect(() => pipeline(plain, numbers)).not.toThrow();
  });

  it('copies the variants: changing the array afterwards changes nothing', async () => {
    const clock = new FakeClock();
    const variants = [() => 'a', () => 'b'];
    const policy = hedge({ variants, delayMs: 0, clock });
    variants[0] = () => 'changed';
    const call = track(
      clock,
      policy.execute(() => 'op'),
    );
    await clock.advance(0);
    expect(call.result).toMatchObject({ ok: true, value: 'a' });
  });

  it('a single variant runs once, with no signal or timer of its own', async () => {
    const clock = new FakeClock();
    const caller = new AbortController();
    let seen: Context | undefined;
    const policy = hedge({
      variants: [
        (ctx: Context) => {
          seen = ctx;
          return 'only';
        },
      ],
      clock,
    });
    const call = track(
      clock,
      policy.execute(() => 'op', { signal: caller.signal }),
    );
    expect(clock.pendingTimers).toBe(0);
    await clock.advance(0);
    expect(call.result).toMatchObject({ ok: true, value: 'only' });
    expect(seen?.attempt).toBe(1);
    expect(seen?.signal).toBe(caller.signal);
  });
});

describe('hedge: attempts 1 and composition', () => {
  it('attempts: 1 is a plain call numbered 1, even inside a retry', async () => {
    const clock = new FakeClock();
    const attempts: number[] = [];
    const policy = pipeline(
      retry({ maxAttempts: 2, backoff: constant(10), clock }),
      hedge({ attempts: 1, clock }),
    );
    const call = track(
      clock,
      policy.execute(({ attempt }) => {
        attempts.push(attempt);
        if (attempts.length === 1) throw transient('once');
        return 'ok';
      }),
    );
    await clock.advance(10);
    expect(call.result).toMatchObject({ ok: true, value: 'ok' });
    expect(attempts).toEqual([1, 1]);
  });

  it('pipeline(hedge, timeout): each try has its own time limit, and a timed-out try starts the next at once', async () => {
    const clock = new FakeClock();
    const { op, tries } = dependency(clock, [never, { ms: 70, value: 'second' }]);
    const policy = pipeline(hedge({ attempts: 2, delayMs: 500, clock }), timeout(150, { clock }));
    const call = track(clock, policy.execute(op));
    await clock.advance(150);
    expect(tries.map((t) => t.startedAt)).toEqual([0, 150]); // try 1 timed out (kind timeout: not fatal)
    expect(tries[0]!.signal.reason).toBeInstanceOf(TimeoutError);
    await clock.advance(70);
    expect(call.result).toEqual({ ok: true, value: 'second', at: 220 });
    await clock.advance(1_000); // the timeout policy's shared timer lapses on its own
    expect(clock.pendingTimers).toBe(0);
  });

  it('pipeline(retry, hedge): the retry sees one outcome per hedged call', async () => {
    const clock = new FakeClock();
    let calls = 0;
    const policy = pipeline(
      retry({ maxAttempts: 2, backoff: constant(5), clock }),
      hedge({ attempts: 2, delayMs: 0, clock }),
    );
    const call = track(
      clock,
      policy.execute(async () => {
        const n = ++calls;
        await clock.sleep(n);
        if (n <= 2) throw transient(`call ${n}`);
        return n;
      }),
    );
    await clock.advance(100);
    // Hedged call 1 (two tries, both fail), retry after 5 ms, hedged call 2 (two tries: 3 wins).
    expect(call.result).toMatchObject({ ok: true, value: 3 });
    expect(calls).toBe(4);
  });

  it('a retry inside a losing try stops when the hedge aborts it', async () => {
    const clock = new FakeClock();
    const starts: number[] = [];
    const policy = pipeline(
      hedge({ attempts: 2, delayMs: 100, clock }),
      retry({ maxAttempts: 10, backoff: constant(40), clock }),
    );
    const call = track(
      clock,
      policy.execute(async () => {
        starts.push(clock.now());
        if (clock.now() >= 100) return 'hedge';
        throw transient('keep retrying');
      }),
    );
    await clock.advance(100);
    expect(call.result).toEqual({ ok: true, value: 'hedge', at: 100 });
    const before = starts.length;
    await clock.advance(1_000);
    expect(starts.length).toBe(before); // the loser's retry loop was cut by the abort
    expect(clock.pendingTimers).toBe(0);
  });
});

describe('hedge: events', () => {
  it('a throwing onHedge listener never breaks the call; the disposer unsubscribes', async () => {
    const clock = new FakeClock();
    const reported: unknown[] = [];
    const previous = setListenerErrorHandler((e) => reported.push(e));
    try {
      const policy = hedge({ attempts: 2, delayMs: 10, clock });
      const dispose = policy.onHedge(() => {
        throw new Error('listener bug');
      });
      const { op } = dependency(clock, [never, { ms: 5 }]);
      const call = track(clock, policy.execute(op));
      await clock.advance(15);
      expect(call.result).toEqual({ ok: true, value: 'value 2', at: 15 });
      expect(reported).toHaveLength(1);
      dispose();
      dispose();
      const again = dependency(clock, [never, { ms: 5 }]);
      const second = track(clock, policy.execute(again.op));
      await clock.advance(15);
      expect(second.result).toMatchObject({ ok: true });
      expect(reported).toHaveLength(1);
    } finally {
      setListenerErrorHandler(previous);
    }
  });
});
