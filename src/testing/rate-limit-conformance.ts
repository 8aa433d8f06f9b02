/**
 * The rate-limit store conformance suite: one set of scenarios that every {@link RateLimitStore}
 * must pass unchanged (the in-memory store on a `FakeClock`, the Redis store on the server's real
 * clock, or your own store). It checks the decisions, not the implementation: the same sequence of
 * takes must give the same `allowed`, `remaining` and `limit` on every store, and durations that
 * agree up to the time the fixture says may have passed.
 *
 * It imports no test framework: pass your runner's `describe` and `it` (vitest, jest, node:test and
 * mocha all fit), so `bulwark/testing` stays usable without vitest installed. Failures throw plain
 * `Error`s with a precise message.
 *
 * @example
 * import { describe, it } from 'vitest';
 * import { memoryRateLimitStore } from 'bulwark';
 * import { FakeClock, rateLimitStoreConformance } from 'bulwark/testing';
 *
 * rateLimitStoreConformance('memory store', () => {
 *   const clock = new FakeClock(1_000_000);
 *   return { store: memoryRateLimitStore({ clock }), elapse: (ms) => clock.advance(ms), slackMs: 0 };
 * }, { describe, it });
 */
import type { RateLimitResult } from '../rate-limit/store.js';
import { type ConformanceRunner, scenarios } from './conformance-runner.js';
import {
  algorithms,
  equal,
  fail,
  firstUnitBack,
  integerResult,
  type RateLimitStoreFixture,
  rule,
  sequence,
  take,
  takeTheOneUnit,
  within,
} from './rate-limit-conformance-kit.js';
import { combinedScenarios, quotaScenarios } from './rate-limit-conformance-quota.js';

export type { ConformanceRunner } from './conformance-runner.js';
export type { RateLimitStoreFixture } from './rate-limit-conformance-kit.js';

/**
 * Registers the conformance scenarios for `name` under `runner.describe`. `fixture` is called once
 * per scenario and must return a store with no state for the suite's rule names.
 *
 * Scenarios (for each algorithm): a fresh key has full capacity; exactly `burst` units pass back to
 * back and the next is refused with a `retryAfterMs` that is enough and not more than needed; costs
 * above 1; a refusal changes nothing; `peek` changes nothing; `reset` restores capacity; keys and
 * limiter names are independent; quota comes back after `retryAfterMs`; 50 concurrent takes of a
 * burst of 10 admit exactly 10; every number is a whole number. Quota control: `adjust` moves the
 * quota clamped to [0, burst]; `block` refuses every take for its length, never shortens a longer
 * block, keeps the quota underneath and is lifted by `reset`; hostile keys stay apart. Combined
 * limits: `takeAll` takes from every rule or none, also under 30 concurrent decisions. `adjust`,
 * `block` and `takeAll` are optional in the `RateLimitStore` type, but a store without them fails
 * those scenarios.
 */
export function rateLimitStoreConformance(
  name: string,
  fixture: () => RateLimitStoreFixture | Promise<RateLimitStoreFixture>,
  runner: ConformanceRunner,
): void {
  const scenario = scenarios(runner, fixture);

  runner.describe(`rate-limit store conformance: ${name}`, () => {
    for (const algorithm of algorithms) {
      runner.describe(algorithm, () => {
        scenario('a fresh key has full capacity; the burst passes, then one more is refused', async (f) => {
          const r = rule(algorithm, 5, 3_600_000);
          const first = await take(f.store, 'a', 1, r);
          equal(first.allowed, true, 'first take allowed');
          equal(first.remaining, 4, 'remaining after the first take');
          equal(first.limit, 5, 'limit');
          for (let i = 2; i <= 5; i++)
            equal((await take(f.store, 'a', 1, r)).allowed, true, `take ${i} allowed`);
          const refused = await take(f.store, 'a', 1, r);
          equal(refused.allowed, false, 'take 6 refused');
          equal(refused.remaining, 0, 'remaining when refused');
          const back = firstUnitBack(r);
          within(refused.retryAfterMs, back.low - f.slackMs, back.high, 'retryAfterMs of the refusal');
          within(
            refused.resetMs,
            r.periodMs - f.slackMs,
            r.periodMs + (back.high - back.low),
            'resetMs when empty',
          );
        });

        scenario('costs above 1: the same decisions on every store', async (f) => {
          const r = rule(algorithm, 10, 3_600_000);
          const got = await sequence(f.store, 'k', [3, 3, 3, 3, 1, 2, 1, 10], r);
          equal(got, '3:ok:7 3:ok:4 3:ok:1 3:no:1 1:ok:0 2:no:0 1:no:0 10:no:0', 'decisions');
        });

        scenario('a take of the whole burst passes on a fresh key', async (f) => {
          const r = rule(algorithm, 7, 3_600_000);
          const result = await take(f.store, 'k', 7, r);
          equal(result.allowed, true, 'allowed');
          equal(result.remaining, 0, 'remaining');
        });

        scenario('a refusal changes nothing', async (f) => {
          const r = rule(algorithm, 4, 3_600_000);
          await take(f.store, 'k', 3, r);
          for (let i = 0; i < 5; i++)
            equal((await take(f.store, 'k', 2, r)).allowed, false, 'cost 2 refused');
          const one = await take(f.store, 'k', 1, r);
          equal(one.allowed, true, 'cost 1 still allowed after refusals');
          equal(one.remaining, 0, 'remaining');
        });

        scenario('peek reports the state and changes nothing', async (f) => {
          const r = rule(algorithm, 5, 3_600_000);
          const fresh = await f.store.peek('k', r);
          integerResult(fresh, 'peek');
          equal(fresh.allowed, true, 'peek allowed');
          equal(fresh.remaining, 5, 'peek of a fresh key');
          equal(fresh.resetMs, 0, 'resetMs of a fresh key');
          await take(f.store, 'k', 2, r);
          for (let i = 0; i < 3; i++) equal((await f.store.peek('k', r)).remaining, 3, 'peek after taking 2');
          equal((await take(f.store, 'k', 3, r)).allowed, true, 'the 3 left can be taken');
        });

        scenario('reset restores full capacity', async (f) => {
          const r = rule(algorithm, 3, 3_600_000);
          await take(f.store, 'k', 3, r);
          equal((await take(f.store, 'k', 1, r)).allowed, false, 'empty before reset');
          await f.store.reset('k', r);
          const after = await take(f.store, 'k', 1, r);
          equal(after.allowed, true, 'allowed after reset');
          equal(after.remaining, 2, 'remaining after reset');
          await f.store.reset('never-seen', r);
        });

        scenario('keys and limiter names are independent', async (f) => {
          const r = rule(algorithm, 2, 3_600_000);
          const other = rule(algorithm, 2, 3_600_000);
          await take(f.store, 'a', 2, r);
          equal((await take(f.store, 'a', 1, r)).allowed, false, 'key a empty');
          equal((await take(f.store, 'b', 2, r)).allowed, true, 'key b untouched');
          equal((await take(f.store, 'a', 2, other)).allowed, true, 'same key, other limiter name untouched');
          const odd = 'ünïcode {tag} with spaces:and:colons';
          equal((await take(f.store, odd, 2, r)).allowed, true, 'any string is a key');
          equal((await take(f.store, odd, 1, r)).allowed, false, 'and keeps its own state');
        });

        scenario(
          'distinct keys never share state: an ill-formed key keeps its own or is refused with a TypeError',
          async (f) => {
            const r = rule(algorithm, 1, 3_600_000);
            // Well-formed keys that a lossy encoding would merge with the ill-formed ones below.
            for (const key of ['\uFFFD', '\uD83D\uDE00', 'a\uFFFDb']) {
              equal((await take(f.store, key, 1, r)).allowed, true, `${JSON.stringify(key)} is a key`);
              equal(
                (await take(f.store, key, 1, r)).allowed,
                false,
                `${JSON.stringify(key)} keeps its own state`,
              );
            }
            // Lone surrogates: a store either keeps each apart (the memory store can) or refuses it with
            // a TypeError (Redis clients write a lone surrogate as U+FFFD); it never merges them.
            for (const key of ['\uD800', '\uDBFF', '\uDE00', 'a\uD800b', '\uD83D']) {
              let result: RateLimitResult;
              try {
                result = await f.store.take(key, 1, r);
              } catch (error) {
                if (!(error instanceof TypeError))
                  fail(`${JSON.stringify(key)}: expected its own state or a TypeError, got ${String(error)}`);
                continue;
              }
              integerResult(result, `take(${JSON.stringify(key)}, 1)`);
              equal(
                result.allowed,
                true,
                `${JSON.stringify(key)} has its own state, apart from every other key`,
              );
            }
          },
        );

        scenario('quota comes back after retryAfterMs', async (f) => {
          const r = rule(algorithm, 1, 400);
          const refused = await takeTheOneUnit(f, r, 'retryAfterMs');
          await f.elapse(refused.retryAfterMs);
          const again = await take(f.store, 'k', 1, r);
          equal(again.allowed, true, 'allowed once retryAfterMs has passed');
        });

        scenario('a bandwidth rule: a billion units per second, cost = bytes', async (f) => {
          const r = rule(algorithm, 1_000_000_000, 1_000);
          const perMs = 1_000_000; // what one ms of store time gives back (token bucket, GCRA)
          const refill = algorithm === 'sliding-window' ? 0 : f.slackMs * perMs;
          for (const expected of [750_000_000, 500_000_000, 250_000_000]) {
            const result = await take(f.store, 'link', 250_000_000, r);
            equal(result.allowed, true, 'a quarter of the burst allowed');
            within(result.remaining, expected, expected + refill, 'remaining after a quarter');
          }
          for (const expected of [999_998_500, 999_997_000, 999_995_500]) {
            const packet = await take(f.store, 'packets', 1_500, r);
            equal(packet.allowed, true, 'a 1500-byte packet allowed');
            within(
              packet.remaining,
              expected,
              Math.min(expected + refill, 999_998_500),
              'remaining after a packet',
            );
          }
          if (f.slackMs > 0) return; // what follows counts single units: exact on a fake clock only
          equal((await take(f.store, 'link', 250_000_000, r)).remaining, 0, 'the burst taken exactly');
          const refused = await take(f.store, 'link', 1, r);
          equal(refused.allowed, false, 'not one byte more');
          equal(refused.retryAfterMs, algorithm === 'sliding-window' ? 1_100 : 1, 'retryAfterMs of one byte');
          if (algorithm === 'sliding-window') return;
          await f.elapse(1);
          equal((await take(f.store, 'link', perMs, r)).allowed, true, 'one ms gives back exactly a million');
          equal((await take(f.store, 'link', 1, r)).allowed, false, 'and not one more');
        });

        scenario('a tiny rule: one unit per day', async (f) => {
          await takeTheOneUnit(f, rule(algorithm, 1, 86_400_000), 'retryAfterMs about a day');
        });

        scenario('50 concurrent takes of a burst of 10 admit exactly 10', async (f) => {
          const r = rule(algorithm, 10, 3_600_000);
          const results = await Promise.all(
            Array.from({ length: 50 }, () => Promise.resolve(f.store.take('hot', 1, r))),
          );
          equal(results.filter((x) => x.allowed).length, 10, 'admitted');
          const remaining = results
            .filter((x) => x.allowed)
            .map((x) => x.remaining)
            .sort((a, b) => a - b);
          equal(remaining.join(','), '0,1,2,3,4,5,6,7,8,9', 'each admitted take saw a distinct remaining');
        });

        quotaScenarios(scenario, algorithm);
      });
    }

    runner.describe('combined limits (takeAll)', () => combinedScenarios(scenario));

    runner.describe('burst above limit (token bucket, GCRA)', () => {
      for (const algorithm of ['gcra', 'token-bucket'] as const) {
        scenario(
          `${algorithm}: burst 6 over limit 2 admits 6 at once, then one per periodMs / limit`,
          async (f) => {
            const r = rule(algorithm, 2, 3_600_000, 6);
            const got = await sequence(f.store, 'k', [1, 1, 1, 1, 1, 1, 1], r);
            equal(got, '1:ok:5 1:ok:4 1:ok:3 1:ok:2 1:ok:1 1:ok:0 1:no:0', 'decisions');
            const refused = await take(f.store, 'k', 1, r);
            within(refused.retryAfterMs, 1_800_000 - f.slackMs, 1_800_000, 'retryAfterMs = periodMs / limit');
            within(refused.resetMs, 10_800_000 - f.slackMs, 10_800_000, 'resetMs = burst × periodMs / limit');
          },
        );
      }
    });
  });
}
