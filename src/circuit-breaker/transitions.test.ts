import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { ResilienceError } from '../core/errors.js';
import { FakeClock } from '../testing/fake-clock.js';
import { circuitBreaker } from './circuit-breaker.js';
import type { CircuitBreakerOptions, CircuitState } from './options.js';

const legal = new Set([
  'closed→open',
  'open→half-open',
  'half-open→open',
  'half-open→closed',
  // only by isolate() / reset()
  'closed→isolated',
  'open→isolated',
  'half-open→isolated',
  'isolated→closed',
  'open→closed',
  'half-open→closed',
]);

type Step =
  | { kind: 'call'; outcome: 'ok' | 'transient' | 'bad' | 'abort'; durationMs: number }
  | { kind: 'advance'; ms: number }
  | { kind: 'isolate' }
  | { kind: 'reset' };

const step: fc.Arbitrary<Step> = fc.oneof(
  {
    weight: 6,
    arbitrary: fc.record({
      kind: fc.constant('call' as const),
      outcome: fc.constantFrom('ok' as const, 'transient' as const, 'bad' as const, 'abort' as const),
      durationMs: fc.integer({ min: 0, max: 300 }),
    }),
  },
  {
    weight: 3,
    arbitrary: fc.record({ kind: fc.constant('advance' as const), ms: fc.integer({ min: 0, max: 2_000 }) }),
  },
  { weight: 1, arbitrary: fc.constant({ kind: 'isolate' as const }) },
  { weight: 1, arbitrary: fc.constant({ kind: 'reset' as const }) },
);

/** The trip rule and its window. */
const rules: Record<string, Omit<CircuitBreakerOptions, 'clock'>> = {
  consecutive: { failureThreshold: 2 },
  'time rate': { failureRate: { threshold: 0.5, windowMs: 1_000, minimumThroughput: 3 } },
  'count rate': { failureRate: { threshold: 0.5, minimumThroughput: 3 }, window: { type: 'count', size: 5 } },
  'count slow rate': { slowCallMs: 150, slowCallRate: 0.5, window: { type: 'count', size: 4 } },
};

describe('circuitBreaker transitions (property)', () => {
  it('any sequence of outcomes, aborts and time steps yields only legal transitions; half-open never runs more than halfOpenProbes at once (with sampling: in all, per half-open period); stats stay consistent', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.array(step, { maxLength: 60 }),
        fc.integer({ min: 1, max: 4 }),
        fc.constantFrom(...Object.keys(rules)),
        fc.constantFrom(undefined, 0.5, 0.75, 1),
        fc.boolean(),
        async (steps, probes, rule, successRate, callTimeout) => {
          const clock = new FakeClock();
          const breaker = circuitBreaker({
            clock,
            resetTimeoutMs: 500,
            halfOpenProbes: probes,
            resetBackoff: 2,
            ...rules[rule],
            ...(successRate === undefined ? {} : { halfOpenSuccessRate: successRate }),
            ...(callTimeout ? { callTimeoutMs: 200 } : {}),
          });
          const seen: string[] = [];
          let state: CircuitState = 'closed';
          // With sampling, the probes of one half-open period that hold a place (a probe its caller
          // canceled gives its place back).
          let period = 0;
          let probesThisPeriod = 0;
          breaker.onStateChange(({ from, to }) => {
            expect(from).toBe(state);
            seen.push(`${from}→${to}`);
            state = to;
            period++;
            probesThisPeriod = 0;
          });
          let running = 0;
          let runningInHalfOpen = 0;
          const pending: Promise<unknown>[] = [];
          for (const s of steps) {
            if (s.kind === 'advance') await clock.advance(s.ms);
            else if (s.kind === 'isolate') breaker.isolate();
            else if (s.kind === 'reset') breaker.reset();
            else {
              const controller = new AbortController();
              pending.push(
                breaker
                  .execute(
                    async ({ signal }) => {
                      const halfOpen = breaker.state === 'half-open';
                      const admittedIn = period;
                      running++;
                      if (halfOpen) {
                        runningInHalfOpen++;
                        expect(runningInHalfOpen).toBeLessThanOrEqual(probes);
                        probesThisPeriod++;
                        if (successRate !== undefined) expect(probesThisPeriod).toBeLessThanOrEqual(probes);
                      }
                      try {
                        await clock.sleep(s.durationMs, signal);
                        if (s.outcome === 'transient')
                          throw new ResilienceError('x', { code: 'E', kind: 'transient' });
                        if (s.outcome === 'bad') throw Object.assign(new Error('bad'), { status: 400 });
                        return 'ok';
                      } finally {
                        running--;
                        if (halfOpen) runningInHalfOpen--;
                        if (halfOpen && s.outcome === 'abort' && admittedIn === period) probesThisPeriod--;
                      }
                    },
                    { signal: controller.signal },
                  )
                  .catch(() => {}),
              );
              if (s.outcome === 'abort') controller.abort();
            }
            const stats = breaker.stats();
            expect(
              Math.min(stats.successes, stats.failures - stats.timeouts, stats.rejections),
            ).toBeGreaterThanOrEqual(0);
            const window = rules[rule]!.window;
            const size = window?.type === 'count' ? window.size : Infinity;
            expect(stats.successes + stats.failures + stats.rejections).toBeLessThanOrEqual(size);
          }
          await clock.advance(10_000);
          await Promise.all(pending);
          expect(running).toBe(0);
          for (const t of seen) expect(legal.has(t), t).toBe(true);
        },
      ),
      { numRuns: 200 },
    );
  });
});
