/**
 * Property tests of the three algorithms, through the in-memory store on a FakeClock.
 *
 * - Upper bound: over any interval of t ms, the admitted cost is at most burst + limit·t/periodMs;
 *   the sliding window also admits at most `limit` within any window shorter than periodMs.
 * - A client within its rate is never refused. "Within its rate" is defined by brute force over
 *   every interval, not by an algorithm: for the token bucket and GCRA, every interval of t ms holds
 *   at most burst + limit·t/periodMs; for the sliding window, every span shorter than
 *   periodMs + periodMs/buckets holds at most `limit` (the documented exactness of the counter).
 * - retryAfterMs is exact for an uncontended key: one ms less is still refused, that long is allowed.
 * - Token bucket and GCRA make the same decisions.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { FakeClock } from '../testing/fake-clock.js';
import { memoryRateLimitStore } from './memory-store.js';
import { ruleOf } from './rule.js';
import type { RateLimitAlgorithm, RateLimitResult, RateLimitRule } from './store.js';

interface Step {
  readonly gap: number;
  readonly cost: number;
}

interface Admitted {
  readonly at: number;
  readonly cost: number;
}

/**
 * Rules over the whole range a user can mean: a few per second, bandwidth (up to a billion units per
 * second, cost = bytes) and one per day.
 */
const bucketRule = (algorithm: 'token-bucket' | 'gcra') =>
  fc
    .oneof(
      fc.record({
        limit: fc.integer({ min: 1, max: 20 }),
        periodMs: fc.integer({ min: 1, max: 5_000 }),
        burst: fc.integer({ min: 1, max: 30 }),
      }),
      fc.record({
        limit: fc.integer({ min: 1_000_000, max: 1_000_000_000 }),
        periodMs: fc.constantFrom(1, 1_000),
        burst: fc.integer({ min: 1, max: 1_000_000_000 }),
      }),
      fc.record({
        limit: fc.integer({ min: 1, max: 3 }),
        periodMs: fc.constant(86_400_000),
        burst: fc.integer({ min: 1, max: 5 }),
      }),
    )
    .map((o) => ruleOf({ algorithm, ...o }));

const windowRule = fc
  .oneof(
    fc.record({
      limit: fc.integer({ min: 1, max: 30 }),
      periodMs: fc.integer({ min: 1, max: 5_000 }),
      buckets: fc.integer({ min: 1, max: 20 }),
    }),
    fc.record({
      limit: fc.integer({ min: 1_000_000, max: 1_000_000_000 }),
      periodMs: fc.constantFrom(1, 1_000),
      buckets: fc.integer({ min: 1, max: 20 }),
    }),
    fc.record({
      limit: fc.integer({ min: 1, max: 3 }),
      periodMs: fc.constant(86_400_000),
      buckets: fc.integer({ min: 1, max: 20 }),
    }),
  )
  .map((o) => ruleOf({ algorithm: 'sliding-window', ...o }));

const ruleFor = (algorithm: RateLimitAlgorithm) =>
  algorithm === 'sliding-window' ? windowRule : bucketRule(algorithm);

/** Steps whose costs fit the rule's burst and whose gaps span a few periods. */
const stepsFor = (rule: RateLimitRule, maxSteps = 60) =>
  fc.array(
    fc.record({
      gap: fc.oneof(
        fc.constant(0),
        fc.integer({ min: 0, max: Math.ceil((2 * rule.periodMs) / rule.limit) + 1 }),
        fc.integer({ min: 0, max: 2 * rule.periodMs }),
      ),
      cost: fc.integer({ min: 1, max: rule.burst }),
    }),
    { minLength: 1, maxLength: maxSteps },
  );

/** Clock starts: a small one, and one of epoch size (systemClock and Redis TIME read ~1.7e12 ms). */
const start = fc.constantFrom(10_000, 1_700_000_000_000);

const ruleAndSteps = (algorithm: RateLimitAlgorithm) =>
  fc
    .tuple(ruleFor(algorithm), start)
    .chain(([rule, startMs]) => stepsFor(rule).map((steps) => ({ rule, steps, startMs })));

/** Runs `steps` against a fresh store, returning every decision with its time. */
async function run(
  rule: RateLimitRule,
  steps: readonly Step[],
  startMs: number,
): Promise<{ at: number; cost: number; result: RateLimitResult }[]> {
  const clock = new FakeClock(startMs);
  const store = memoryRateLimitStore({ clock });
  const out: { at: number; cost: number; result: RateLimitResult }[] = [];
  for (const step of steps) {
    if (step.gap > 0) await clock.advance(step.gap);
    out.push({ at: clock.now(), cost: step.cost, result: store.takeSync('k', step.cost, rule) });
  }
  return out;
}

/** The arrival-curve bound of the rule over an interval of `t` ms (tiny slack for float sums). */
const bound = (rule: RateLimitRule, t: number) => rule.burst + (rule.limit * t) / rule.periodMs + 1e-9;

/** True when adding `next` keeps the admitted set within the client's rate (brute force). */
function withinRate(rule: RateLimitRule, kept: readonly Admitted[], next: Admitted): boolean {
  let sum = next.cost;
  if (sum > rule.burst) return false;
  for (let i = kept.length - 1; i >= 0; i--) {
    const event = kept[i]!;
    sum += event.cost;
    const span = next.at - event.at;
    if (rule.algorithm === 'sliding-window') {
      if (span < rule.periodMs + rule.periodMs / rule.buckets && sum > rule.limit) return false;
    } else if (sum > bound(rule, span)) return false;
  }
  return true;
}

describe.each(['token-bucket', 'gcra', 'sliding-window'] as const)('%s properties', (algorithm) => {
  it('admits at most burst + limit·t/periodMs over any interval of t ms', async () => {
    await fc.assert(
      fc.asyncProperty(ruleAndSteps(algorithm), async ({ rule, steps, startMs }) => {
        const admitted = (await run(rule, steps, startMs)).filter((d) => d.result.allowed);
        for (let i = 0; i < admitted.length; i++) {
          let sum = 0;
          for (let j = i; j < admitted.length; j++) {
            sum += admitted[j]!.cost;
            const span = admitted[j]!.at - admitted[i]!.at;
            expect(sum).toBeLessThanOrEqual(bound(rule, span));
            if (algorithm === 'sliding-window' && span < rule.periodMs) {
              expect(sum).toBeLessThanOrEqual(rule.limit);
            }
          }
        }
      }),
      { numRuns: 150 },
    );
  });

  it('never refuses a client that keeps within its rate', async () => {
    await fc.assert(
      fc.asyncProperty(ruleAndSteps(algorithm), async ({ rule, steps, startMs }) => {
        // Keep only the candidate requests that stay within the rate, then replay those.
        const kept: Admitted[] = [];
        const keptSteps: Step[] = [];
        let at = startMs;
        let pendingGap = 0;
        for (const step of steps) {
          at += step.gap;
          pendingGap += step.gap;
          const candidate = { at, cost: step.cost };
          if (withinRate(rule, kept, candidate)) {
            kept.push(candidate);
            keptSteps.push({ gap: pendingGap, cost: step.cost });
            pendingGap = 0;
          }
        }
        const decisions = await run(rule, keptSteps, startMs);
        expect(decisions.map((d) => d.at)).toEqual(kept.map((k) => k.at));
        for (const d of decisions) expect(d.result).toMatchObject({ allowed: true, retryAfterMs: 0 });
      }),
      { numRuns: 150 },
    );
  });

  it('retryAfterMs is enough and no more than needed for an uncontended key', async () => {
    await fc.assert(
      fc.asyncProperty(ruleAndSteps(algorithm), async ({ rule, steps, startMs }) => {
        const clock = new FakeClock(startMs);
        const store = memoryRateLimitStore({ clock });
        for (const step of steps) {
          if (step.gap > 0) await clock.advance(step.gap);
          const result = store.takeSync('k', step.cost, rule);
          if (result.allowed) continue;
          expect(result.retryAfterMs).toBeGreaterThan(0);
          if (result.retryAfterMs > 1) {
            await clock.advance(result.retryAfterMs - 1);
            expect(store.takeSync('k', step.cost, rule).allowed).toBe(false);
            await clock.advance(1);
          } else {
            await clock.advance(result.retryAfterMs);
          }
          expect(store.takeSync('k', step.cost, rule).allowed).toBe(true);
          return;
        }
      }),
      { numRuns: 150 },
    );
  });

  it('remaining, retryAfterMs and resetMs are whole numbers within their ranges', async () => {
    await fc.assert(
      fc.asyncProperty(ruleAndSteps(algorithm), async ({ rule, steps, startMs }) => {
        for (const { result } of await run(rule, steps, startMs)) {
          expect(Number.isInteger(result.remaining)).toBe(true);
          expect(result.remaining).toBeGreaterThanOrEqual(0);
          expect(result.remaining).toBeLessThanOrEqual(rule.burst);
          expect(Number.isInteger(result.retryAfterMs)).toBe(true);
          expect(Number.isInteger(result.resetMs)).toBe(true);
          expect(result.resetMs).toBeGreaterThanOrEqual(result.allowed ? 0 : result.retryAfterMs);
          expect(result.limit).toBe(rule.burst);
        }
      }),
      { numRuns: 100 },
    );
  });
});

describe('token bucket and GCRA', () => {
  it('make the same decisions (they are one policy stored two ways)', async () => {
    await fc.assert(
      fc.asyncProperty(ruleAndSteps('gcra'), async ({ rule, steps, startMs }) => {
        const bucket = ruleOf({
          limit: rule.limit,
          periodMs: rule.periodMs,
          burst: rule.burst,
          algorithm: 'token-bucket',
        });
        const viaGcra = await run(rule, steps, startMs);
        const viaBucket = await run(bucket, steps, startMs);
        expect(viaGcra.map((d) => d.result)).toEqual(viaBucket.map((d) => d.result));
      }),
      { numRuns: 150 },
    );
  });

  it('make the same decisions on a clock that also steps back, peeks included', async () => {
    const moves = (rule: RateLimitRule) =>
      fc.array(
        fc.record({
          // Forward and backward, by up to two periods.
          move: fc.integer({ min: -2 * rule.periodMs, max: 2 * rule.periodMs }),
          cost: fc.integer({ min: 0, max: rule.burst }),
        }),
        { minLength: 1, maxLength: 40 },
      );
    await fc.assert(
      fc.property(
        bucketRule('gcra').chain((rule) => moves(rule).map((steps) => ({ rule, steps }))),
        ({ rule, steps }) => {
          const { limit, periodMs, burst } = rule;
          const bucket = ruleOf({ limit, periodMs, burst, algorithm: 'token-bucket' });
          const decide = (r: RateLimitRule) => {
            let time = 1_700_000_000_000;
            const clock = {
              now: () => time,
              sleep: () => Promise.resolve(),
              setTimer: () => 0,
              clearTimer: () => {},
            };
            const store = memoryRateLimitStore({ clock: clock as never });
            return steps.map(({ move, cost }) => {
              time += move;
              return store.takeSync('k', cost, r);
            });
          };
          expect(decide(rule)).toEqual(decide(bucket));
        },
      ),
      { numRuns: 150 },
    );
  });
});
