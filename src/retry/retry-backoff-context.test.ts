/**
 * The backoff sees the failed attempt (`(n, { error | result, elapsedMs })`), and what a retry
 * policy does with what a backoff returns: NaN and negatives are no wait, `Infinity` and
 * non-numbers fail the call with a TypeError. Failure paths first; both through `execute` and
 * inside a pipeline.
 */
import { describe, expect, it, vi } from 'vitest';
import { ResilienceError } from '../core/errors.js';
import { pipeline } from '../core/pipeline.js';
import type { Policy } from '../core/policy.js';
import { FakeClock } from '../testing/fake-clock.js';
import {
  type BackoffContext,
  constant,
  decorrelatedJitter,
  delays,
  exponential,
  exponentialJitter,
  fullJitter,
  ignoresContext,
  linear,
  type RetryBackoff,
} from './backoff.js';
import { retryBudget } from './budget.js';
import { retry } from './retry.js';

const ways = [
  ['execute', (p: Policy): Policy => p],
  ['pipeline', (p: Policy): Policy => pipeline(p)],
] as const;

const transient = (retryAfterMs?: number) =>
  new ResilienceError('flaky', { code: 'E_FLAKY', kind: 'transient', retryAfterMs });

/** Settles a call on the clock and reports how it ended. */
async function run(clock: FakeClock, call: Promise<unknown>, ms = 10_000) {
  const settled = call.then(
    (value) => ({ ok: true as const, value }),
    (error: unknown) => ({ ok: false as const, error }),
  );
  await clock.advance(ms);
  return settled;
}

describe.each(ways)('a backoff returning a bad delay, via %s', (_name, wrap) => {
  it.each([
    ['Infinity', Infinity, 'Infinity'],
    ['a string', '100', '"100"'],
    ['undefined', undefined, 'undefined'],
  ])(
    '%s fails the call with a TypeError: no further attempt, no event, nothing from the budget',
    async (_label, delay, shown) => {
      const clock = new FakeClock(1_000);
      const budget = retryBudget({ ratio: 0, minPerSecond: 1, clock });
      const onRetry = vi.fn();
      const onGiveUp = vi.fn();
      const op = vi.fn(() => {
        throw transient();
      });
      const policy = retry({ clock, backoff: (() => delay) as never, budget, onRetry, onGiveUp });
      const r = await run(clock, wrap(policy).execute(op));
      expect(r).toEqual({
        ok: false,
        error: new TypeError(`expected "backoff" to return a finite number of milliseconds, got ${shown}`),
      });
      expect(op).toHaveBeenCalledTimes(1);
      expect(onRetry).not.toHaveBeenCalled();
      expect(onGiveUp).not.toHaveBeenCalled();
      expect(budget.available).toBe(10);
      expect(clock.pendingTimers).toBe(0);
    },
  );

  it('Infinity is refused even where maxElapsedMs would have stopped the call anyway', async () => {
    const clock = new FakeClock();
    const policy = retry({ clock, maxElapsedMs: 1_000, backoff: () => Infinity });
    const r = await run(
      clock,
      wrap(policy).execute(() => Promise.reject(transient())),
    );
    expect(r.ok).toBe(false);
    expect((r as { error: unknown }).error).toBeInstanceOf(TypeError);
  });

  it.each([Number.NaN, -Infinity, -1])(
    'a backoff of %s is no wait, yet an asked Retry-After is still waited',
    async (delay) => {
      const clock = new FakeClock();
      const starts: number[] = [];
      const op = () => {
        starts.push(clock.now());
        if (starts.length < 3) throw transient(starts.length === 1 ? 250 : undefined);
        return 'ok';
      };
      const r = await run(clock, wrap(retry({ clock, backoff: () => delay })).execute(op));
      expect(r).toEqual({ ok: true, value: 'ok' });
      expect(starts).toEqual([0, 250, 250]);
    },
  );
});

describe.each(ways)('the backoff context, via %s', (_name, wrap) => {
  it('tells the backoff each failed attempt’s error and the time since the first began', async () => {
    const clock = new FakeClock(10_000);
    const errors = [transient(), transient()];
    const seen: [number, BackoffContext][] = [];
    const backoff: RetryBackoff = (n, context) => {
      seen.push([n, context]);
      return 10;
    };
    let n = 0;
    const op = async () => {
      await clock.sleep(40);
      if (n < 2) throw errors[n++];
      return 'ok';
    };
    const r = await run(clock, wrap(retry({ clock, backoff })).execute(op));
    expect(r).toEqual({ ok: true, value: 'ok' });
    // attempt 1: 10 000–10 040; sleep 10; attempt 2: 10 050–10 090
    expect(seen).toStrictEqual([
      [1, { error: errors[0], elapsedMs: 40 }],
      [2, { error: errors[1], elapsedMs: 90 }],
    ]);
  });

  it('tells the backoff the refused result, under handleResult', async () => {
    const clock = new FakeClock(10_000);
    const seen: BackoffContext[] = [];
    const answers = [{ status: 503 }, { status: 429 }, { status: 200 }];
    let n = 0;
    const policy = retry({
      clock,
      handleResult: (value) => (value as { status: number }).status !== 200,
      // A longer pause after a 429 than after a 503.
      backoff: (_retry, context) => {
        seen.push(context);
        return (context.result as { status: number }).status === 429 ? 1_000 : 10;
      },
    });
    const starts: number[] = [];
    const r = await run(
      clock,
      wrap(policy).execute(() => {
        starts.push(clock.now());
        return answers[n++]!;
      }),
    );
    expect(r).toEqual({ ok: true, value: answers[2] });
    expect(starts).toEqual([10_000, 10_010, 11_010]);
    expect(seen).toStrictEqual([
      { result: answers[0], elapsedMs: 0 },
      { result: answers[1], elapsedMs: 10 },
    ]);
    expect('error' in seen[0]!).toBe(false);
  });
});

describe('which backoffs read their context', () => {
  it('none made here does (so the execute fast path stays), any of yours may', () => {
    for (const backoff of [
      constant(1),
      linear(1),
      exponential(),
      exponentialJitter(),
      fullJitter(),
      decorrelatedJitter(),
      delays([1]),
    ])
      expect(ignoresContext(backoff)).toBe(true);
    expect(ignoresContext(() => 1)).toBe(false);
    expect(ignoresContext((n) => constant(1)(n))).toBe(false);
  });
});
