import { describe, expect, it, vi } from 'vitest';
import type { Context } from '../core/context.js';
import { isTimeoutError } from '../core/errors.js';
import { pipeline } from '../core/pipeline.js';
import type { Policy } from '../core/policy.js';
import { isRetriesExhaustedError } from '../retry/errors.js';
import { FakeClock } from '../testing/fake-clock.js';
import { inferredResilient, type SmartResiliencePolicy, smartResilience } from './smart.js';

const ways = [
  ['execute', (p: SmartResiliencePolicy): Policy => p],
  ['pipeline', (p: SmartResiliencePolicy): Policy => pipeline(p)],
] as const;

/** Attempts that hang, ignoring their signal, except those listed as answering `ok` at once. */
function dependency(clock: FakeClock, answersOn: readonly number[]) {
  const starts: number[] = [];
  const abortedAt: number[] = [];
  const op = vi.fn((ctx: Context) => {
    starts.push(clock.now());
    ctx.signal.addEventListener('abort', () => abortedAt.push(clock.now()));
    return answersOn.includes(ctx.attempt)
      ? Promise.resolve(`ok on ${ctx.attempt}`)
      : new Promise<never>(() => {});
  });
  return { op, starts, abortedAt };
}

/** Settles the call on the fake clock; reports how and when. */
async function settled(clock: FakeClock, call: Promise<unknown>, ms = 10_000) {
  const result = call.then(
    (value) => ({ ok: true as const, value, at: clock.now() }),
    (error: unknown) => ({ ok: false as const, error, at: clock.now() }),
  );
  await clock.advance(ms);
  return result;
}

describe.each(ways)('smartResilience attemptTimeoutMs via %s', (_name, wrap) => {
  it('inferredResilient: a hung first attempt is cut at 1 s and retried; the second succeeds within the 3 s budget', async () => {
    const clock = new FakeClock();
    const policy = inferredResilient({ clock });
    const { op, starts, abortedAt } = dependency(clock, [2]);
    const r = await settled(clock, wrap(policy).execute(op));
    expect(r).toMatchObject({ ok: true, value: 'ok on 2' });
    expect(abortedAt).toEqual([1_000]); // the first attempt's signal, at its own limit
    expect(starts).toHaveLength(2);
    // exponentialJitter 100 ms ± 30 % before the retry
    expect(starts[1]).toBeGreaterThanOrEqual(1_070);
    expect(starts[1]).toBeLessThanOrEqual(1_130);
    expect((r as { at: number }).at).toBe(starts[1]);
    expect(policy.breaker.state).toBe('closed');
  });

  it('every attempt gets its own limit; retry stops once another would not fit the call timeout', async () => {
    const clock = new FakeClock();
    const policy = smartResilience({
      clock,
      attemptTimeoutMs: 300,
      callTimeoutMs: 1_000,
      maxAttempts: 10,
      backoff: () => 50,
    });
    const { starts, abortedAt, op } = dependency(clock, []);
    const r = await settled(clock, wrap(policy).execute(op));
    expect(starts).toEqual([0, 350]);
    expect(abortedAt).toEqual([300, 650]);
    // at 650, a 50 ms wait and another 300 ms attempt cannot end before the call's 1_000
    const error = (r as { error: unknown }).error;
    expect(isRetriesExhaustedError(error) && [error.reason, error.kind]).toEqual(['deadline', 'timeout']);
    expect(isTimeoutError((error as { cause: unknown }).cause)).toBe(true);
    expect((r as { at: number }).at).toBe(650);
  });

  it('retries exhausted on attempt timeouts fail with RetriesExhaustedError of kind timeout, counted by the breaker', async () => {
    const clock = new FakeClock();
    const policy = smartResilience({
      clock,
      attemptTimeoutMs: 100,
      maxAttempts: 2,
      backoff: () => 0,
      failureThreshold: 1,
    });
    const { op } = dependency(clock, []);
    const r = await settled(clock, wrap(policy).execute(op));
    const error = (r as { error: unknown }).error;
    expect(isRetriesExhaustedError(error) && error.kind).toBe('timeout');
    expect(op).toHaveBeenCalledTimes(2);
    expect(policy.breaker.state).toBe('open');
  });

  it('smartResilience without attemptTimeoutMs has no per-attempt limit: a 2.5 s attempt succeeds', async () => {
    const clock = new FakeClock();
    const policy = smartResilience({ clock });
    const r = await settled(
      clock,
      wrap(policy).execute(() => clock.sleep(2_500).then(() => 'slow but fine')),
    );
    expect(r).toEqual({ ok: true, value: 'slow but fine', at: 2_500 });
  });

  it("a caller's abort during an attempt ends the call at once, no retry", async () => {
    const clock = new FakeClock();
    const policy = inferredResilient({ clock });
    const { op } = dependency(clock, []);
    const controller = new AbortController();
    const call = settled(clock, wrap(policy).execute(op, { signal: controller.signal }), 0);
    await clock.advance(500);
    controller.abort(new Error('caller left'));
    const r = await call;
    expect(r).toMatchObject({ ok: false, error: { message: 'caller left' }, at: 500 });
    await clock.advance(5_000);
    expect(op).toHaveBeenCalledTimes(1);
    expect(policy.breaker.state).toBe('closed');
  });
});

describe('smartResilience attemptTimeoutMs validation', () => {
  it.each([0, -1, Number.NaN, Infinity, '1000'])('rejects attemptTimeoutMs %o naming the option', (value) => {
    expect(() => smartResilience({ attemptTimeoutMs: value as never })).toThrow(/"attemptTimeoutMs"/);
  });
});
