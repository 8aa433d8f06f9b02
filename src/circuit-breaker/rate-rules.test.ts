import { describe, expect, it } from 'vitest';
import { ResilienceError } from '../core/errors.js';
import { pipeline } from '../core/pipeline.js';
import type { Policy } from '../core/policy.js';
import { FakeClock } from '../testing/fake-clock.js';
import { type CircuitBreakerPolicy, circuitBreaker } from './circuit-breaker.js';

const down = () => new ResilienceError('down', { code: 'E_DOWN', kind: 'unavailable' });

const ways = [
  ['execute', (b: CircuitBreakerPolicy): Policy => b],
  ['pipeline', (b: CircuitBreakerPolicy): Policy => pipeline(b)],
] as const;

describe.each(ways)('circuitBreaker rate rules (via %s)', (_name, wrap) => {
  /** Runs one call that takes `ms` of fake time, then succeeds (or fails with `error`). */
  const call = async (clock: FakeClock, policy: Policy, ms: number, error?: unknown) => {
    const result = policy
      .execute(async () => {
        await clock.sleep(ms);
        if (error !== undefined) throw error;
        return 'ok';
      })
      .then(
        (value) => ({ ok: true as const, value }),
        (e: unknown) => ({ ok: false as const, error: e }),
      );
    await clock.advance(ms);
    return result;
  };

  it('the slow-call rule alone opens on slow calls, judged over 20 calls by default', async () => {
    const clock = new FakeClock();
    const breaker = circuitBreaker({ clock, slowCallMs: 100, slowCallRate: 0.5 });
    const policy = wrap(breaker);
    for (let i = 0; i < 19; i++) expect(await call(clock, policy, 100)).toEqual({ ok: true, value: 'ok' });
    expect(breaker.state).toBe('closed'); // 19 calls: too few to judge
    await call(clock, policy, 100);
    expect(breaker.state).toBe('open');
  });

  it('with the slow-call rule alone, a failed call fails with its own error and trips nothing', async () => {
    const clock = new FakeClock();
    const breaker = circuitBreaker({ clock, slowCallMs: 100, slowCallRate: 0.5 });
    const policy = wrap(breaker);
    for (let i = 0; i < 30; i++) {
      const error = down();
      expect(await call(clock, policy, 0, error)).toEqual({ ok: false, error });
    }
    expect(breaker.state).toBe('closed');
  });

  it('a call is slow from exactly slowCallMs; a millisecond less is not slow', async () => {
    const clock = new FakeClock(5_000);
    const breaker = circuitBreaker({
      clock,
      slowCallMs: 100,
      slowCallRate: 0.5,
      failureRate: { threshold: 1, windowMs: 60_000, minimumThroughput: 4 },
    });
    const policy = wrap(breaker);
    for (let i = 0; i < 4; i++) await call(clock, policy, 99);
    expect(breaker.state).toBe('closed'); // none of 4 slow
    for (let i = 0; i < 3; i++) await call(clock, policy, 100);
    expect(breaker.state).toBe('closed'); // 3 slow of 7
    await call(clock, policy, 100);
    expect(breaker.state).toBe('open'); // 4 slow of 8
  });

  it('a success never opens it, even when old successes slid out and the failure rate is above the threshold', async () => {
    const clock = new FakeClock();
    const breaker = circuitBreaker({
      clock,
      failureRate: { threshold: 0.6, windowMs: 1_000, minimumThroughput: 4 },
    });
    const policy = wrap(breaker);
    for (let i = 0; i < 3; i++) await call(clock, policy, 0);
    await clock.advance(900);
    for (let i = 0; i < 3; i++) await call(clock, policy, 0, down());
    expect(breaker.state).toBe('closed'); // 3 failed of 6
    await clock.advance(100); // the 3 successes slide out
    await call(clock, policy, 0);
    expect(breaker.state).toBe('closed'); // 3 failed of 4, but this call succeeded
    await call(clock, policy, 0, down());
    expect(breaker.state).toBe('open'); // 4 failed of 5
  });

  it('a fast call never opens it, even when old fast calls slid out and the slow rate is above the threshold', async () => {
    const clock = new FakeClock();
    const breaker = circuitBreaker({
      clock,
      slowCallMs: 100,
      slowCallRate: 0.6,
      failureRate: { threshold: 1, windowMs: 1_000, minimumThroughput: 4 },
    });
    const policy = wrap(breaker);
    for (let i = 0; i < 3; i++) await call(clock, policy, 0);
    await clock.advance(800);
    const slow = Array.from({ length: 3 }, () => policy.execute(() => clock.sleep(100).then(() => 'slow')));
    await clock.advance(100);
    expect(await Promise.all(slow)).toEqual(['slow', 'slow', 'slow']);
    expect(breaker.state).toBe('closed'); // 3 slow of 6
    await clock.advance(100); // the 3 fast calls slide out
    await call(clock, policy, 0);
    expect(breaker.state).toBe('closed'); // 3 slow of 4, but this call was fast
    await call(clock, policy, 100);
    expect(breaker.state).toBe('open'); // 4 slow of 5
  });

  it('reset() forgets the calls in the failure-rate window', async () => {
    const clock = new FakeClock();
    const breaker = circuitBreaker({
      clock,
      failureRate: { threshold: 0.5, windowMs: 10_000, minimumThroughput: 4 },
    });
    const policy = wrap(breaker);
    for (let i = 0; i < 3; i++) await call(clock, policy, 0, down());
    breaker.reset();
    await call(clock, policy, 0, down());
    expect(breaker.state).toBe('closed'); // 1 call since the reset: too few to judge
    for (let i = 0; i < 3; i++) await call(clock, policy, 0, down());
    expect(breaker.state).toBe('open');
  });

  it('closing after a successful probe forgets the calls in the failure-rate window', async () => {
    const clock = new FakeClock();
    const breaker = circuitBreaker({
      clock,
      resetTimeoutMs: 100,
      failureRate: { threshold: 0.5, windowMs: 10_000, minimumThroughput: 4 },
    });
    const policy = wrap(breaker);
    for (let i = 0; i < 4; i++) await call(clock, policy, 0, down());
    expect(breaker.state).toBe('open');
    await clock.advance(100);
    await call(clock, policy, 0); // the probe succeeds: closed
    expect(breaker.state).toBe('closed');
    await call(clock, policy, 0, down());
    expect(breaker.state).toBe('closed'); // 1 call since closing
  });
});
