import { describe, expect, it } from 'vitest';
import type { Context } from '../core/context.js';
import { isTimeoutError, TimeoutError } from '../core/errors.js';
import { FakeClock } from '../testing/fake-clock.js';
import { circuitBreaker } from './circuit-breaker.js';

/** Settles only when its signal aborts; records when that happened. */
function hangs(clock: FakeClock, abortedAt: number[]) {
  return ({ signal }: Context) =>
    new Promise<never>((_, reject) =>
      signal.addEventListener('abort', () => {
        abortedAt.push(clock.now());
        reject(signal.reason);
      }),
    );
}

describe('circuitBreaker callTimeoutMs', () => {
  it('runs each admitted call under the timeout: its signal aborts and it fails with TimeoutError', async () => {
    const clock = new FakeClock();
    const breaker = circuitBreaker({ clock, callTimeoutMs: 100, failureThreshold: 10 });
    const abortedAt: number[] = [];
    const call = breaker.execute(hangs(clock, abortedAt)).catch((e: unknown) => e);
    await clock.advance(100);
    const error = await call;
    expect(isTimeoutError(error)).toBe(true);
    expect(abortedAt).toEqual([100]);
  });

  it('stretches to callTimeoutMs × (1 + failures/10) while failures accumulate, capped; a success restores it', async () => {
    const clock = new FakeClock();
    const breaker = circuitBreaker({
      clock,
      callTimeoutMs: 100,
      maxCallTimeoutMs: 250,
      failureThreshold: 100,
    });
    const limits: number[] = [];
    for (let i = 0; i < 20; i++) {
      const abortedAt: number[] = [];
      const start = clock.now();
      const call = breaker.execute(hangs(clock, abortedAt)).catch(() => {});
      await clock.advance(1_000);
      await call;
      limits.push(abortedAt[0]! - start);
    }
    expect(limits.slice(0, 6)).toEqual([100, 110, 120, 130, 140, 150]);
    expect(limits.at(-1)).toBe(250);
    expect(breaker.callTimeoutMs).toBe(250);
    await breaker.execute(() => 'ok');
    expect(breaker.callTimeoutMs).toBe(100);
  });

  it("a caller's earlier deadline wins", async () => {
    const clock = new FakeClock();
    const breaker = circuitBreaker({ clock, callTimeoutMs: 1_000 });
    const abortedAt: number[] = [];
    const call = breaker.execute(hangs(clock, abortedAt), { deadline: 40 }).catch((e: unknown) => e);
    await clock.advance(1_000);
    expect(await call).toBeInstanceOf(TimeoutError);
    expect(abortedAt).toEqual([40]);
  });

  it('timeouts count as failures and open the circuit', async () => {
    const clock = new FakeClock();
    const breaker = circuitBreaker({ clock, callTimeoutMs: 50, failureThreshold: 2 });
    for (let i = 0; i < 2; i++) {
      const call = breaker.execute(hangs(clock, [])).catch(() => {});
      await clock.advance(1_000);
      await call;
    }
    expect(breaker.state).toBe('open');
  });
});
