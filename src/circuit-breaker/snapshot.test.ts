import { describe, expect, it } from 'vitest';
import { ResilienceError } from '../core/errors.js';
import { FakeClock } from '../testing/fake-clock.js';
import { circuitBreaker } from './circuit-breaker.js';
import type { CircuitOpenError } from './errors.js';

const down = () => Promise.reject(new ResilienceError('down', { code: 'E', kind: 'unavailable' }));

describe('circuitBreaker toJSON / initialState', () => {
  it('round-trips an open circuit: still open with the same time left, then the next call probes it', async () => {
    const clock = new FakeClock(1_000_000);
    const before = circuitBreaker({ clock, failureThreshold: 2, resetTimeoutMs: 5_000, resetBackoff: 2 });
    await before.execute(down).catch(() => {});
    await before.execute(down).catch(() => {});
    await clock.advance(1_000);
    const saved = JSON.parse(JSON.stringify(before));
    expect(saved).toEqual({ state: 'open', consecutiveFailures: 2, reopenCount: 0, openUntil: 1_005_000 });

    const after = circuitBreaker({
      clock,
      failureThreshold: 2,
      resetTimeoutMs: 5_000,
      resetBackoff: 2,
      initialState: saved,
    });
    expect(after.state).toBe('open');
    const refused = (await after.execute(() => 'x').catch((e: unknown) => e)) as CircuitOpenError;
    expect(refused.retryAfterMs).toBe(4_000);
    await clock.advance(4_000);
    expect(after.state).toBe('open'); // until a call probes it
    await after.execute(() => 'probe ok');
    expect(JSON.parse(JSON.stringify(after))).toEqual({
      state: 'closed',
      consecutiveFailures: 0,
      reopenCount: 0,
    });
  });

  it('restores isolated and closed states, and the re-open backoff count', async () => {
    const clock = new FakeClock();
    const isolated = circuitBreaker({
      clock,
      initialState: { state: 'isolated', consecutiveFailures: 0, reopenCount: 0 },
    });
    expect(isolated.state).toBe('isolated');
    const restored = circuitBreaker({
      clock,
      failureThreshold: 1,
      resetTimeoutMs: 100,
      resetBackoff: 2,
      initialState: { state: 'half-open', consecutiveFailures: 3, reopenCount: 2 },
    });
    await restored.execute(down).catch(() => {}); // the probe fails: re-open number 3
    const refused = (await restored.execute(() => 'x').catch((e: unknown) => e)) as CircuitOpenError;
    expect(refused.retryAfterMs).toBe(800);
  });

  it.each([
    [{ state: 'broken' }, /"initialState.state".*"broken"/],
    [{ state: 'open', consecutiveFailures: 0, reopenCount: 0 }, /"initialState.openUntil"/],
    [{ state: 'closed', consecutiveFailures: -1, reopenCount: 0 }, /"initialState.consecutiveFailures".*-1/],
    ['open', /"initialState".*"open"/],
  ])('rejects a bad initialState %o', (initialState, message) => {
    expect(() => circuitBreaker({ initialState: initialState as never })).toThrow(message);
  });
});
