/**
 * The conformance scenarios of quota control (`adjust`, `block`) and combined limits (`takeAll`):
 * part of `rateLimitStoreConformance`, run on every store. Both operations are optional in the
 * `RateLimitStore` type (so an older store still compiles and limits), but a store passes the suite
 * only with them: a missing one fails its scenarios with a message that says so.
 */
import type {
  RateLimitAlgorithm,
  RateLimitResult,
  RateLimitRule,
  RateLimitStore,
} from '../rate-limit/store.js';
import {
  equal,
  fail,
  firstUnitBack,
  integerResult,
  type RateLimitStoreFixture,
  rule,
  take,
  within,
} from './rate-limit-conformance-kit.js';

/** Registers one scenario on a fresh fixture (the suite's `scenario`). */
type Scenario = (title: string, body: (f: RateLimitStoreFixture) => Promise<void>) => void;

const HOUR = 3_600_000;

/** The store's optional operation `name`, or a failure saying the store lacks it. */
function operation<K extends 'adjust' | 'block' | 'takeAll'>(
  store: RateLimitStore,
  name: K,
): NonNullable<RateLimitStore[K]> {
  const op = store[name];
  if (typeof op !== 'function')
    return fail(`the store has no ${name}() (optional in the type, needed to conform)`);
  return op.bind(store) as NonNullable<RateLimitStore[K]>;
}

/** A state report (adjust, block): well formed, allowed like a peek, with no wait. */
function report(result: RateLimitResult, what: string): RateLimitResult {
  integerResult(result, what);
  equal(result.allowed, true, `${what}: allowed (it reports the state, as peek does)`);
  return result;
}

const adjust = async (store: RateLimitStore, key: string, units: number, r: RateLimitRule) =>
  report(await operation(store, 'adjust')(key, units, r), `adjust(${JSON.stringify(key)}, ${units})`);

const block = async (store: RateLimitStore, key: string, ms: number, r: RateLimitRule) =>
  report(await operation(store, 'block')(key, ms, r), `block(${JSON.stringify(key)}, ${ms})`);

/** Fails unless `key` is refused, with nothing available and a wait within [low − slack, high]. */
async function refused(f: RateLimitStoreFixture, key: string, r: RateLimitRule, low: number, high: number) {
  const result = await take(f.store, key, 1, r);
  equal(result.allowed, false, `take(${JSON.stringify(key)}) refused`);
  equal(result.remaining, 0, 'remaining when refused');
  within(result.retryAfterMs, low - f.slackMs, high, 'retryAfterMs of the refusal');
}

/** Scenarios of `adjust` and `block` under `algorithm`. */
export function quotaScenarios(scenario: Scenario, algorithm: RateLimitAlgorithm): void {
  scenario('adjust: a penalty consumes, a reward gives back, both clamped to [0, burst]', async (f) => {
    const r = rule(algorithm, 5, HOUR);
    equal((await adjust(f.store, 'k', 2, r)).remaining, 3, 'remaining after a penalty of 2');
    equal((await take(f.store, 'k', 3, r)).remaining, 0, 'the 3 left can be taken');
    equal((await adjust(f.store, 'k', 4, r)).remaining, 0, 'a penalty on an empty key stays at 0');
    equal((await adjust(f.store, 'k', -1, r)).remaining, 1, 'a reward of 1 gives 1: no debt was kept');
    equal((await take(f.store, 'k', 1, r)).allowed, true, 'the unit given back can be taken');
    equal((await adjust(f.store, 'k', -100, r)).remaining, 5, 'a reward fills up to the burst only');
    equal((await take(f.store, 'k', 5, r)).allowed, true, 'the whole burst can be taken');
    await refused(f, 'k', r, firstUnitBack(r).low, firstUnitBack(r).high);
    equal((await adjust(f.store, 'fresh', -3, r)).remaining, 5, 'a reward on a fresh key leaves it full');
    equal((await adjust(f.store, 'other', 1, r)).remaining, 4, 'keys are adjusted apart');
  });

  scenario('block: every take is refused for its length; the quota underneath is kept', async (f) => {
    const r = rule(algorithm, 5, HOUR);
    const before = Math.max(300, (await take(f.store, 'k', 2, r)).resetMs);
    const blocked = await block(f.store, 'k', 300, r);
    equal(blocked.remaining, 0, 'remaining of a blocked key');
    within(blocked.resetMs, before - f.slackMs, before, 'resetMs: the longer of the block and the quota');
    await refused(f, 'k', r, 300, 300);
    equal((await f.store.peek('k', r)).remaining, 0, 'peek of a blocked key');
    equal((await take(f.store, 'other', 5, r)).allowed, true, 'another key is not blocked');
    equal((await take(f.store, 'k', 5, rule(algorithm, 5, HOUR))).allowed, true, 'nor another limiter name');
    await f.elapse(300);
    equal((await take(f.store, 'k', 3, r)).remaining, 0, 'after the block, the 3 units left are there');
    equal((await take(f.store, 'k', 1, r)).allowed, false, 'and no more: a block gives nothing back');
  });

  scenario('block: never shortens a longer block; reset lifts it', async (f) => {
    const r = rule(algorithm, 5, HOUR);
    await block(f.store, 'k', HOUR, r);
    await block(f.store, 'k', 1_000, r);
    await refused(f, 'k', r, HOUR, HOUR);
    await f.store.reset('k', r);
    equal((await take(f.store, 'k', 1, r)).remaining, 4, 'reset lifts the block and restores capacity');
  });

  scenario('block: a take waits for the longer of the block and its own quota', async (f) => {
    const r = rule(algorithm, 1, 86_400_000);
    await take(f.store, 'k', 1, r);
    await block(f.store, 'k', 1_000, r);
    const back = firstUnitBack(r);
    await refused(f, 'k', r, back.low, back.high);
  });

  scenario('adjust and block together: a penalty under a block keeps both', async (f) => {
    const r = rule(algorithm, 5, HOUR);
    await block(f.store, 'k', 300, r);
    equal((await adjust(f.store, 'k', 2, r)).remaining, 0, 'a blocked key reports 0 after a penalty');
    equal((await adjust(f.store, 'k', -1, r)).remaining, 0, 'and after a reward');
    await refused(f, 'k', r, 300, 300);
    await f.elapse(300);
    equal((await take(f.store, 'k', 4, r)).remaining, 0, 'after the block, the penalty and reward hold');
    equal((await take(f.store, 'k', 1, r)).allowed, false, 'and nothing more');
  });

  scenario('hostile keys keep their own state under adjust and block', async (f) => {
    const r = rule(algorithm, 20, HOUR);
    const keys = ['}x', '\u0000}x', '\u0000x', 'x', '}', '{x}', '!1 2 3', ' ', 'a}b', 'a'];
    for (const [i, key] of keys.entries()) await adjust(f.store, key, i + 1, r);
    for (const [i, key] of keys.entries())
      equal((await f.store.peek(key, r)).remaining, 19 - i, `${JSON.stringify(key)} keeps its own state`);
    await block(f.store, '}', HOUR, r);
    equal((await take(f.store, '}x', 1, r)).allowed, true, 'a block on "}" is its own');
    for (const key of ['\uD800', 'a\uDC00']) {
      try {
        equal((await f.store.peek(key, r)).remaining, 20, `${JSON.stringify(key)} untouched`);
        await adjust(f.store, key, 1, r);
      } catch (error) {
        if (!(error instanceof TypeError))
          fail(`${JSON.stringify(key)}: expected its own state or a TypeError, got ${String(error)}`);
      }
    }
  });
}

/** Scenarios of `takeAll`, over rules of every algorithm at once. */
export function combinedScenarios(scenario: Scenario): void {
  const rules = () => [rule('gcra', 5, HOUR), rule('sliding-window', 3, HOUR), rule('token-bucket', 4, HOUR)];
  const takeAll = async (store: RateLimitStore, key: string, cost: number, rs: RateLimitRule[]) => {
    const results = await operation(store, 'takeAll')(key, cost, rs);
    equal(results.length, rs.length, 'one result per rule');
    for (const result of results) integerResult(result, `takeAll(${JSON.stringify(key)}, ${cost})`);
    return results;
  };
  const remaining = async (store: RateLimitStore, key: string, rs: RateLimitRule[]) =>
    (await Promise.all(rs.map((r) => store.peek(key, r)))).map((p) => p.remaining).join(',');

  scenario('takeAll takes from every rule or from none', async (f) => {
    const rs = rules();
    const first = await takeAll(f.store, 'k', 2, rs);
    equal(
      first.map((x) => `${x.allowed}:${x.remaining}:${x.limit}`).join(' '),
      'true:3:5 true:1:3 true:2:4',
      'first',
    );
    const second = await takeAll(f.store, 'k', 2, rs);
    equal(
      second.map((x) => `${x.allowed}:${x.remaining}`).join(' '),
      'true:3 false:1 true:2',
      'only the window of 3 refuses 2 more; the others report their state as it is',
    );
    within(second[1]!.retryAfterMs, HOUR - f.slackMs, HOUR + HOUR / 10, 'retryAfterMs of the refusing rule');
    equal(await remaining(f.store, 'k', rs), '3,1,2', 'a refusal by one rule takes from none');
    const third = await takeAll(f.store, 'k', 1, rs);
    equal(third.map((x) => x.remaining).join(','), '2,0,1', 'a cost every rule allows is taken from each');
  });

  scenario('takeAll: a blocked rule refuses the whole decision', async (f) => {
    const rs = rules();
    await block(f.store, 'k', HOUR, rs[2]!);
    const results = await takeAll(f.store, 'k', 1, rs);
    equal(results.map((x) => x.allowed).join(','), 'true,true,false', 'the blocked rule refuses');
    within(results[2]!.retryAfterMs, HOUR - f.slackMs, HOUR, 'retryAfterMs of the block');
    equal(await remaining(f.store, 'k', rs), '5,3,0', 'nothing taken');
  });

  scenario('takeAll: 30 concurrent decisions never pass any rule', async (f) => {
    const rs = rules();
    const all = await Promise.all(Array.from({ length: 30 }, () => takeAll(f.store, 'hot', 1, rs)));
    equal(all.filter((results) => results.every((x) => x.allowed)).length, 3, 'admitted: the smallest limit');
    equal(await remaining(f.store, 'hot', rs), '2,0,1', 'each rule lost exactly what was admitted');
  });
}
