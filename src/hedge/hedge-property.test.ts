import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import type { Context } from '../core/context.js';
import { ResilienceError } from '../core/errors.js';
import { retryBudget } from '../retry/budget.js';
import { FakeClock } from '../testing/fake-clock.js';
import { hedge } from './hedge.js';

type Behaviour = 'ok' | 'transient' | 'fatal' | 'pushback';
interface Plan {
  readonly ms: number;
  readonly behaviour: Behaviour;
  readonly retryAfterMs: number;
}

const plan = fc.record({
  ms: fc.integer({ min: 0, max: 300 }),
  behaviour: fc.constantFrom<Behaviour>('ok', 'transient', 'fatal', 'pushback'),
  retryAfterMs: fc.integer({ min: 1, max: 200 }),
});

const scenario = fc.record({
  attempts: fc.integer({ min: 1, max: 5 }),
  delayMs: fc.oneof(fc.constant(0), fc.integer({ min: 1, max: 150 })),
  plans: fc.array(plan, { minLength: 5, maxLength: 5 }),
  abortAt: fc.option(fc.integer({ min: 0, max: 500 }), { nil: undefined }),
  deadline: fc.option(fc.integer({ min: 1, max: 500 }), { nil: undefined }),
  budgetFloor: fc.option(fc.integer({ min: 0, max: 3 }), { nil: undefined }),
});

function errorFor(p: Plan, attempt: number): unknown {
  switch (p.behaviour) {
    case 'transient':
      return new ResilienceError(`try ${attempt}`, { code: 'E_T', kind: 'transient' });
    case 'pushback':
      return new ResilienceError(`try ${attempt}`, {
        code: 'E_P',
        kind: 'rate_limited',
        retryAfterMs: p.retryAfterMs,
      });
    default:
      return Object.assign(new Error(`try ${attempt}`), { status: 400 });
  }
}

describe('hedge: properties', () => {
  it('at most `attempts` tries start, and the result is the outcome of the last try to settle (or the abort reason)', async () => {
    await fc.assert(
      fc.asyncProperty(scenario, async (s) => {
        const clock = new FakeClock();
        const starts: Array<{ attempt: number; at: number; signal: AbortSignal }> = [];
        const settles: Array<{ attempt: number; at: number; ok: boolean; value: unknown; plan: Plan }> = [];
        let settledAt: number | undefined;
        let startsAfterSettle = 0;

        const op = async (ctx: Context): Promise<string> => {
          if (settledAt !== undefined) startsAfterSettle++;
          starts.push({ attempt: ctx.attempt, at: clock.now(), signal: ctx.signal });
          const p = s.plans[ctx.attempt - 1]!;
          await clock.sleep(p.ms, ctx.signal);
          if (p.behaviour === 'ok') {
            const value = `value ${ctx.attempt}`;
            settles.push({ attempt: ctx.attempt, at: clock.now(), ok: true, value, plan: p });
            return value;
          }
          const error = errorFor(p, ctx.attempt);
          settles.push({ attempt: ctx.attempt, at: clock.now(), ok: false, value: error, plan: p });
          throw error;
        };

        const controller = new AbortController();
        const reason = new Error('caller left');
        let abortTimerPending = s.abortAt !== undefined;
        if (s.abortAt !== undefined) {
          clock.setTimer(() => {
            abortTimerPending = false;
            controller.abort(reason);
          }, s.abortAt);
        }
        const budget =
          s.budgetFloor === undefined
            ? undefined
            : retryBudget({ ratio: 0, minPerSecond: s.budgetFloor / 10, windowMs: 10_000, clock });
        const policy = hedge({ attempts: s.attempts, delayMs: s.delayMs, budget, clock });

        let result: { ok: boolean; value: unknown } | undefined;
        let leftoverTimers = -1;
        policy
          .execute(op, {
            signal: controller.signal,
            ...(s.deadline === undefined ? {} : { deadline: s.deadline }),
          })
          .then(
            (value) => {
              result = { ok: true, value };
            },
            (error: unknown) => {
              result = { ok: false, value: error };
            },
          )
          .finally(() => {
            settledAt = clock.now();
            // Every try still running was aborted (clearing its sleep); the hedge's own timer is gone.
            leftoverTimers = clock.pendingTimers - (abortTimerPending ? 1 : 0);
          });
        await clock.advance(5_000);

        // The call settled, leaving no timer of its own, and no try started afterwards.
        expect(result).toBeDefined();
        expect(leftoverTimers).toBe(0);
        expect(startsAfterSettle).toBe(0);

        // At most `attempts` tries, numbered 1, 2, 3, ... in start order.
        expect(starts.length).toBeLessThanOrEqual(s.attempts);
        expect(starts.map((t) => t.attempt)).toEqual(starts.map((_, i) => i + 1));

        // No hedge at or after the deadline; no more hedges than the budget holds.
        if (s.deadline !== undefined) {
          for (const t of starts.slice(1)) expect(t.at).toBeLessThan(s.deadline);
        }
        if (s.budgetFloor !== undefined) expect(starts.length - 1).toBeLessThanOrEqual(s.budgetFloor);

        // Try n starts delayMs after try n - 1, or when a try failed (plus the pause it asked for).
        for (let i = 1; i < starts.length; i++) {
          const previous = starts[i - 1]!.at;
          const at = starts[i]!.at;
          const allowed = new Set([previous + s.delayMs]);
          for (const f of settles) {
            if (!f.ok && f.at >= previous && f.at <= at) {
              allowed.add(f.at + (f.plan.behaviour === 'pushback' ? f.plan.retryAfterMs : 0));
            }
          }
          expect(allowed.has(at)).toBe(true);
        }

        const last = settles[settles.length - 1];
        if (result!.ok === false && result!.value === reason) {
          // Aborted by the caller: nothing settled after the abort.
          for (const t of settles) expect(t.at).toBeLessThanOrEqual(s.abortAt!);
        } else {
          // Otherwise the call's outcome is exactly the last try to settle: a success, a fatal
          // failure, or the last failure to arrive when all failed.
          expect(last).toBeDefined();
          expect(result).toEqual({ ok: last!.ok, value: last!.value });
          // Every earlier settlement was a failure that does not end the call.
          for (const t of settles.slice(0, -1)) {
            expect(t.ok).toBe(false);
            expect(t.plan.behaviour).not.toBe('fatal');
          }
        }

        // Every try that did not settle by itself was aborted; the hedge aborted none that settled
        // (with attempts: 1 the try runs on the caller's own signal, which the caller may abort later).
        const settledAttempts = new Set(settles.map((t) => t.attempt));
        for (const t of starts) {
          if (!settledAttempts.has(t.attempt)) expect(t.signal.aborted).toBe(true);
          else if (t.signal.aborted) expect([s.attempts, t.signal.reason]).toEqual([1, reason]);
        }
      }),
      { numRuns: 300 },
    );
  });
});
