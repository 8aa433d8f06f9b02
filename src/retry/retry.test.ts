import { describe, expect, it, vi } from 'vitest';
import { ResilienceError } from '../core/errors.js';
import { setListenerErrorHandler } from '../core/events.js';
import { FakeClock } from '../testing/fake-clock.js';
import { constant } from './backoff.js';
import { retryBudget } from './budget.js';
import { isRetriesExhaustedError, RetriesExhaustedError } from './errors.js';
import type { GiveUpEvent, RetryEvent } from './options.js';
import { retry, retryAll, retryIf } from './retry.js';

const transient = (message = 'flaky', retryAfterMs?: number) =>
  new ResilienceError(message, { code: 'E_FLAKY', kind: 'transient', retryAfterMs });
const badRequest = () => Object.assign(new Error('bad request'), { status: 400 });

/** An operation failing `failures` times with `error()` and then returning 'ok'. */
function flaky(failures: number, error: () => unknown = transient) {
  const calls: number[] = [];
  const op = vi.fn((ctx: { attempt: number }) => {
    calls.push(ctx.attempt);
    if (calls.length <= failures) throw error();
    return 'ok';
  });
  return { op, calls };
}

/** Runs the call to completion on the fake clock and returns its settled result. */
async function settle<T>(clock: FakeClock, promise: Promise<T>, ms = 60_000) {
  const result = promise.then(
    (value) => ({ ok: true as const, value }),
    (error: unknown) => ({ ok: false as const, error }),
  );
  await clock.advance(ms);
  return result;
}

describe('retry', () => {
  it('retries transient failures and resolves; attempts are numbered from 1', async () => {
    const clock = new FakeClock();
    const { op, calls } = flaky(2);
    const r = await settle(clock, retry({ clock, maxAttempts: 3, backoff: constant(10) }).execute(op));
    expect(r).toEqual({ ok: true, value: 'ok' });
    expect(calls).toEqual([1, 2, 3]);
  });

  it('maxAttempts counts every attempt, the first included, then rejects with RetriesExhaustedError', async () => {
    const clock = new FakeClock();
    const errors: ResilienceError[] = [];
    const op = vi.fn(() => {
      const e = transient(`failure ${errors.length + 1}`);
      errors.push(e);
      throw e;
    });
    const r = await settle(clock, retry({ clock, maxAttempts: 3, backoff: constant(10) }).execute(op));
    expect(op).toHaveBeenCalledTimes(3);
    expect(r.ok).toBe(false);
    const error = (r as { error: RetriesExhaustedError }).error;
    expect(isRetriesExhaustedError(error)).toBe(true);
    expect(error).toBeInstanceOf(RetriesExhaustedError);
    expect(error.attempts).toBe(3);
    expect(error.reason).toBe('attempts');
    expect(error.cause).toBe(errors[2]);
    expect(error.kind).toBe('transient');
    expect(error.code).toBe('ERR_RETRIES_EXHAUSTED');
  });

  it('does not retry permanent kinds: a 400 is called once and rejects unchanged', async () => {
    const clock = new FakeClock();
    const error = badRequest();
    const op = vi.fn(() => {
      throw error;
    });
    const r = await settle(clock, retry({ clock }).execute(op));
    expect(op).toHaveBeenCalledTimes(1);
    expect(r).toEqual({ ok: false, error });
  });

  it('does not retry an unclassified error (kind internal); retryAll does', async () => {
    const clock = new FakeClock();
    const a = flaky(1, () => new Error('bug?'));
    const r1 = await settle(clock, retry({ clock, backoff: constant(1) }).execute(a.op));
    expect(r1.ok).toBe(false);
    expect(a.op).toHaveBeenCalledTimes(1);
    const b = flaky(1, () => new Error('bug?'));
    const r2 = await settle(clock, retryAll({ clock, backoff: constant(1) }).execute(b.op));
    expect(r2).toEqual({ ok: true, value: 'ok' });
  });

  it('retries HTTP 503 and network errors found by classify', async () => {
    const clock = new FakeClock();
    const a = flaky(1, () => Object.assign(new Error('unavailable'), { status: 503 }));
    expect(await settle(clock, retry({ clock, backoff: constant(1) }).execute(a.op))).toEqual({
      ok: true,
      value: 'ok',
    });
    const b = flaky(
      1,
      () => new TypeError('fetch failed', { cause: Object.assign(new Error('x'), { code: 'ECONNRESET' }) }),
    );
    expect(await settle(clock, retry({ clock, backoff: constant(1) }).execute(b.op))).toEqual({
      ok: true,
      value: 'ok',
    });
  });

  it('retryIf decides by predicate; a throwing predicate ends the call with its error', async () => {
    const clock = new FakeClock();
    const seen: number[] = [];
    const a = flaky(2, () => new Error('busy'));
    const policy = retryIf(
      (error, attempt) => {
        seen.push(attempt);
        return (error as Error).message === 'busy';
      },
      { clock, backoff: constant(1) },
    );
    expect(await settle(clock, policy.execute(a.op))).toEqual({ ok: true, value: 'ok' });
    expect(seen).toEqual([1, 2]);
    const bug = new Error('predicate bug');
    const b = flaky(1);
    const r = await settle(
      clock,
      retryIf(
        () => {
          throw bug;
        },
        { clock },
      ).execute(b.op),
    );
    expect(r).toEqual({ ok: false, error: bug });
  });

  it('sleeps exactly the backoff between attempts', async () => {
    const clock = new FakeClock();
    const starts: number[] = [];
    const delays = [100, 250];
    const p = retry({ clock, maxAttempts: 3, backoff: (n) => delays[n - 1]! }).execute(() => {
      starts.push(clock.now());
      if (starts.length < 3) throw transient();
      return 'ok';
    });
    await clock.advance(99);
    expect(starts).toEqual([0]);
    await clock.advance(1);
    expect(starts).toEqual([0, 100]);
    await clock.advance(250);
    expect(starts).toEqual([0, 100, 350]);
    await expect(p).resolves.toBe('ok');
  });

  it('waits max(backoff, retryAfterMs) when the error asks for a pause', async () => {
    const clock = new FakeClock();
    const starts: number[] = [];
    const op = () => {
      starts.push(clock.now());
      if (starts.length === 1) throw transient('slow down', 500);
      if (starts.length === 2) throw transient('slow down a bit', 5);
      return 'ok';
    };
    const r = await settle(clock, retry({ clock, maxAttempts: 3, backoff: constant(100) }).execute(op));
    expect(r).toEqual({ ok: true, value: 'ok' });
    expect(starts).toEqual([0, 500, 600]);
  });

  it('honours an HTTP Retry-After header on the error', async () => {
    const clock = new FakeClock();
    const starts: number[] = [];
    const op = () => {
      starts.push(clock.now());
      if (starts.length === 1)
        throw Object.assign(new Error('429'), { status: 429, headers: { 'retry-after': '3' } });
      return 'ok';
    };
    await settle(clock, retry({ clock, backoff: constant(10) }).execute(op));
    expect(starts).toEqual([0, 3_000]);
  });

  it('an abort during the backoff sleep rejects at once with the reason, and no attempt follows', async () => {
    const clock = new FakeClock();
    const controller = new AbortController();
    const op = vi.fn(() => {
      throw transient();
    });
    const p = retry({ clock, maxAttempts: 5, backoff: constant(1_000) }).execute(op, {
      signal: controller.signal,
    });
    const settled = p.catch((e: unknown) => e);
    await clock.advance(10);
    expect(op).toHaveBeenCalledTimes(1);
    const reason = new Error('user navigated away');
    controller.abort(reason);
    expect(await settled).toBe(reason);
    expect(clock.pendingTimers).toBe(0);
    await clock.advance(10_000);
    expect(op).toHaveBeenCalledTimes(1);
  });

  it('never retries a failure that follows a caller abort', async () => {
    const clock = new FakeClock();
    const controller = new AbortController();
    const op = vi.fn(
      ({ signal }: { signal: AbortSignal }) =>
        new Promise((_, reject) =>
          signal.addEventListener('abort', () => reject(transient('aborted mid-call'))),
        ),
    );
    const p = retry({ clock, maxAttempts: 5, backoff: constant(1) })
      .execute(op, { signal: controller.signal })
      .catch((e: unknown) => e);
    await clock.advance(1);
    controller.abort();
    const error = await p;
    expect((error as Error).message).toBe('aborted mid-call');
    await clock.advance(100);
    expect(op).toHaveBeenCalledTimes(1);
  });

  it('gives up at once when the deadline cannot fit the delay plus another attempt', async () => {
    const clock = new FakeClock();
    const gaveUp: GiveUpEvent[] = [];
    const op = vi.fn(() => {
      throw transient();
    });
    const policy = retry({ clock, maxAttempts: 5, backoff: constant(100), onGiveUp: (e) => gaveUp.push(e) });
    const p = policy.execute(op, { deadline: 50 }).catch((e: unknown) => e);
    await clock.advance(0);
    const error = (await p) as RetriesExhaustedError;
    expect(clock.now()).toBe(0); // did not sleep first
    expect(clock.pendingTimers).toBe(0);
    expect(error.reason).toBe('deadline');
    expect(error.attempts).toBe(1);
    expect(gaveUp).toEqual([expect.objectContaining({ attempts: 1, reason: 'deadline' })]);
  });

  it('counts the last attempt duration as the room another attempt needs', async () => {
    const clock = new FakeClock();
    const starts: number[] = [];
    const op = async () => {
      starts.push(clock.now());
      await clock.sleep(40);
      throw transient();
    };
    // attempt 1: 0–40, sleep 10 → attempt 2: 50–90; now 90 + 10 + 40 ≥ 120 → give up
    const p = retry({ clock, maxAttempts: 5, backoff: constant(10) })
      .execute(op, { deadline: 120 })
      .catch((e: unknown) => e);
    await clock.advance(1_000);
    expect(starts).toEqual([0, 50]);
    expect(((await p) as RetriesExhaustedError).reason).toBe('deadline');
  });

  it('stops when maxElapsedMs would be exceeded', async () => {
    const clock = new FakeClock();
    const op = vi.fn(() => {
      throw transient();
    });
    const r = await settle(
      clock,
      retry({ clock, maxAttempts: Infinity, maxElapsedMs: 350, backoff: constant(100) }).execute(op),
    );
    expect(op).toHaveBeenCalledTimes(4); // at 0, 100, 200, 300; a fifth would start at 400
    expect((r as { error: RetriesExhaustedError }).error.reason).toBe('elapsed');
  });

  it('fails fast with the original error when the shared budget is empty, and emits events', async () => {
    const clock = new FakeClock();
    const budget = retryBudget({ ratio: 0, minPerSecond: 0.1, windowMs: 10_000, clock }); // one retry per window
    const exhausted = vi.fn();
    budget.onExhausted(exhausted);
    const gaveUp: GiveUpEvent[] = [];
    const policy = retry({
      clock,
      maxAttempts: 5,
      backoff: constant(10),
      budget,
      onGiveUp: (e) => gaveUp.push(e),
    });
    const errors: unknown[] = [];
    const op = vi.fn(() => {
      const e = transient(`#${errors.length}`);
      errors.push(e);
      throw e;
    });
    const r = await settle(clock, policy.execute(op));
    expect(op).toHaveBeenCalledTimes(2); // one budgeted retry
    expect(r).toEqual({ ok: false, error: errors[1] });
    expect(exhausted).toHaveBeenCalledTimes(1);
    expect(gaveUp).toEqual([{ attempts: 2, error: errors[1], reason: 'budget' }]);
  });

  it('deposits successes into the budget', async () => {
    const clock = new FakeClock();
    const budget = retryBudget({ ratio: 0.5, minPerSecond: 0, clock });
    const policy = retry({ clock, budget });
    for (let i = 0; i < 4; i++) await policy.execute(() => 'ok');
    expect(budget.available).toBe(2);
  });

  it('emits onRetry before each sleep; disposers unsubscribe; a throwing listener changes nothing', async () => {
    const clock = new FakeClock();
    const previous = setListenerErrorHandler(() => {});
    try {
      const events: RetryEvent[] = [];
      const policy = retry({ clock, maxAttempts: 3, backoff: constant(10) });
      const dispose = policy.onRetry((e) => events.push(e));
      policy.onRetry(() => {
        throw new Error('listener bug');
      });
      const { op } = flaky(2);
      expect(await settle(clock, policy.execute(op))).toEqual({ ok: true, value: 'ok' });
      expect(events.map((e) => [e.attempt, e.delayMs])).toEqual([
        [1, 10],
        [2, 10],
      ]);
      dispose();
      await settle(clock, policy.execute(flaky(1).op));
      expect(events).toHaveLength(2);
    } finally {
      setListenerErrorHandler(previous);
    }
  });

  it('retries synchronous throws and treats a NaN backoff as no wait', async () => {
    const clock = new FakeClock();
    const { op } = flaky(1);
    await expect(retry({ clock, backoff: () => Number.NaN }).execute(op)).resolves.toBe('ok');
  });

  it.each([
    [{ maxAttempts: 0 }, /"maxAttempts".*got 0/],
    [{ maxAttempts: 2.5 }, /"maxAttempts".*2.5/],
    [{ maxAttempts: Number.NaN }, /"maxAttempts".*NaN/],
    [{ maxAttempts: Infinity }, /"maxElapsedMs" to be finite/],
    [{ maxElapsedMs: -5 }, /"maxElapsedMs".*-5/],
    [{ backoff: 100 }, /"backoff".*100/],
    [{ budget: {} }, /"budget" to be a RetryBudget from retryBudget\(\)/],
    [{ clock: Date }, /"clock"/],
    [{ onRetry: 'log' }, /"onRetry"/],
    [{ onGiveUp: 1 }, /"onGiveUp"/],
  ])('rejects bad options %o with a TypeError', (options, message) => {
    expect(() => retry(options as never)).toThrow(TypeError);
    expect(() => retry(options as never)).toThrow(message);
  });

  it('refuses a misspelled option, naming retry options and the option meant', () => {
    expect(() => retry({ maxAttempt: 5 } as never)).toThrow(
      new TypeError('unknown option "maxAttempt" in retry options; did you mean "maxAttempts"?'),
    );
  });

  it('by default waits exponentialJitter from 100 ms, each delay capped at 10 s', async () => {
    const clock = new FakeClock();
    const delays: number[] = [];
    const op = vi.fn(() => {
      throw transient();
    });
    const call = retry({ clock, maxAttempts: 10, onRetry: (e) => delays.push(e.delayMs) })
      .execute(op)
      .catch((e: unknown) => e);
    await clock.advance(100_000);
    expect(isRetriesExhaustedError(await call)).toBe(true);
    expect(delays).toHaveLength(9);
    expect(delays[0]).toBeGreaterThanOrEqual(70);
    expect(delays[0]).toBeLessThanOrEqual(130);
    expect(delays[1]).toBeGreaterThanOrEqual(140);
    expect(delays[1]).toBeLessThanOrEqual(260);
    // The ninth retry's exponential value is 25.6 s: the 10 s cap, less up to 30 % jitter.
    expect(delays[8]).toBeGreaterThanOrEqual(7_000);
    expect(Math.max(...delays)).toBeLessThanOrEqual(10_000);
  });

  it('rejects a non-function predicate', () => {
    expect(() => retryIf('yes' as never)).toThrow(/"predicate".*"yes"/);
  });
});
