import { getEventListeners } from 'node:events';
import { describe, expect, it } from 'vitest';
import { deferred } from '../../test/support/deferred.js';
import { FakeClock } from '../testing/fake-clock.js';
import { type Context, contextAborted, unwatchContext, watchContext } from './context.js';
import { isTimeoutError } from './errors.js';
import { failure, type Outcome } from './outcome.js';
import { TimeLimit } from './time-limit.js';

const root: Context = { signal: new AbortController().signal, attempt: 1 };

const listeners = (signal: AbortSignal): number => getEventListeners(signal, 'abort').length;

/** A step that ends only when its signal aborts. */
const hang = (ctx: Context): Promise<Outcome<never>> =>
  new Promise((resolve) => ctx.signal.addEventListener('abort', () => resolve(failure(ctx.signal.reason))));

describe.each([false, true])(
  'TimeLimit (aggressive: %s): a shorter limit after a longer one',
  (aggressive) => {
    it('a limit shrunk after a settled call (the breaker restoring callTimeoutMs) fires at its own time', async () => {
      const clock = new FakeClock();
      const limit = new TimeLimit(clock, aggressive);
      await limit.run(() => Promise.resolve({ ok: true, value: 1 }), root, 1_000);
      let endedAt: number | undefined;
      const call = limit.run(hang, root, 50).then((outcome) => {
        endedAt = clock.now();
        return outcome;
      });
      await clock.advance(50);
      expect(endedAt).toBe(50);
      const outcome = await call;
      expect(!outcome.ok && isTimeoutError(outcome.error)).toBe(true);
    });

    it('a limit shrunk while a longer call still runs fires at its own time too', async () => {
      const clock = new FakeClock();
      const limit = new TimeLimit(clock, aggressive);
      const long = limit.run(hang, root, 1_000);
      const endedAt: number[] = [];
      const short = limit.run(hang, root, 50).then(() => endedAt.push(clock.now()));
      await clock.advance(1_000);
      await short;
      await long;
      expect(endedAt).toEqual([50]);
      expect(clock.pendingTimers).toBe(0);
    });
  },
);

/** The error of a failed outcome (fails the test on a value). */
function errorOf(outcome: Outcome<unknown>): Error {
  if (outcome.ok) throw new Error(`expected a failure, got ${String(outcome.value)}`);
  return outcome.error as Error;
}

describe.each([false, true])('TimeLimit (aggressive: %s): deadlines and messages', (aggressive) => {
  // The clock starts away from 0 so that a deadline and a duration cannot be mistaken for each other.
  const start = 1_000;

  it('a call that runs out its own limit fails with the plain timeout message, at its deadline', async () => {
    const clock = new FakeClock(start);
    const limit = new TimeLimit(clock, aggressive);
    let endedAt: number | undefined;
    const call = limit.run(hang, root, 50).then((outcome) => {
      endedAt = clock.now();
      return outcome;
    });
    await clock.advance(50);
    const error = errorOf(await call);
    expect(endedAt).toBe(start + 50);
    expect(isTimeoutError(error)).toBe(true);
    expect(error.message).toBe('operation timed out after 50 ms');
  });

  it("a caller's earlier deadline ends the call then, and the error says it was the caller's deadline", async () => {
    const clock = new FakeClock(start);
    const limit = new TimeLimit(clock, aggressive);
    let endedAt: number | undefined;
    const call = limit.run(hang, { ...root, deadline: start + 30 }, 50).then((outcome) => {
      endedAt = clock.now();
      return outcome;
    });
    await clock.advance(100);
    const error = errorOf(await call);
    expect(endedAt).toBe(start + 30);
    expect(isTimeoutError(error)).toBe(true);
    expect(error.message).toBe("operation hit the caller's deadline after 30 ms (timeout 50 ms)");
    expect((error as { timeoutMs?: number }).timeoutMs).toBe(50);
  });

  it("a caller's deadline that already passed fails at once, without running the step or a timer", async () => {
    const clock = new FakeClock(start);
    const limit = new TimeLimit(clock, aggressive);
    let ran = false;
    const outcome = await limit.run(
      () => {
        ran = true;
        return Promise.resolve({ ok: true, value: 1 });
      },
      { ...root, deadline: start - 10 },
      50,
    );
    const error = errorOf(outcome);
    expect(ran).toBe(false);
    expect(clock.pendingTimers).toBe(0);
    expect(error.message).toBe("operation hit the caller's deadline after 0 ms (timeout 50 ms)");
  });

  it("a caller's deadline of exactly now fails at once, without running the step or a timer", async () => {
    const clock = new FakeClock(start);
    const limit = new TimeLimit(clock, aggressive);
    let ran = false;
    const outcome = await limit.run(
      () => {
        ran = true;
        return Promise.resolve({ ok: true, value: 1 });
      },
      { ...root, deadline: start },
      50,
    );
    expect(ran).toBe(false);
    expect(clock.pendingTimers).toBe(0);
    expect(errorOf(outcome).message).toBe("operation hit the caller's deadline after 0 ms (timeout 50 ms)");
  });

  it('a shorter limit behind a longer running call fires at its own deadline', async () => {
    const clock = new FakeClock(start);
    const limit = new TimeLimit(clock, aggressive);
    const long = limit.run(hang, root, 1_000);
    const endedAt: number[] = [];
    const short = limit.run(hang, root, 50).then(() => endedAt.push(clock.now()));
    await clock.advance(1_000);
    await short;
    await long;
    expect(endedAt).toEqual([start + 50]);
  });

  it('a shorter call that finished in time is never aborted when its deadline passes', async () => {
    const clock = new FakeClock(start);
    const limit = new TimeLimit(clock, aggressive);
    const long = limit.run(hang, root, 1_000);
    let signal: AbortSignal | undefined;
    const outcome = await limit.run(
      (ctx) => {
        signal = ctx.signal;
        return Promise.resolve({ ok: true, value: 'done' });
      },
      root,
      50,
    );
    expect(outcome).toEqual({ ok: true, value: 'done' });
    await clock.advance(100);
    expect(signal?.aborted).toBe(false);
    await clock.advance(1_000);
    await long;
  });

  it("a caller's abort reaches a step that only looks at its signal after the abort", async () => {
    const clock = new FakeClock(start);
    const limit = new TimeLimit(clock, aggressive);
    const caller = new AbortController();
    const gate = deferred<void>();
    let seen: { aborted: boolean; reason: unknown } | undefined;
    const call = limit.run(
      async (ctx) => {
        await gate.promise;
        seen = { aborted: ctx.signal.aborted, reason: ctx.signal.reason };
        return { ok: true, value: 'late' };
      },
      { signal: caller.signal, attempt: 1 },
      50,
    );
    caller.abort('caller left');
    gate.resolve();
    await call;
    expect(seen).toEqual({ aborted: true, reason: 'caller left' });
  });
});

describe('TimeLimit (cooperative)', () => {
  it("stops listening to the caller's signal at the deadline, while the step still runs", async () => {
    const clock = new FakeClock();
    const limit = new TimeLimit(clock, false);
    const caller = new AbortController();
    const gate = deferred<void>();
    const call = limit.run(
      async (ctx) => {
        void ctx.signal; // reads it: the call now listens to the caller
        await gate.promise; // and ignores the abort
        return failure(new Error('gave up late'));
      },
      { signal: caller.signal, attempt: 1 },
      50,
    );
    expect(listeners(caller.signal)).toBe(1);
    await clock.advance(50);
    expect(listeners(caller.signal)).toBe(0);
    gate.resolve();
    const error = errorOf(await call);
    expect(isTimeoutError(error)).toBe(true);
    expect((error.cause as Error).message).toBe('gave up late');
  });

  it("a context kept past the end of its call still reads the caller's later abort", async () => {
    const clock = new FakeClock();
    const limit = new TimeLimit(clock, false);
    const caller = new AbortController();
    let kept: Context | undefined;
    const outcome = await limit.run(
      (ctx) => {
        kept = ctx;
        // An inner policy watches the context for the length of its own work, then leaves.
        const watcher = (): void => {};
        watchContext(ctx, watcher);
        unwatchContext(ctx, watcher);
        return Promise.resolve({ ok: true, value: 1 });
      },
      { signal: caller.signal, attempt: 1 },
      50,
    );
    expect(outcome.ok).toBe(true);
    expect(listeners(caller.signal)).toBe(0);
    caller.abort('caller left');
    expect(kept !== undefined && contextAborted(kept)).toBe(true);
    expect(kept?.signal.aborted).toBe(true);
    expect(kept?.signal.reason).toBe('caller left');
  });

  it("a caller's abort, then the deadline while the step runs on: the signal keeps the caller's reason", async () => {
    const clock = new FakeClock();
    const limit = new TimeLimit(clock, false);
    const caller = new AbortController();
    const gate = deferred<void>();
    let reason: unknown;
    const call = limit.run(
      async (ctx) => {
        watchContext(ctx, () => {}); // an inner policy watches the call: it now listens to the caller
        await gate.promise;
        reason = ctx.signal.reason;
        return failure(new Error('gave up late'));
      },
      { signal: caller.signal, attempt: 1 },
      50,
    );
    caller.abort('caller left');
    await clock.advance(50);
    gate.resolve();
    const error = errorOf(await call);
    expect(reason).toBe('caller left');
    expect(isTimeoutError(error)).toBe(true);
  });

  it('a caller that already aborted: the step runs and sees its signal aborted with the reason', async () => {
    const clock = new FakeClock();
    const limit = new TimeLimit(clock, false);
    const caller = new AbortController();
    caller.abort('gone');
    const outcome = await limit.run(
      (ctx) => Promise.resolve(failure(ctx.signal.aborted ? ctx.signal.reason : 'not aborted')),
      { signal: caller.signal, attempt: 1 },
      50,
    );
    expect(outcome).toEqual({ ok: false, error: 'gone' });
  });
});

describe('TimeLimit (aggressive)', () => {
  it('a caller that already aborted ends the call at once with its reason, without running the step', async () => {
    const clock = new FakeClock();
    const limit = new TimeLimit(clock, true);
    const caller = new AbortController();
    caller.abort('gone');
    let ran = false;
    const outcome = await limit.run(
      (ctx) => {
        ran = true;
        return hang(ctx);
      },
      { signal: caller.signal, attempt: 1 },
      50,
    );
    expect(outcome).toEqual({ ok: false, error: 'gone' });
    expect(ran).toBe(false);
  });

  it("a caller's abort ends the call at once with its reason, though the step ignores it", async () => {
    const clock = new FakeClock();
    const limit = new TimeLimit(clock, true);
    const caller = new AbortController();
    const call = limit.run(
      () => new Promise<Outcome<never>>(() => {}),
      { signal: caller.signal, attempt: 1 },
      50,
    );
    caller.abort('gone');
    expect(await call).toEqual({ ok: false, error: 'gone' });
    expect(listeners(caller.signal)).toBe(0);
  });
});
