import { describe, expect, it, vi } from 'vitest';
import { systemClock } from '../core/clock.js';
import type { Context } from '../core/context.js';
import { isTimeoutError, TimeoutError } from '../core/errors.js';
import { FakeClock } from '../testing/fake-clock.js';
import { timeout } from './timeout.js';

/** An operation that settles only when its signal aborts (with the signal's reason). */
const honoursSignal = ({ signal }: Context) =>
  new Promise<never>((_, reject) => signal.addEventListener('abort', () => reject(signal.reason)));

describe('timeout (cooperative)', () => {
  it('returns the value of a call that ends in time; no timer outlives the deadline', async () => {
    const clock = new FakeClock();
    const policy = timeout(100, { clock });
    await expect(policy.execute(() => 'fast')).resolves.toBe('fast');
    const slowish = policy.execute(async () => {
      await clock.sleep(99);
      return 'in time';
    });
    await clock.advance(99);
    await expect(slowish).resolves.toBe('in time');
    await clock.advance(100);
    expect(clock.pendingTimers).toBe(0);
  });

  it('concurrent calls share one timer, and each expires at its own deadline', async () => {
    const clock = new FakeClock();
    const policy = timeout(100, { clock });
    const expiredAt: number[] = [];
    const calls: Promise<unknown>[] = [];
    for (let i = 0; i < 50; i++) {
      calls.push(policy.execute(honoursSignal).catch(() => expiredAt.push(clock.now())));
      await clock.advance(1);
    }
    expect(clock.pendingTimers).toBe(1);
    await clock.advance(200);
    await Promise.all(calls);
    expect(expiredAt).toEqual(Array.from({ length: 50 }, (_, i) => 100 + i));
    expect(clock.pendingTimers).toBe(0);
  });

  it('does not abort the signal of a call that finished in time', async () => {
    const clock = new FakeClock();
    let signal: AbortSignal | undefined;
    await timeout(100, { clock }).execute((ctx) => {
      signal = ctx.signal;
      return 1;
    });
    await clock.advance(1_000);
    expect(signal?.aborted).toBe(false);
  });

  it('aborts the signal at the deadline with a TimeoutError and rejects with it', async () => {
    const clock = new FakeClock();
    let signal: AbortSignal | undefined;
    const p = timeout(100, { clock })
      .execute((ctx) => {
        signal = ctx.signal;
        return honoursSignal(ctx);
      })
      .catch((e: unknown) => e);
    await clock.advance(99);
    expect(signal?.aborted).toBe(false);
    await clock.advance(1);
    const error = await p;
    expect(signal?.aborted).toBe(true);
    expect(signal?.reason).toBe(error);
    expect(isTimeoutError(error)).toBe(true);
    expect(error).toMatchObject({ kind: 'timeout', code: 'ERR_TIMEOUT', timeoutMs: 100 });
  });

  it('waits for an operation that ignores the signal; a late failure becomes a TimeoutError with cause', async () => {
    const clock = new FakeClock();
    const late = new Error('late failure');
    const p = timeout(100, { clock })
      .execute(async () => {
        await clock.sleep(300);
        throw late;
      })
      .catch((e: unknown) => e);
    let settled = false;
    void p.then(() => {
      settled = true;
    });
    await clock.advance(100);
    expect(settled).toBe(false); // cooperative: still waiting
    await clock.advance(200);
    const error = (await p) as TimeoutError;
    expect(error).toBeInstanceOf(TimeoutError);
    expect(error.cause).toBe(late);
  });

  it('returns a value that arrives after the deadline (the work is done)', async () => {
    const clock = new FakeClock();
    const p = timeout(100, { clock }).execute(async () => {
      await clock.sleep(150);
      return 'late but done';
    });
    await clock.advance(150);
    await expect(p).resolves.toBe('late but done');
  });

  it('a signal first read after the deadline is already aborted', async () => {
    const clock = new FakeClock();
    const p = timeout(100, { clock }).execute(async (ctx) => {
      await clock.sleep(200);
      return ctx.signal.aborted;
    });
    await clock.advance(200);
    await expect(p).resolves.toBe(true);
  });

  it('tightens the deadline for the inside: min(caller deadline, now + ms)', async () => {
    const clock = new FakeClock(1_000);
    const seen: (number | undefined)[] = [];
    const policy = timeout(500, { clock });
    await policy.execute((ctx) => seen.push(ctx.deadline));
    await policy.execute((ctx) => seen.push(ctx.deadline), { deadline: 1_200 });
    await policy.execute((ctx) => seen.push(ctx.deadline), { deadline: 9_999 });
    expect(seen).toEqual([1_500, 1_200, 1_500]);
  });

  it("the caller's earlier deadline wins and is enforced", async () => {
    const clock = new FakeClock();
    const p = timeout(1_000, { clock })
      .execute(honoursSignal, { deadline: 50 })
      .catch((e: unknown) => e);
    await clock.advance(50);
    const error = (await p) as TimeoutError;
    expect(isTimeoutError(error)).toBe(true);
    expect(error.message).toMatch(/deadline/);
  });

  it('rejects at once, without calling the operation, when the deadline has already passed', async () => {
    const clock = new FakeClock(500);
    const op = vi.fn();
    await expect(timeout(100, { clock }).execute(op, { deadline: 400 })).rejects.toBeInstanceOf(TimeoutError);
    expect(op).not.toHaveBeenCalled();
  });

  it("passes the caller's abort to the operation's signal", async () => {
    const clock = new FakeClock();
    const controller = new AbortController();
    const p = timeout(1_000, { clock }).execute(honoursSignal, { signal: controller.signal });
    const reason = new Error('caller abort');
    controller.abort(reason);
    await expect(p).rejects.toBe(reason);
  });
});

describe('timeout (aggressive)', () => {
  it('rejects at the deadline even if the operation ignores its signal, and still aborts the signal', async () => {
    const clock = new FakeClock();
    let signal: AbortSignal | undefined;
    const p = timeout(100, { clock, mode: 'aggressive' })
      .execute((ctx) => {
        signal = ctx.signal;
        return new Promise(() => {}); // never settles
      })
      .catch((e: unknown) => e);
    await clock.advance(100);
    const error = await p;
    expect(isTimeoutError(error)).toBe(true);
    expect(signal?.aborted).toBe(true);
    expect(clock.pendingTimers).toBe(0);
  });

  it('rejects at once with the reason when the caller aborts', async () => {
    const clock = new FakeClock();
    const controller = new AbortController();
    const p = timeout(1_000, { clock, mode: 'aggressive' }).execute(() => new Promise(() => {}), {
      signal: controller.signal,
    });
    const reason = new Error('gone');
    controller.abort(reason);
    await expect(p).rejects.toBe(reason);
  });

  it('returns the value and the error of a call that ends in time', async () => {
    const clock = new FakeClock();
    const policy = timeout(100, { clock, mode: 'aggressive' });
    await expect(policy.execute(() => 7)).resolves.toBe(7);
    const error = new Error('x');
    await expect(policy.execute(() => Promise.reject(error))).rejects.toBe(error);
  });

  it('ignores a late result of the abandoned operation (no unhandled rejection)', async () => {
    const clock = new FakeClock();
    const p = timeout(10, { clock, mode: 'aggressive' })
      .execute(async () => {
        await clock.sleep(50);
        throw new Error('too late');
      })
      .catch((e: unknown) => e);
    await clock.advance(100);
    expect(isTimeoutError(await p)).toBe(true);
  });
});

describe('timeout bad input', () => {
  it.each([
    [0, undefined, /"ms".*got 0/],
    [-1, undefined, /"ms".*-1/],
    [Number.NaN, undefined, /"ms".*NaN/],
    [Infinity, undefined, /"ms".*Infinity/],
    [100, { mode: 'eager' }, /"mode".*"eager"/],
    [100, { clock: 5 }, /"clock"/],
  ])('timeout(%s, %o) throws a TypeError', (ms, options, message) => {
    expect(() => timeout(ms, options as never)).toThrow(TypeError);
    expect(() => timeout(ms, options as never)).toThrow(message);
  });
});

describe('timeout unknown options', () => {
  it('refuses a misspelled option, naming timeout options and the option meant', () => {
    expect(() => timeout(100, { mod: 'aggressive' } as never)).toThrow(
      new TypeError('unknown option "mod" in timeout options; did you mean "mode"?'),
    );
  });
});

describe('timeout: every deadline fires on time', () => {
  it('a caller deadline earlier than a settled call’s deadline is enforced at its own time', async () => {
    const clock = new FakeClock();
    const policy = timeout(1_000, { clock });
    await expect(policy.execute(() => 'fast')).resolves.toBe('fast');
    let rejectedAt: number | undefined;
    const call = policy.execute(honoursSignal, { deadline: clock.now() + 50 }).catch((error: unknown) => {
      rejectedAt = clock.now();
      return error;
    });
    await clock.advance(49);
    expect(rejectedAt).toBeUndefined();
    await clock.advance(1);
    expect(rejectedAt).toBe(50);
    expect(isTimeoutError(await call)).toBe(true);
  });
});

describe.each(['cooperative', 'aggressive'] as const)(
  'timeout (%s): after the deadline the outcome is the timeout',
  (mode) => {
    it('a failure at the deadline, before the deadline timer fired, is a TimeoutError with the failure as cause', async () => {
      const clock = new FakeClock();
      const late = new Error('late failure');
      // Due at the deadline and set before the policy's timer, so it fires first in the same instant.
      const gate = clock.sleep(100);
      const call = timeout(100, { clock, mode })
        .execute(async () => {
          await gate;
          throw late;
        })
        .catch((error: unknown) => error);
      await clock.advance(100);
      const error = (await call) as TimeoutError;
      expect(isTimeoutError(error)).toBe(true);
      expect(error.cause).toBe(late);
    });

    it('a failure just before the deadline stays the raw error', async () => {
      const clock = new FakeClock();
      const early = new Error('early failure');
      const call = timeout(100, { clock, mode })
        .execute(async () => {
          await clock.sleep(99);
          throw early;
        })
        .catch((error: unknown) => error);
      await clock.advance(100);
      expect(await call).toBe(early);
    });

    it('1,000 concurrent calls on timeout(2) on the real clock: every failure after the deadline is a TimeoutError', async () => {
      const policy = timeout(2, { mode });
      const late = new Error('late failure');
      const calls = Array.from({ length: 1_000 }, async () => {
        let failedAfterDeadline = false;
        let opEnded!: Promise<void>;
        const error = await policy
          .execute((ctx) => {
            opEnded = systemClock.sleep(5); // ignores its signal
            return opEnded.then(() => {
              failedAfterDeadline = systemClock.now() >= ctx.deadline!;
              throw late;
            });
          })
          .catch((e: unknown) => e);
        await opEnded; // aggressive mode settles first: wait for the operation's own end
        return { failedAfterDeadline, error };
      });
      const results = await Promise.all(calls);
      // Aggressive settled at the deadline (no cause); cooperative waited and wraps the late error.
      const timedOut = (error: unknown): boolean =>
        isTimeoutError(error) && (mode === 'aggressive' || error.cause === late);
      const wrong = results.filter(
        ({ failedAfterDeadline, error }) => failedAfterDeadline && !timedOut(error),
      );
      expect(wrong).toHaveLength(0);
      expect(results.some((r) => r.failedAfterDeadline)).toBe(true);
    });
  },
);
