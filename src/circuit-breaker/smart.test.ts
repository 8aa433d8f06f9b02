import { describe, expect, it, vi } from 'vitest';
import type { Context } from '../core/context.js';
import { isTimeoutError, ResilienceError } from '../core/errors.js';
import { isRetriesExhaustedError } from '../retry/errors.js';
import { FakeClock } from '../testing/fake-clock.js';
import { isCircuitOpenError } from './errors.js';
import { inferredResilient, smartResilience } from './smart.js';

const unavailable = (retryAfterMs?: number) =>
  new ResilienceError('down', { code: 'E_DOWN', kind: 'unavailable', retryAfterMs });

/** Settles the call on the fake clock. */
async function settle<T>(clock: FakeClock, call: Promise<T>, ms = 60_000) {
  const result = call.then(
    (value) => ({ ok: true as const, value }),
    (error: unknown) => ({ ok: false as const, error }),
  );
  await clock.advance(ms);
  return result;
}

describe('inferredResilient / smartResilience', () => {
  it('30 concurrent callers that each fail twice then succeed all succeed; exactly 90 calls; the breaker never opens', async () => {
    const clock = new FakeClock();
    const policy = inferredResilient({ clock });
    const changes = vi.fn();
    policy.breaker.onStateChange(changes);
    let calls = 0;
    const callers = Array.from({ length: 30 }, (_, i) => {
      let mine = 0;
      return policy.execute(() => {
        calls++;
        mine++;
        if (mine <= 2) throw unavailable();
        return i;
      });
    });
    const results = await settle(clock, Promise.all(callers));
    expect(results).toEqual({ ok: true, value: Array.from({ length: 30 }, (_, i) => i) });
    expect(calls).toBe(90);
    expect(changes).not.toHaveBeenCalled();
    expect(policy.breaker.state).toBe('closed');
  });

  it('5 logical calls that keep failing (20 operation calls) open it; the 6th is refused without calling', async () => {
    const clock = new FakeClock();
    const policy = inferredResilient({ clock });
    const op = vi.fn(() => {
      throw unavailable();
    });
    for (let i = 0; i < 5; i++) {
      const r = await settle(clock, policy.execute(op), 5_000);
      expect(isRetriesExhaustedError((r as { error: unknown }).error)).toBe(true);
    }
    expect(op).toHaveBeenCalledTimes(20);
    expect(policy.breaker.state).toBe('open');
    const retried = vi.fn();
    policy.retry.onRetry(retried);
    const sixth = await settle(clock, policy.execute(op), 0);
    expect(isCircuitOpenError((sixth as { error: unknown }).error)).toBe(true);
    expect(op).toHaveBeenCalledTimes(20);
    expect(retried).not.toHaveBeenCalled(); // an open breaker never reaches the retry
  });

  it('a 400 is called once and never counts against the breaker', async () => {
    const clock = new FakeClock();
    const policy = inferredResilient({ clock });
    const bad = Object.assign(new Error('bad request'), { status: 400 });
    const op = vi.fn(() => {
      throw bad;
    });
    for (let i = 0; i < 10; i++) {
      expect(await settle(clock, policy.execute(op))).toEqual({ ok: false, error: bad });
    }
    expect(op).toHaveBeenCalledTimes(10);
    expect(policy.breaker.state).toBe('closed');
  });

  it('waits out retryAfterMs when it fits the call timeout', async () => {
    const clock = new FakeClock();
    const policy = inferredResilient({ clock });
    const starts: number[] = [];
    const r = await settle(
      clock,
      policy.execute(() => {
        starts.push(clock.now());
        if (starts.length === 1)
          throw Object.assign(new Error('429'), { status: 429, headers: { 'retry-after': '2' } });
        return 'ok';
      }),
    );
    expect(r).toEqual({ ok: true, value: 'ok' });
    expect(starts).toEqual([0, 2_000]);
  });

  it('gives up at once when the asked wait cannot fit the call timeout', async () => {
    const clock = new FakeClock();
    const policy = inferredResilient({ clock });
    const op = vi.fn(() => {
      throw unavailable(5_000);
    });
    const call = policy.execute(op).catch((e: unknown) => e);
    await clock.advance(0);
    const error = await call;
    expect(isRetriesExhaustedError(error) && error.reason).toBe('deadline');
    expect(op).toHaveBeenCalledTimes(1);
    expect(clock.now()).toBe(0);
  });

  it('backoff is a retry backoff: it sees the failed attempt and the time since the first began', async () => {
    const clock = new FakeClock();
    const seen: [number, unknown, number][] = [];
    const policy = smartResilience({
      clock,
      maxAttempts: 3,
      backoff: (n, { error, elapsedMs }) => {
        seen.push([n, (error as ResilienceError).code, elapsedMs]);
        return 100 * n;
      },
    });
    let calls = 0;
    const r = await settle(
      clock,
      policy.execute(async () => {
        calls++;
        if (calls < 3) throw unavailable();
        return 'ok';
      }),
    );
    expect(r).toEqual({ ok: true, value: 'ok' });
    expect(seen).toEqual([
      [1, 'E_DOWN', 0],
      [2, 'E_DOWN', 100],
    ]);
  });

  it('callTimeoutMs bounds the whole logical call, backoffs included', async () => {
    const clock = new FakeClock();
    const policy = smartResilience({ clock, callTimeoutMs: 1_000, maxAttempts: 10, backoff: () => 100 });
    const starts: number[] = [];
    const aborted: number[] = [];
    // Attempts fail after 50 ms, except the 7th, which hangs until its signal aborts.
    const op = ({ signal }: Context) =>
      new Promise((_, reject) => {
        starts.push(clock.now());
        const onAbort = () => {
          aborted.push(clock.now());
          reject(signal.reason);
        };
        signal.addEventListener('abort', onAbort);
        if (starts.length < 7) {
          clock.setTimer(() => {
            signal.removeEventListener('abort', onAbort);
            reject(unavailable());
          }, 50);
        }
      });
    const r = await settle(clock, policy.execute(op));
    expect(starts).toEqual([0, 150, 300, 450, 600, 750, 900]);
    expect(aborted).toEqual([1_000]);
    expect(isTimeoutError((r as { error: unknown }).error)).toBe(true);
  });

  it('gives up before a backoff that would run past the call timeout', async () => {
    const clock = new FakeClock();
    const policy = smartResilience({ clock, callTimeoutMs: 1_000, maxAttempts: 10, backoff: () => 100 });
    const starts: number[] = [];
    const op = () =>
      new Promise((_, reject) => {
        starts.push(clock.now());
        clock.setTimer(() => reject(unavailable()), 300);
      });
    const r = await settle(clock, policy.execute(op));
    // at 700 another 100 ms wait + a 300 ms attempt cannot fit before 1000
    expect(starts).toEqual([0, 400]);
    const error = (r as { error: unknown }).error;
    expect(isRetriesExhaustedError(error) && error.reason).toBe('deadline');
  });

  it('passes breaker options through and validates its own', async () => {
    const clock = new FakeClock();
    const onStateChange = vi.fn();
    const policy = smartResilience({
      clock,
      failureThreshold: 1,
      maxAttempts: 1,
      breaker: { onStateChange },
    });
    await settle(
      clock,
      policy.execute(() => {
        throw unavailable();
      }),
    );
    expect(onStateChange).toHaveBeenCalledWith({ from: 'closed', to: 'open' });
    expect(() => smartResilience({ maxAttempts: 0 })).toThrow(/"maxAttempts"/);
    expect(() => smartResilience({ callTimeoutMs: -1 })).toThrow(/"callTimeoutMs"/);
    expect(() => smartResilience({ breaker: 3 as never })).toThrow(/"breaker"/);
    expect(() => inferredResilient(7 as never)).toThrow(/"inferredResilient options"/);
  });
});

describe('smartResilience defaults and validation', () => {
  it('backs off exponentially from about 100 ms and never waits more than 2 s between attempts', async () => {
    const clock = new FakeClock();
    const policy = smartResilience({ clock, maxAttempts: 8, callTimeoutMs: 60_000 });
    const starts: number[] = [];
    const r = await settle(
      clock,
      policy.execute(() => {
        starts.push(clock.now());
        throw unavailable();
      }),
    );
    expect(isRetriesExhaustedError((r as { error: unknown }).error)).toBe(true);
    const gaps = starts.slice(1).map((at, i) => at - starts[i]!);
    expect(gaps).toHaveLength(7);
    expect(gaps[0]).toBeGreaterThanOrEqual(70);
    expect(gaps[0]).toBeLessThanOrEqual(130);
    for (const gap of gaps) expect(gap).toBeLessThanOrEqual(2_000);
    for (const gap of gaps.slice(5)) expect(gap).toBeGreaterThanOrEqual(1_400); // 2 s cap, less 30 % jitter
  });

  it('rejects bad options with a TypeError naming them', () => {
    expect(() => smartResilience(7 as never)).toThrow(
      /expected "smartResilience options" to be an options object, got 7/,
    );
    expect(() => smartResilience({ budget: {} as never })).toThrow(
      /expected "budget" to be a RetryBudget from retryBudget\(\), got /,
    );
  });
});
