import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { ResilienceError } from '../core/errors.js';
import { FakeClock } from '../testing/fake-clock.js';
import { circuitBreaker } from './circuit-breaker.js';
import type { CircuitState } from './options.js';

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

describe('circuitBreaker transitions (property)', () => {
  it('any sequence of outcomes, aborts and time steps yields only legal transitions, and half-open never runs more than halfOpenProbes at once', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.array(step, { maxLength: 60 }),
        fc.integer({ min: 1, max: 3 }),
        fc.boolean(),
        async (steps, probes, rateRule) => {
          const clock = new FakeClock();
          const breaker = circuitBreaker({
            clock,
            resetTimeoutMs: 500,
            halfOpenProbes: probes,
            resetBackoff: 2,
            ...(rateRule
              ? { failureRate: { threshold: 0.5, windowMs: 1_000, minimumThroughput: 3 } }
              : { failureThreshold: 2 }),
          });
          const seen: string[] = [];
          let state: CircuitState = 'closed';
          breaker.onStateChange(({ from, to }) => {
            expect(from).toBe(state);
            seen.push(`${from}→${to}`);
            state = to;
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
                      running++;
                      if (halfOpen) {
                        runningInHalfOpen++;
                        expect(runningInHalfOpen).toBeLessThanOrEqual(probes);
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
                      }
                    },
                    { signal: controller.signal },
                  )
                  .catch(() => {}),
              );
              if (s.outcome === 'abort') controller.abort();
            }
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
