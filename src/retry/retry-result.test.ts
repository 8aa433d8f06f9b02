/**
 * Retry on a result (`handleResult`): a refused value is retried like a retryable error, and when
 * the retries run out the call resolves with the last value (as cockatiel 3 and Polly do).
 * Failure paths first; every behaviour both through `execute` and inside a pipeline.
 */
import { describe, expect, expectTypeOf, it, vi } from 'vitest';
import { ResilienceError } from '../core/errors.js';
import { pipeline } from '../core/pipeline.js';
import type { Policy } from '../core/policy.js';
import { FakeClock } from '../testing/fake-clock.js';
import { constant } from './backoff.js';
import { retryBudget } from './budget.js';
import type { GiveUpEvent, RetryEvent, RetryOptions } from './options.js';
import { retry, retryIf } from './retry.js';

const ways = [
  ['execute', (p: Policy): Policy => p],
  ['pipeline', (p: Policy): Policy => pipeline(p)],
] as const;

/** A response-like value: `status`, and `headers` the policy reads a `Retry-After` from. */
const response = (status: number, headers: Record<string, string> = {}) => ({ status, headers });
type Answer = { readonly status: number };
const isBusy = (value: unknown) => (value as Answer).status === 503;

/** An operation answering each value in turn (the last one for ever), recording attempt starts. */
function answering<A>(clock: FakeClock, ...answers: A[]) {
  const starts: number[] = [];
  const op = vi.fn(() => {
    starts.push(clock.now());
    return answers[Math.min(starts.length, answers.length) - 1]!;
  });
  return { op, starts };
}

function setup(options: RetryOptions = {}, clock = new FakeClock(5_000)) {
  const retries: RetryEvent[] = [];
  const gaveUp: GiveUpEvent[] = [];
  const policy = retry({
    clock,
    maxAttempts: 3,
    backoff: constant(100),
    handleResult: isBusy,
    onRetry: (e) => retries.push(e),
    onGiveUp: (e) => gaveUp.push(e),
    ...options,
  });
  return { clock, policy, retries, gaveUp };
}

/** Watches a call so that its settlement can be read at any time. */
function watch(call: Promise<unknown>) {
  const state: { settled?: { ok: boolean; value?: unknown; error?: unknown } } = {};
  call.then(
    (value) => (state.settled = { ok: true, value }),
    (error: unknown) => (state.settled = { ok: false, error }),
  );
  return state;
}

describe.each(ways)('retry({ handleResult }) via %s: failure paths', (_name, wrap) => {
  it('an abort during the backoff after a refused value rejects with the reason; no attempt, no timer left', async () => {
    const { clock, policy } = setup({ backoff: constant(1_000) });
    const { op } = answering(clock, response(503));
    const controller = new AbortController();
    const call = watch(wrap(policy).execute(op, { signal: controller.signal }));
    await clock.advance(10);
    expect(op).toHaveBeenCalledTimes(1);
    const reason = new Error('user left');
    controller.abort(reason);
    await clock.advance(0);
    expect(call.settled).toEqual({ ok: false, error: reason });
    expect(clock.pendingTimers).toBe(0);
    await clock.advance(10_000);
    expect(op).toHaveBeenCalledTimes(1);
  });

  it('a refused value that arrives after the caller aborted is returned as it came, never retried', async () => {
    const { clock, policy, retries } = setup();
    const controller = new AbortController();
    const busy = response(503);
    const op = vi.fn(() => {
      controller.abort(new Error('gone'));
      return busy;
    });
    const call = watch(wrap(policy).execute(op, { signal: controller.signal }));
    await clock.advance(1_000);
    expect(call.settled).toEqual({ ok: true, value: busy });
    expect(op).toHaveBeenCalledTimes(1);
    expect(retries).toEqual([]);
  });

  it('a handleResult that throws fails the call with its error: not retried, no events, no budget deposit', async () => {
    const budget = retryBudget({ ratio: 1, minPerSecond: 0 });
    const deposit = vi.spyOn(budget, 'deposit');
    const bug = new Error('handleResult bug');
    const { clock, policy, retries, gaveUp } = setup({
      budget,
      handleResult: () => {
        throw bug;
      },
    });
    const { op } = answering(clock, response(200));
    const call = watch(wrap(policy).execute(op));
    await clock.advance(1_000);
    expect(call.settled).toEqual({ ok: false, error: bug });
    expect(op).toHaveBeenCalledTimes(1);
    expect([retries, gaveUp]).toEqual([[], []]);
    expect(deposit).not.toHaveBeenCalled();
  });

  it('a handleResult that throws on a later attempt ends the call there', async () => {
    const bug = new Error('second look failed');
    const seen: number[] = [];
    const { clock, policy } = setup({
      handleResult: (value, attempt) => {
        seen.push(attempt);
        if (attempt === 2) throw bug;
        return isBusy(value);
      },
    });
    const { op } = answering(clock, response(503));
    const call = watch(wrap(policy).execute(op));
    await clock.advance(1_000);
    expect(call.settled).toEqual({ ok: false, error: bug });
    expect(seen).toEqual([1, 2]);
  });

  it('out of attempts on refused values: resolves with the last value, onGiveUp carries it (no error key)', async () => {
    const { clock, policy, retries, gaveUp } = setup();
    const answers = [response(503), response(503), response(503)];
    const { op, starts } = answering(clock, ...answers);
    const call = watch(wrap(policy).execute(op));
    await clock.advance(1_000);
    expect(call.settled).toEqual({ ok: true, value: answers[2] });
    expect((call.settled as { value: unknown }).value).toBe(answers[2]);
    expect(starts).toEqual([5_000, 5_100, 5_200]);
    expect(retries).toStrictEqual([
      { attempt: 1, delayMs: 100, result: answers[0] },
      { attempt: 2, delayMs: 100, result: answers[1] },
    ]);
    expect(gaveUp).toStrictEqual([{ attempts: 3, reason: 'attempts', result: answers[2] }]);
  });

  it('maxAttempts: 1 gives up on the first refused value and resolves with it', async () => {
    const { clock, policy, gaveUp } = setup({ maxAttempts: 1 });
    const busy = response(503);
    const call = watch(wrap(policy).execute(() => busy));
    await clock.advance(0);
    expect(call.settled).toEqual({ ok: true, value: busy });
    expect(gaveUp).toStrictEqual([{ attempts: 1, reason: 'attempts', result: busy }]);
  });

  it('maxElapsedMs and the deadline stop result retries too, resolving with the last value', async () => {
    const elapsed = setup({ maxAttempts: Infinity, maxElapsedMs: 250 });
    const a = answering(elapsed.clock, response(503));
    const first = watch(wrap(elapsed.policy).execute(a.op));
    await elapsed.clock.advance(1_000);
    expect(a.starts).toEqual([5_000, 5_100, 5_200]);
    expect(first.settled?.ok).toBe(true);
    expect(elapsed.gaveUp.map((e) => [e.attempts, e.reason])).toEqual([[3, 'elapsed']]);

    const timed = setup({ maxAttempts: 10 });
    const b = answering(timed.clock, response(503));
    const second = watch(wrap(timed.policy).execute(b.op, { deadline: 5_150 }));
    await timed.clock.advance(1_000);
    expect(b.starts).toEqual([5_000, 5_100]);
    expect(second.settled?.ok).toBe(true);
    expect(timed.gaveUp.map((e) => [e.attempts, e.reason])).toEqual([[2, 'deadline']]);
  });

  it('a spent budget stops result retries: resolves with the value at once; refused values deposit nothing', async () => {
    const clock = new FakeClock(5_000);
    const budget = retryBudget({ ratio: 0.5, minPerSecond: 0, windowMs: 10_000, clock });
    const exhausted = vi.fn();
    budget.onExhausted(exhausted);
    const { policy, gaveUp } = setup({ budget }, clock);
    // Two accepted values earn one retry (ratio 0.5); the refused values earn nothing.
    await wrap(policy).execute(() => response(200));
    await wrap(policy).execute(() => response(200));
    const { op } = answering(clock, response(503));
    const call = watch(wrap(policy).execute(op));
    await clock.advance(1_000);
    expect(op).toHaveBeenCalledTimes(2);
    expect(call.settled).toEqual({ ok: true, value: response(503) });
    expect(gaveUp.map((e) => [e.attempts, e.reason])).toEqual([[2, 'budget']]);
    expect(exhausted).toHaveBeenCalledTimes(1);
  });

  it('waits a Retry-After the value states; one above maxRetryAfterMs resolves with the value at once', async () => {
    const { clock, policy, retries, gaveUp } = setup({ maxRetryAfterMs: 5_000 });
    const last = response(503, { 'retry-after': '60' });
    const { op, starts } = answering<Answer>(
      clock,
      new Response(null, { status: 503, headers: { 'Retry-After': '2' } }),
      last,
    );
    const call = watch(wrap(policy).execute(op));
    await clock.advance(10_000);
    expect(starts).toEqual([5_000, 7_000]);
    expect(retries.map((e) => e.delayMs)).toEqual([2_000]);
    expect(call.settled).toEqual({ ok: true, value: last });
    expect(gaveUp.map((e) => [e.attempts, e.reason])).toEqual([[2, 'retry-after']]);
  });
});

describe.each(ways)('retry({ handleResult }) via %s', (_name, wrap) => {
  it('retries refused values and resolves with the first accepted one; handleResult sees (value, attempt)', async () => {
    const seen: [number, number][] = [];
    const { clock, policy } = setup({
      handleResult: (value, attempt) => {
        seen.push([(value as Answer).status, attempt]);
        return isBusy(value);
      },
    });
    const ok = response(200);
    const { op } = answering(clock, response(503), ok);
    const call = watch(wrap(policy).execute(op));
    await clock.advance(1_000);
    expect(call.settled).toEqual({ ok: true, value: ok });
    expect(seen).toEqual([
      [503, 1],
      [200, 2],
    ]);
  });

  it('still retries errors as before, mixed with refused values', async () => {
    const { clock, policy, retries } = setup({ maxAttempts: 4 });
    const flaky = new ResilienceError('reset', { code: 'E_RESET', kind: 'transient' });
    const answers: (() => Answer)[] = [
      () => response(503),
      () => {
        throw flaky;
      },
      () => response(200),
    ];
    let n = 0;
    const call = watch(wrap(policy).execute(() => answers[n++]!()));
    await clock.advance(1_000);
    expect(call.settled).toEqual({ ok: true, value: response(200) });
    expect(retries).toStrictEqual([
      { attempt: 1, delayMs: 100, result: response(503) },
      { attempt: 2, delayMs: 100, error: flaky },
    ]);
  });

  it("retryIf's predicate judges errors only; handleResult judges values", async () => {
    const clock = new FakeClock();
    const predicate = vi.fn(() => true);
    const policy = retryIf(predicate, { clock, backoff: constant(10), handleResult: isBusy });
    const { op } = answering(clock, response(503), response(200));
    const call = watch(wrap(policy).execute(op));
    await clock.advance(100);
    expect(call.settled).toEqual({ ok: true, value: response(200) });
    expect(predicate).not.toHaveBeenCalled();
  });

  it('a call that gave up on a value resolved: onSuccess fires, onFailure does not', async () => {
    const { clock, policy } = setup();
    const onSuccess = vi.fn();
    const onFailure = vi.fn();
    policy.onSuccess(onSuccess);
    policy.onFailure(onFailure);
    const call = watch(wrap(policy).execute(() => response(503)));
    await clock.advance(1_000);
    expect(call.settled?.ok).toBe(true);
    expect(onSuccess).toHaveBeenCalledWith({ policy: 'retry', durationMs: 200 });
    expect(onFailure).not.toHaveBeenCalled();
  });
});

describe('retry({ handleResult }) options and types', () => {
  it('refuses a handleResult that is not a function, and a misspelling, naming it', () => {
    expect(() => retry({ handleResult: true } as never)).toThrow(
      new TypeError('expected "handleResult" to be a function, got true'),
    );
    expect(() => retry({ handleResults: isBusy } as never)).toThrow(/did you mean "handleResult"\?/);
  });

  it('keeps the operation’s type and the policy a Policy<never>', async () => {
    const policy = retry({ handleResult: (value) => value === null });
    expectTypeOf(policy).toMatchTypeOf<Policy>();
    expectTypeOf(policy.execute(() => 42)).toEqualTypeOf<Promise<number>>();
    expectTypeOf(pipeline(policy).execute(() => 'text' as string | null)).toEqualTypeOf<
      Promise<string | null>
    >();
    await expect(policy.execute(() => 42)).resolves.toBe(42);
  });
});
