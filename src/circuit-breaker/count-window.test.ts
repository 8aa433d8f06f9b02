import { describe, expect, it, vi } from 'vitest';
import { ResilienceError } from '../core/errors.js';
import { pipeline } from '../core/pipeline.js';
import type { Policy } from '../core/policy.js';
import { FakeClock } from '../testing/fake-clock.js';
import { type CircuitBreakerPolicy, circuitBreaker } from './circuit-breaker.js';
import type { CircuitBreakerOptions } from './options.js';

const down = () => new ResilienceError('down', { code: 'E_DOWN', kind: 'unavailable' });

const ways = [
  ['execute', (b: CircuitBreakerPolicy): Policy => b],
  ['pipeline', (b: CircuitBreakerPolicy): Policy => pipeline(b)],
] as const;

function setup(options: CircuitBreakerOptions) {
  const clock = new FakeClock();
  const breaker = circuitBreaker({ clock, resetTimeoutMs: 100, ...options });
  return { clock, breaker };
}

describe.each(ways)('circuitBreaker count window (via %s)', (_name, wrap) => {
  /** Runs calls in order: 'F' fails (unavailable), 'S' succeeds. */
  const calls = async (policy: Policy, pattern: string) => {
    for (const c of pattern) {
      await policy.execute(() => (c === 'F' ? Promise.reject(down()) : 'ok')).catch(() => {});
    }
  };

  it('does not judge the rate before minimumThroughput calls, however many failed', async () => {
    const { breaker } = setup({
      window: { type: 'count', size: 10 },
      failureRate: { threshold: 0.5, minimumThroughput: 6 },
    });
    await calls(wrap(breaker), 'FFFFF');
    expect(breaker.state).toBe('closed'); // 5 of 5 failed, but 5 calls are too few
    await calls(wrap(breaker), 'F');
    expect(breaker.state).toBe('open');
  });

  it('judges the last N calls, however much time passed: the oldest call slides out', async () => {
    const { clock, breaker } = setup({
      window: { type: 'count', size: 4 },
      failureRate: { threshold: 0.5, minimumThroughput: 4 },
    });
    const policy = wrap(breaker);
    await calls(policy, 'SSFS');
    expect(breaker.state).toBe('closed'); // 1 of 4 failed
    await clock.advance(3_600_000); // a time window would have forgotten them all
    await calls(policy, 'F');
    expect(breaker.state).toBe('open'); // S F S F: 2 of the last 4 (of all 5 calls it would be 2 of 5)
  });

  it('minimumThroughput defaults to 20, or to the size of a smaller window', async () => {
    const small = setup({ window: { type: 'count', size: 5 }, failureRate: { threshold: 1 } });
    await calls(wrap(small.breaker), 'FFFF');
    expect(small.breaker.state).toBe('closed');
    await calls(wrap(small.breaker), 'F');
    expect(small.breaker.state).toBe('open'); // 5 of 5: judged at the window's size

    const large = setup({ window: { type: 'count', size: 50 }, failureRate: { threshold: 1 } });
    await calls(wrap(large.breaker), 'F'.repeat(19));
    expect(large.breaker.state).toBe('closed');
    await calls(wrap(large.breaker), 'F');
    expect(large.breaker.state).toBe('open');
  });

  it('the slow-call rule judges the same window', async () => {
    const { clock, breaker } = setup({
      window: { type: 'count', size: 4 },
      slowCallMs: 100,
      slowCallRate: 0.75,
    });
    const policy = wrap(breaker);
    const call = async (ms: number) => {
      const done = policy.execute(() => clock.sleep(ms).then(() => 'ok'));
      await clock.advance(ms);
      return done;
    };
    for (const ms of [100, 0, 0]) await call(ms);
    expect(breaker.state).toBe('closed'); // 3 calls: too few for a window of 4
    for (const ms of [0, 100, 100]) await call(ms);
    expect(breaker.state).toBe('closed'); // 0 0 100 100: 2 slow of the last 4, under 0.75
    await call(100);
    expect(breaker.state).toBe('open'); // 0 100 100 100: 3 of 4 (of all 7 calls it would be 4 of 7)
  });

  it('closing after a successful probe forgets the window', async () => {
    const { clock, breaker } = setup({
      window: { type: 'count', size: 10 },
      failureRate: { threshold: 0.5, minimumThroughput: 4 },
    });
    const policy = wrap(breaker);
    await calls(policy, 'SFFF');
    expect(breaker.state).toBe('open');
    await clock.advance(100);
    await calls(policy, 'S'); // the probe closes it
    expect(breaker.state).toBe('closed');
    await calls(policy, 'FFF');
    expect(breaker.state).toBe('closed'); // 3 calls since closing: too few
    await calls(policy, 'F');
    expect(breaker.state).toBe('open');
  });

  it("a refused call's place reports no latency: not the one of the call it pushed out", async () => {
    const { clock, breaker } = setup({
      window: { type: 'count', size: 3 },
      failureThreshold: 1,
      trackLatency: true,
    });
    const policy = wrap(breaker);
    const call = async (ms: number, error?: unknown) => {
      const done = policy
        .execute(async () => {
          await clock.sleep(ms);
          if (error !== undefined) throw error;
          return 'ok';
        })
        .catch(() => {});
      await clock.advance(ms);
      return done;
    };
    await call(50);
    await call(60);
    await call(10, down()); // opens it
    await call(0); // refused: takes the place of the 50 ms call
    await clock.advance(100);
    await call(20, down()); // the probe fails: takes the place of the 60 ms call
    expect(breaker.stats()).toEqual({
      successes: 0,
      failures: 2,
      timeouts: 0,
      slowCalls: 0,
      rejections: 1,
      latencyMs: { p50: 10, p90: 20, p99: 20, max: 20 },
    });
  });

  it('records calls without reading the clock (untimed: no call timeout, slow-call rule or latency)', async () => {
    const { clock, breaker } = setup({
      window: { type: 'count', size: 10 },
      failureRate: { threshold: 0.9, minimumThroughput: 10 },
    });
    const now = vi.spyOn(clock, 'now');
    await calls(wrap(breaker), 'SFSFSFSFSFSFSFSFSFSF');
    expect(now).not.toHaveBeenCalled();
    expect(breaker.stats()).toMatchObject({ successes: 5, failures: 5 });
  });
});
