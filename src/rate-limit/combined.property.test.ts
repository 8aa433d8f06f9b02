/**
 * Property test of `rateLimiter.all()` on the in-memory store (FakeClock): over random rules of any
 * algorithms and random takes, it never admits past any of its limits, and it takes from every
 * limit or from none. Each limit is shadowed by a store of its own that sees only the takes the
 * combined limiter admitted: the shadow must admit each of them (so no limit was passed) and end in
 * the same state as the limit itself (so a refusal by one limit took nothing from the others).
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { FakeClock } from '../testing/fake-clock.js';
import { memoryRateLimitStore } from './memory-store.js';
import { rateLimiter } from './rate-limiter.js';

const limitOptions = fc.record({
  algorithm: fc.constantFrom('gcra', 'token-bucket', 'sliding-window' as const),
  limit: fc.integer({ min: 1, max: 12 }),
  periodMs: fc.integer({ min: 1, max: 4_000 }),
  burst: fc.integer({ min: 1, max: 15 }),
});

const plan = fc.record({
  limits: fc.array(limitOptions, { minLength: 1, maxLength: 4 }),
  steps: fc.array(
    fc.record({
      gap: fc.oneof(fc.constant(0), fc.integer({ min: 0, max: 1_500 })),
      cost: fc.integer({ min: 1, max: 15 }),
      key: fc.constantFrom('a', 'b'),
    }),
    { minLength: 1, maxLength: 60 },
  ),
});

describe('rateLimiter.all()', () => {
  it('never admits past any of its limits, and takes from every limit or from none', async () => {
    await fc.assert(
      fc.asyncProperty(plan, async ({ limits, steps }) => {
        const clock = new FakeClock(1_700_000_000_000);
        const store = memoryRateLimitStore({ clock });
        const shadows = memoryRateLimitStore({ clock });
        const limiters = limits.map((o, i) =>
          rateLimiter({
            name: `l${i}`,
            algorithm: o.algorithm,
            limit: o.limit,
            periodMs: o.periodMs,
            ...(o.algorithm === 'sliding-window' ? {} : { burst: o.burst }),
            store,
            clock,
          }),
        );
        const combined = rateLimiter.all(limiters);
        const smallest = Math.min(...limiters.map((l) => l.rule.burst));
        for (const { gap, cost, key } of steps) {
          if (gap > 0) await clock.advance(gap);
          const units = Math.min(cost, smallest);
          const result = await combined.take(key, units);
          const each = limiters.map((l) => store.takeSync(key, 0, l.rule));
          expect(result.remaining).toBe(Math.min(...each.map((e) => e.remaining)));
          // The binding limit is one of them, with its own decision: the longest wait on a refusal.
          expect(limiters.map((l) => l.rule)).toContain(result.binding.rule);
          expect(result.binding.result.allowed).toBe(result.allowed);
          if (result.allowed) expect(result.binding.result.remaining).toBe(result.remaining);
          else expect(result.binding.result.retryAfterMs).toBe(result.retryAfterMs);
          if (result.allowed) {
            for (const l of limiters) expect(shadows.takeSync(key, units, l.rule).allowed).toBe(true);
          } else {
            expect(result.retryAfterMs).toBeGreaterThan(0);
          }
          for (const [i, l] of limiters.entries()) {
            expect(shadows.takeSync(key, 0, l.rule)).toEqual(each[i]);
          }
        }
      }),
      { numRuns: 300 },
    );
  });
});
