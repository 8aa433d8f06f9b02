import { describe, expect, it } from 'vitest';
import type { Context } from '../core/context.js';
import { ResilienceError } from '../core/errors.js';
import { pipeline } from '../core/pipeline.js';
import type { Policy } from '../core/policy.js';
import type { FailureEvent, RejectedEvent, SuccessEvent } from '../core/policy-events.js';
import { FakeClock } from '../testing/fake-clock.js';
import { type CircuitBreakerPolicy, circuitBreaker } from './circuit-breaker.js';
import type { CircuitBreakerOptions } from './options.js';

const down = () => new ResilienceError('down', { code: 'E_DOWN', kind: 'unavailable' });

const ways = [
  ['execute', (b: CircuitBreakerPolicy): Policy => b],
  ['pipeline', (b: CircuitBreakerPolicy): Policy => pipeline(b)],
] as const;

// Untimed (the fast path), timed by a call timeout, by a slow-call rule, by trackLatency, sampling.
const configs: [string, CircuitBreakerOptions][] = [
  ['consecutive', { failureThreshold: 2 }],
  ['callTimeoutMs', { failureThreshold: 2, callTimeoutMs: 1_000 }],
  ['slow-call rule', { failureThreshold: 2, slowCallMs: 500, slowCallRate: 1 }],
  [
    'count window + trackLatency',
    { failureThreshold: 2, window: { type: 'count', size: 10 }, trackLatency: true },
  ],
  ['half-open sampling', { failureThreshold: 2, halfOpenProbes: 2, halfOpenSuccessRate: 0.5 }],
];

describe.each(ways)('circuitBreaker onSuccess / onFailure (via %s)', (_name, wrap) => {
  it.each(configs)(
    '%s: each fires once per call with its durationMs; a refusal fires onRejected only',
    async (_c, options) => {
      const clock = new FakeClock();
      const breaker = circuitBreaker({ clock, resetTimeoutMs: 100, name: 'payments', ...options });
      const events: (SuccessEvent | FailureEvent | RejectedEvent)[] = [];
      breaker.onSuccess((e) => events.push(e));
      breaker.onFailure((e) => events.push(e));
      breaker.onRejected((e) => events.push(e));
      const policy = wrap(breaker);
      const call = async (ms: number, error?: unknown) => {
        const done = policy
          .execute(async ({ signal }: Context) => {
            await clock.sleep(ms, signal);
            if (error !== undefined) throw error;
            return 'ok';
          })
          .catch(() => {});
        await clock.advance(ms);
        await done;
      };
      const failed = (durationMs: number) => ({
        policy: 'payments',
        error: expect.objectContaining({ code: 'E_DOWN' }),
        kind: 'unavailable',
        durationMs,
        handled: true,
      });
      await call(30);
      await call(40, down());
      await call(50, down()); // opens it
      await call(0); // refused
      await clock.advance(100);
      await call(20); // a probe
      expect(events).toEqual([
        { policy: 'payments', durationMs: 30 },
        failed(40),
        failed(50),
        { policy: 'payments', reason: 'open', error: expect.objectContaining({ code: 'ERR_CIRCUIT_OPEN' }) },
        { policy: 'payments', durationMs: 20 },
      ]);
    },
  );

  it('a call cut by callTimeoutMs fires onFailure once, as a timeout the breaker handled, at the limit', async () => {
    const clock = new FakeClock();
    const breaker = circuitBreaker({ clock, callTimeoutMs: 100 });
    const failures: FailureEvent[] = [];
    breaker.onFailure((e) => failures.push(e));
    breaker.onSuccess(() => failures.push({} as FailureEvent));
    const done = wrap(breaker)
      .execute(() => new Promise(() => {}))
      .catch(() => {});
    await clock.advance(100);
    await done;
    expect(failures).toEqual([
      {
        policy: 'circuit-breaker',
        error: expect.objectContaining({ name: 'TimeoutError' }),
        kind: 'timeout',
        durationMs: 100,
        handled: true,
      },
    ]);
  });
});
