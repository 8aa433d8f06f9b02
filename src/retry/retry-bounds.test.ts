import { describe, expect, it, vi } from 'vitest';
import { ResilienceError } from '../core/errors.js';
import { pipeline } from '../core/pipeline.js';
import type { Policy } from '../core/policy.js';
import { FakeClock } from '../testing/fake-clock.js';
import { constant } from './backoff.js';
import { retryBudget } from './budget.js';
import type { RetriesExhaustedError } from './errors.js';
import type { RetryEvent } from './options.js';
import { retry, retryAll } from './retry.js';

const transient = () => new ResilienceError('flaky', { code: 'E_FLAKY', kind: 'transient' });

// Both the execute fast path and the composed path decide the same way.
const ways = [
  ['execute', (p: Policy): Policy => p],
  ['pipeline', (p: Policy): Policy => pipeline(p)],
] as const;

/** An operation that always fails transiently, recording when each attempt started. */
function failing(clock: FakeClock, takesMs = 0) {
  const starts: number[] = [];
  const op = async () => {
    starts.push(clock.now());
    if (takesMs > 0) await clock.sleep(takesMs);
    throw transient();
  };
  return { op, starts };
}

describe.each(ways)('retry time bounds via %s', (_name, wrap) => {
  it('maxElapsedMs counts from when the first attempt began, on a clock that does not start at 0', async () => {
    const clock = new FakeClock(10_000);
    const { op, starts } = failing(clock);
    const policy = retry({ clock, maxAttempts: Infinity, maxElapsedMs: 350, backoff: constant(100) });
    const call = wrap(policy)
      .execute(op)
      .catch((e: unknown) => e);
    await clock.advance(1_000);
    expect(starts).toEqual([10_000, 10_100, 10_200, 10_300]);
    expect(((await call) as RetriesExhaustedError).reason).toBe('elapsed');
  });

  it('an attempt may start exactly maxElapsedMs after the first began', async () => {
    const clock = new FakeClock();
    const { op, starts } = failing(clock);
    const policy = retry({ clock, maxAttempts: Infinity, maxElapsedMs: 300, backoff: constant(100) });
    const call = wrap(policy)
      .execute(op)
      .catch((e: unknown) => e);
    await clock.advance(1_000);
    expect(starts).toEqual([0, 100, 200, 300]);
    const error = (await call) as RetriesExhaustedError;
    expect(error.reason).toBe('elapsed');
    expect(error.attempts).toBe(4);
  });

  it('the room another attempt needs is the last attempt’s duration, on a clock that does not start at 0', async () => {
    const clock = new FakeClock(10_000);
    const { op, starts } = failing(clock, 40);
    // attempt 1: 10 000–10 040, sleep 10 → attempt 2: 10 050–10 090; 10 090 + 10 + 40 ≥ 10 120 → give up
    const call = wrap(retry({ clock, maxAttempts: 5, backoff: constant(10) }))
      .execute(op, { deadline: 10_120 })
      .catch((e: unknown) => e);
    await clock.advance(1_000);
    expect(starts).toEqual([10_000, 10_050]);
    expect(((await call) as RetriesExhaustedError).reason).toBe('deadline');
  });

  it('gives up when the wait plus another attempt would end exactly at the deadline', async () => {
    const clock = new FakeClock();
    const { op, starts } = failing(clock, 40);
    // attempt 1: 0–40; 40 + 10 + 40 = 90: another attempt would leave no time at all
    const call = wrap(retry({ clock, maxAttempts: 5, backoff: constant(10) }))
      .execute(op, { deadline: 90 })
      .catch((e: unknown) => e);
    await clock.advance(1_000);
    expect(starts).toEqual([0]);
    const error = (await call) as RetriesExhaustedError;
    expect(error.reason).toBe('deadline');
    expect(error.attempts).toBe(1);
  });

  it('retries when the wait plus another attempt ends before the deadline', async () => {
    const clock = new FakeClock();
    const { op, starts } = failing(clock, 40);
    // 40 + 10 + 40 = 90 < 91 → attempt 2 at 50–90; 90 + 10 + 40 ≥ 91 → give up
    const call = wrap(retry({ clock, maxAttempts: 5, backoff: constant(10) }))
      .execute(op, { deadline: 91 })
      .catch((e: unknown) => e);
    await clock.advance(1_000);
    expect(starts).toEqual([0, 50]);
    expect(((await call) as RetriesExhaustedError).attempts).toBe(2);
  });

  it.each([Number.NaN, -5, -0])(
    'reports a backoff of %s as no wait (delayMs 0) and retries at once',
    async (ms) => {
      const clock = new FakeClock();
      const events: RetryEvent[] = [];
      const starts: number[] = [];
      const op = () => {
        starts.push(clock.now());
        if (starts.length < 3) throw transient();
        return 'ok';
      };
      const policy = retry({ clock, maxAttempts: 3, backoff: () => ms, onRetry: (e) => events.push(e) });
      const call = wrap(policy).execute(op);
      await clock.advance(0);
      await expect(call).resolves.toBe('ok');
      expect(starts).toEqual([0, 0, 0]);
      expect(events.map((e) => [e.attempt, e.delayMs])).toEqual([
        [1, 0],
        [2, 0],
      ]);
    },
  );

  it('the onRetry option hears every retry, with the failed attempt’s error', async () => {
    const clock = new FakeClock();
    const onRetry = vi.fn();
    const errors: unknown[] = [];
    const op = () => {
      const error = transient();
      errors.push(error);
      if (errors.length < 3) throw error;
      return 'ok';
    };
    const call = wrap(retry({ clock, maxAttempts: 3, backoff: constant(10), onRetry })).execute(op);
    await clock.advance(100);
    await expect(call).resolves.toBe('ok');
    expect(onRetry.mock.calls).toEqual([
      [{ attempt: 1, delayMs: 10, error: errors[0] }],
      [{ attempt: 2, delayMs: 10, error: errors[1] }],
    ]);
  });

  it.each([0, 10])(
    'a caller abort from an onRetry listener (backoff %i ms) ends the call before another attempt',
    async (ms) => {
      const clock = new FakeClock();
      const controller = new AbortController();
      const reason = new Error('caller left');
      const op = vi.fn(() => {
        throw transient();
      });
      const policy = retry({
        clock,
        maxAttempts: 5,
        backoff: constant(ms),
        onRetry: () => controller.abort(reason),
      });
      const call = wrap(policy)
        .execute(op, { signal: controller.signal })
        .catch((e: unknown) => e);
      await clock.advance(1_000);
      expect(await call).toBe(reason);
      expect(op).toHaveBeenCalledTimes(1);
    },
  );
});

describe('nested retries', () => {
  it('an inner retry numbers its own attempts from 1 inside each outer attempt', async () => {
    const clock = new FakeClock();
    const seen: number[] = [];
    const policy = pipeline(
      retryAll({ clock, maxAttempts: 2, backoff: constant(10) }),
      retryAll({ clock, maxAttempts: 2, backoff: constant(1) }),
    );
    const call = policy
      .execute(({ attempt }) => {
        seen.push(attempt);
        throw transient();
      })
      .catch((e: unknown) => e);
    await clock.advance(1_000);
    await call;
    expect(seen).toEqual([1, 2, 1, 2]);
  });
});

describe.each(ways)('retry with a throwing backoff via %s', (_name, wrap) => {
  it('ends the call with the backoff’s error: no retry, no event, no budget withdrawn, no timer', async () => {
    const clock = new FakeClock();
    const bug = new Error('backoff bug');
    const onRetry = vi.fn();
    const onGiveUp = vi.fn();
    const budget = retryBudget({ minPerSecond: 1, ratio: 0, clock });
    const policy = retry({
      clock,
      budget,
      onRetry,
      onGiveUp,
      backoff: () => {
        throw bug;
      },
    });
    const { op, starts } = failing(clock);
    const before = budget.available;
    const call = wrap(policy)
      .execute(op)
      .catch((e: unknown) => e);
    await clock.advance(0);
    expect(await call).toBe(bug);
    expect(starts).toEqual([0]);
    expect(onRetry).not.toHaveBeenCalled();
    expect(onGiveUp).not.toHaveBeenCalled();
    expect(budget.available).toBe(before);
    expect(clock.aliveTimers).toBe(0);
  });
});
