import { describe, expect, it, vi } from 'vitest';
import { ResilienceError } from '../core/errors.js';
import { pipeline } from '../core/pipeline.js';
import type { Policy } from '../core/policy.js';
import { FakeClock } from '../testing/fake-clock.js';
import { constant } from './backoff.js';
import type { GiveUpEvent, RetryOptions } from './options.js';
import { retry } from './retry.js';

const day = 86_400_000;
const asksToWait = (retryAfterMs: number) =>
  new ResilienceError('come back later', { code: 'E_BUSY', kind: 'unavailable', retryAfterMs });

// Both the execute fast path and the composed path (runStep) decide the same way.
const ways = [
  ['execute', (p: Policy): Policy => p],
  ['pipeline', (p: Policy): Policy => pipeline(p)],
] as const;

function setup(options: RetryOptions = {}) {
  const clock = new FakeClock();
  const gaveUp: GiveUpEvent[] = [];
  const onRetry = vi.fn();
  const policy = retry({ clock, maxAttempts: 5, backoff: constant(10), onRetry, ...options });
  policy.onGiveUp((event) => gaveUp.push(event));
  return { clock, policy, gaveUp, onRetry };
}

/** Starts a call and reports how it settled once pending microtasks ran (no time passes). */
async function settledAtOnce(clock: FakeClock, call: Promise<unknown>) {
  let result: { ok: boolean; value?: unknown; error?: unknown } | undefined;
  call.then(
    (value) => (result = { ok: true, value }),
    (error: unknown) => (result = { ok: false, error }),
  );
  await clock.advance(0);
  return result;
}

describe.each(ways)('retry maxRetryAfterMs via %s', (_name, wrap) => {
  it('a Retry-After of 30 days (above the 60 s default) gives up at once with that error, retryAfterMs intact', async () => {
    const { clock, policy, gaveUp, onRetry } = setup();
    const error = asksToWait(30 * day);
    const op = vi.fn(() => Promise.reject(error));
    const result = await settledAtOnce(clock, wrap(policy).execute(op));
    expect(result).toEqual({ ok: false, error });
    expect((result!.error as ResilienceError).retryAfterMs).toBe(30 * day);
    expect(op).toHaveBeenCalledTimes(1);
    expect(clock.pendingTimers).toBe(0); // no sleep for days
    expect(onRetry).not.toHaveBeenCalled();
    expect(gaveUp).toEqual([{ attempts: 1, error, reason: 'retry-after' }]);
  });

  it('an HTTP Retry-After header of 30 days gives up at once too', async () => {
    const { clock, policy, gaveUp } = setup();
    const error = Object.assign(new Error('429'), { status: 429, headers: { 'retry-after': '2592000' } });
    const result = await settledAtOnce(
      clock,
      wrap(policy).execute(() => Promise.reject(error)),
    );
    expect(result).toEqual({ ok: false, error });
    expect(clock.pendingTimers).toBe(0);
    expect(gaveUp.map((e) => e.reason)).toEqual(['retry-after']);
  });

  it('waits a Retry-After up to maxRetryAfterMs; gives up on a later attempt asking for more', async () => {
    const { clock, policy, gaveUp } = setup({ maxRetryAfterMs: 1_000 });
    const starts: number[] = [];
    const late = asksToWait(1_001);
    const op = () => {
      starts.push(clock.now());
      return Promise.reject(starts.length === 1 ? asksToWait(1_000) : late);
    };
    const call = wrap(policy)
      .execute(op)
      .catch((e: unknown) => e);
    await clock.advance(1_000);
    expect(await call).toBe(late);
    expect(starts).toEqual([0, 1_000]);
    expect(gaveUp).toEqual([{ attempts: 2, error: late, reason: 'retry-after' }]);
  });

  it('maxRetryAfterMs: Infinity means no cap: it sleeps the 30 days', async () => {
    const { clock, policy } = setup({ maxRetryAfterMs: Infinity });
    const starts: number[] = [];
    const op = () => {
      starts.push(clock.now());
      return starts.length === 1 ? Promise.reject(asksToWait(30 * day)) : 'ok';
    };
    const call = wrap(policy).execute(op);
    await clock.advance(30 * day);
    await expect(call).resolves.toBe('ok');
    expect(starts).toEqual([0, 30 * day]);
  });

  it('maxRetryAfterMs: 0 gives up on any asked wait, and still retries failures that ask none', async () => {
    const { clock, policy } = setup({ maxRetryAfterMs: 0 });
    let calls = 0;
    const op = () => {
      calls++;
      if (calls === 1) throw new ResilienceError('blip', { code: 'E', kind: 'transient' });
      throw asksToWait(1);
    };
    const call = wrap(policy)
      .execute(op)
      .catch((e: unknown) => e);
    await clock.advance(10);
    expect(await call).toMatchObject({ retryAfterMs: 1 });
    expect(calls).toBe(2);
  });
});

describe('retry maxRetryAfterMs validation', () => {
  it.each([-1, Number.NaN, '60000', null])(
    'rejects maxRetryAfterMs %o with a TypeError naming it',
    (value) => {
      expect(() => retry({ maxRetryAfterMs: value as never })).toThrow(TypeError);
      expect(() => retry({ maxRetryAfterMs: value as never })).toThrow(/"maxRetryAfterMs"/);
    },
  );

  it('accepts 0, a finite duration and Infinity', () => {
    for (const maxRetryAfterMs of [0, 5_000, Infinity])
      expect(() => retry({ maxRetryAfterMs })).not.toThrow();
  });
});
