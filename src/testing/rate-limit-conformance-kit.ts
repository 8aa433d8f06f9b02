/**
 * What the rate-limit store conformance scenarios share: the fixture they run on, rules with fresh
 * names, and takes whose results are checked for shape on the way.
 */
import { ruleOf } from '../rate-limit/rule.js';
import type {
  RateLimitAlgorithm,
  RateLimitResult,
  RateLimitRule,
  RateLimitStore,
} from '../rate-limit/store.js';
import { conformanceChecks } from './conformance-runner.js';

/** What one scenario runs against: a fresh store and a way to let time pass on its clock. */
export interface RateLimitStoreFixture {
  /** A store with no state for the rule names the suite uses (e.g. a fresh key prefix). */
  readonly store: RateLimitStore;
  /**
   * Lets at least `ms` pass on the store's clock: `clock.advance(ms)` for a store on a `FakeClock`,
   * a real sleep for a store on a server's clock.
   */
  elapse(ms: number): Promise<void>;
  /**
   * How much store time may pass beyond what the suite asked for while a scenario runs (round
   * trips, sleep overshoot): 0 on a fake clock. Durations are checked in `[expected − slackMs,
   * expected]`, so a larger slack only loosens the lower bound.
   */
  readonly slackMs: number;
  /** Called after the scenario, pass or fail. */
  close?(): void | Promise<void>;
}

/** The algorithms every scenario runs under. */
export const algorithms: readonly RateLimitAlgorithm[] = ['gcra', 'token-bucket', 'sliding-window'];
let names = 0;

/** A rule with a fresh name (so scenarios never share state even in a shared store). */
export function rule(
  algorithm: RateLimitAlgorithm,
  limit: number,
  periodMs: number,
  burst?: number,
): RateLimitRule {
  names += 1;
  return ruleOf({
    name: `conformance-${algorithm}-${names}`,
    algorithm,
    limit,
    periodMs,
    ...(burst === undefined || algorithm === 'sliding-window' ? {} : { burst }),
  });
}

/** The suite's checks: failures say `rate-limit store conformance: ...`. */
export const { fail, equal, within } = conformanceChecks('rate-limit store conformance');

/** Fails unless `result` is well formed: whole numbers ≥ 0, and retryAfterMs 0 when allowed. */
export function integerResult(result: RateLimitResult, what: string): void {
  for (const field of ['remaining', 'retryAfterMs', 'resetMs', 'limit'] as const) {
    const value = result[field];
    if (!Number.isInteger(value) || value < 0)
      fail(`${what}: "${field}" must be a whole number ≥ 0, got ${value}`);
  }
  if (typeof result.allowed !== 'boolean') fail(`${what}: "allowed" must be a boolean`);
  if (result.allowed && result.retryAfterMs !== 0) fail(`${what}: an allowed take has retryAfterMs 0`);
}

/** `store.take`, its result checked by {@link integerResult}. */
export async function take(
  store: RateLimitStore,
  key: string,
  cost: number,
  r: RateLimitRule,
): Promise<RateLimitResult> {
  const result = await store.take(key, cost, r);
  integerResult(result, `take(${JSON.stringify(key)}, ${cost})`);
  return result;
}

/** The allowed/remaining sequence of `costs` taken back to back (no refill to speak of). */
export async function sequence(
  store: RateLimitStore,
  key: string,
  costs: readonly number[],
  r: RateLimitRule,
) {
  const out: string[] = [];
  for (const cost of costs) {
    const result = await take(store, key, cost, r);
    out.push(`${cost}:${result.allowed ? 'ok' : 'no'}:${result.remaining}`);
  }
  return out.join(' ');
}

/** Time until a refused unit comes back, for a burst taken at once on a rule of `limit` per `periodMs`. */
export function firstUnitBack(r: RateLimitRule): { low: number; high: number } {
  if (r.algorithm === 'sliding-window') {
    // Everything sits in the newest sub-window: it comes back when that sub-window slides out.
    const width = r.periodMs / r.buckets;
    return { low: r.periodMs, high: r.periodMs + width };
  }
  const unit = r.periodMs / r.limit;
  return { low: unit, high: unit };
}

/**
 * Takes the one unit of key `k` on a rule whose burst is 1, checks that the next take is refused
 * with the `retryAfterMs` of {@link firstUnitBack} (`what` names it in a failure), and returns that
 * refusal.
 */
export async function takeTheOneUnit(f: RateLimitStoreFixture, r: RateLimitRule, what: string) {
  equal((await take(f.store, 'k', 1, r)).allowed, true, 'the one unit');
  const refused = await take(f.store, 'k', 1, r);
  equal(refused.allowed, false, 'a second take refused');
  const back = firstUnitBack(r);
  within(refused.retryAfterMs, back.low - f.slackMs, back.high, what);
  return refused;
}
