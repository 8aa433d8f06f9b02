/**
 * Property tests of quota control (`adjust`: penalties and rewards) through the in-memory store on a
 * FakeClock, for every algorithm:
 *
 * - every decision and every state report keeps `remaining` a whole number within [0, burst], and
 *   an adjustment moves it by exactly its units, clamped (no debt, no overfill);
 * - over any run of steps from a to b, the units admitted are at most
 *   burst + limit·(t_b − t_a)/periodMs + the rewards given in those steps (a penalty only takes);
 * - token bucket and GCRA still make the same decisions with penalties and rewards interleaved.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { FakeClock } from '../testing/fake-clock.js';
import { memoryRateLimitStore } from './memory-store.js';
import { ruleOf } from './rule.js';
import type { RateLimitAlgorithm, RateLimitResult, RateLimitRule } from './store.js';

type Op = 'take' | 'penalty' | 'reward';

interface Step {
  readonly gap: number;
  readonly op: Op;
  readonly units: number;
}

interface Outcome {
  readonly at: number;
  readonly step: Step;
  readonly result: RateLimitResult;
}

const ruleFor = (algorithm: RateLimitAlgorithm) =>
  fc
    .record({
      limit: fc.integer({ min: 1, max: 20 }),
      periodMs: fc.integer({ min: 1, max: 5_000 }),
      burst: fc.integer({ min: 1, max: 30 }),
      buckets: fc.integer({ min: 1, max: 12 }),
    })
    .map(({ limit, periodMs, burst, buckets }) =>
      algorithm === 'sliding-window'
        ? ruleOf({ algorithm, limit, periodMs, buckets })
        : ruleOf({ algorithm, limit, periodMs, burst }),
    );

const stepsFor = (rule: RateLimitRule) =>
  fc.array(
    fc.record({
      gap: fc.oneof(fc.constant(0), fc.integer({ min: 0, max: Math.ceil(rule.periodMs / rule.limit) + 1 })),
      op: fc.constantFrom<Op>('take', 'take', 'penalty', 'reward'),
      units: fc.integer({ min: 1, max: rule.burst + 2 }),
    }),
    { minLength: 1, maxLength: 80 },
  );

const ruleAndSteps = (algorithm: RateLimitAlgorithm) =>
  fc
    .tuple(ruleFor(algorithm), fc.constantFrom(10_000, 1_700_000_000_123))
    .chain(([rule, start]) => stepsFor(rule).map((steps) => ({ rule, start, steps })));

/** Runs `steps` on a fresh store, checking each report as it goes. */
async function run(rule: RateLimitRule, start: number, steps: readonly Step[]): Promise<Outcome[]> {
  const clock = new FakeClock(start);
  const store = memoryRateLimitStore({ clock });
  const out: Outcome[] = [];
  for (const step of steps) {
    if (step.gap > 0) await clock.advance(step.gap);
    let result: RateLimitResult;
    if (step.op === 'take') result = store.takeSync('k', Math.min(step.units, rule.burst), rule);
    else {
      const before = store.takeSync('k', 0, rule).remaining;
      result = await store.adjust('k', step.op === 'penalty' ? step.units : -step.units, rule);
      // Exactly the units asked, clamped: a penalty never leaves debt, a reward never overfills.
      expect(result.remaining).toBe(
        step.op === 'penalty' ? Math.max(before - step.units, 0) : Math.min(before + step.units, rule.burst),
      );
    }
    out.push({ at: clock.now(), step, result });
    const peeked = store.takeSync('k', 0, rule).remaining;
    expect(peeked).toBeGreaterThanOrEqual(0);
    expect(peeked).toBeLessThanOrEqual(rule.burst);
  }
  return out;
}

describe.each(['gcra', 'token-bucket', 'sliding-window'] as const)('%s: quota control', (algorithm) => {
  it('keeps remaining within [0, burst] and admits at most burst + rate·t + rewards over any run', async () => {
    await fc.assert(
      fc.asyncProperty(ruleAndSteps(algorithm), async ({ rule, start, steps }) => {
        const outcomes = await run(rule, start, steps);
        for (const { result } of outcomes) {
          expect(Number.isInteger(result.remaining)).toBe(true);
          expect(result.remaining).toBeGreaterThanOrEqual(0);
          expect(result.remaining).toBeLessThanOrEqual(rule.burst);
        }
        for (let a = 0; a < outcomes.length; a++) {
          let admitted = 0;
          let rewards = 0;
          for (let b = a; b < outcomes.length; b++) {
            const { step, result, at } = outcomes[b]!;
            if (step.op === 'reward') rewards += step.units;
            if (step.op === 'take' && result.allowed) admitted += Math.min(step.units, rule.burst);
            const bound = rule.burst + (rule.limit * (at - outcomes[a]!.at)) / rule.periodMs + rewards;
            expect(admitted).toBeLessThanOrEqual(bound + 1e-9);
          }
        }
      }),
      { numRuns: 300 },
    );
  });
});

describe('quota control: token bucket and GCRA', () => {
  it('make the same decisions and reports with penalties and rewards interleaved', async () => {
    await fc.assert(
      fc.asyncProperty(ruleAndSteps('gcra'), async ({ rule, start, steps }) => {
        const bucket = ruleOf({ ...rule, algorithm: 'token-bucket', buckets: undefined });
        const shape = (outcomes: Outcome[]) =>
          outcomes.map(({ result }) => [
            result.allowed,
            result.remaining,
            result.retryAfterMs,
            result.resetMs,
          ]);
        expect(shape(await run(bucket, start, steps))).toEqual(shape(await run(rule, start, steps)));
      }),
      { numRuns: 300 },
    );
  });
});
