import { describe, expect, it } from 'vitest';
import { ResilienceError } from '../core/errors.js';
import { pipeline } from '../core/pipeline.js';
import type { Policy } from '../core/policy.js';
import { FakeClock } from '../testing/fake-clock.js';
import { type CircuitBreakerPolicy, circuitBreaker } from './circuit-breaker.js';

const ways = [
  ['execute', (b: CircuitBreakerPolicy): Policy => b],
  ['pipeline', (b: CircuitBreakerPolicy): Policy => pipeline(b)],
] as const;

const down = () => Promise.reject(new ResilienceError('down', { code: 'E', kind: 'unavailable' }));

describe.each(ways)('reading a breaker is pure (via %s)', (_name, wrap) => {
  it('after the reset timeout, state and toJSON read "open" and fire nothing; the next call half-opens, firing once', async () => {
    const clock = new FakeClock();
    const breaker = circuitBreaker({ clock, failureThreshold: 1, resetTimeoutMs: 1_000 });
    const changes: string[] = [];
    breaker.onStateChange(({ from, to }) => changes.push(`${from}→${to}`));
    await wrap(breaker)
      .execute(down)
      .catch(() => {});
    await clock.advance(5_000);
    for (let i = 0; i < 100; i++) expect(breaker.state).toBe('open'); // a dashboard polling
    for (let i = 0; i < 10; i++) {
      expect(breaker.toJSON()).toEqual({
        state: 'open',
        consecutiveFailures: 1,
        reopenCount: 0,
        openUntil: 1_000,
      });
    }
    expect(JSON.parse(JSON.stringify(breaker)).state).toBe('open');
    expect(changes).toEqual(['closed→open']);

    let stateInsideProbe: string | undefined;
    await wrap(breaker).execute(() => {
      stateInsideProbe = breaker.state;
      return 'ok';
    });
    expect(stateInsideProbe).toBe('half-open');
    expect(changes).toEqual(['closed→open', 'open→half-open', 'half-open→closed']);
  });

  it('a restored open circuit past its time reads open until a call probes it', async () => {
    const clock = new FakeClock(10_000);
    const breaker = circuitBreaker({
      clock,
      initialState: { state: 'open', consecutiveFailures: 5, reopenCount: 0, openUntil: 5_000 },
    });
    const changes: string[] = [];
    breaker.onStateChange(({ from, to }) => changes.push(`${from}→${to}`));
    expect(breaker.state).toBe('open');
    expect(breaker.toJSON().state).toBe('open');
    expect(changes).toEqual([]);
    await wrap(breaker)
      .execute(down)
      .catch(() => {}); // the probe fails: open again
    expect(changes).toEqual(['open→half-open', 'half-open→open']);
  });
});
