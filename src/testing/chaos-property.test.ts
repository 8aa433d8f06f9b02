/**
 * The rate a chaos strategy or chaosStore claims is exactly the seeded draws: over N calls, call i
 * is injected if and only if the i-th draw of `seededRandom(seed)` taken while enabled is below
 * `rate`; rate 0 never injects and rate 1 always does.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { pipeline } from '../core/pipeline.js';
import { chaos } from './chaos.js';
import { chaosStore } from './chaos-store.js';
import { seededRandom } from './seeded-random.js';

const seed = fc.integer({ min: -(2 ** 31), max: 2 ** 31 - 1 });
const rate = fc.oneof(fc.constant(0), fc.constant(1), fc.double({ min: 0, max: 1, noNaN: true }));
/** Which calls are enabled (length = the number of calls). */
const switches = fc.array(fc.boolean(), { minLength: 1, maxLength: 60 });

/** Which calls the draws say get injected: the i-th draw is taken by the i-th enabled call only. */
function expectedInjections(seedValue: number, rateValue: number, enabled: readonly boolean[]): boolean[] {
  const draw = seededRandom(seedValue);
  return enabled.map((on) => on && draw() < rateValue);
}

describe('chaos: the injections are exactly what the seeded draws dictate', () => {
  it('chaos.fault, through execute and in a pipeline', async () => {
    await fc.assert(
      fc.asyncProperty(seed, rate, switches, fc.boolean(), async (s, r, enabled, piped) => {
        let call = 0;
        const fault = chaos.fault({
          rate: r,
          seed: s,
          enabled: () => enabled[call]!,
          error: new Error('chaos'),
        });
        const policy = piped ? pipeline(fault) : fault;
        const observed: boolean[] = [];
        for (call = 0; call < enabled.length; call++) {
          observed.push(await policy.execute(() => false).catch(() => true));
        }
        expect(observed).toEqual(expectedInjections(s, r, enabled));
      }),
    );
  });

  it('chaosStore: faulted calls are exactly the drawn ones; a fault count never exceeds the calls', async () => {
    await fc.assert(
      fc.asyncProperty(seed, rate, switches, async (s, r, enabled) => {
        let call = 0;
        const store = chaosStore(
          { read: async () => 'value' },
          { rate: r, seed: s, enabled: () => enabled[call]! },
        );
        const observed: boolean[] = [];
        for (call = 0; call < enabled.length; call++) {
          observed.push(
            await store.read().then(
              () => false,
              () => true,
            ),
          );
        }
        const expected = expectedInjections(s, r, enabled);
        expect(observed).toEqual(expected);
        if (r === 0) expect(observed.filter(Boolean)).toHaveLength(0);
        if (r === 1) expect(observed).toEqual(enabled);
      }),
    );
  });

  it('rate 0 never injects and rate 1 always does, whatever the random source answers in [0, 1)', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.array(fc.double({ min: 0, max: 1, maxExcluded: true, noNaN: true }), { minLength: 1 }),
        async (draws) => {
          let i = 0;
          const random = () => draws[i++ % draws.length]!;
          const never = chaos.outcome({ rate: 0, random, value: 'injected' });
          const always = chaos.outcome({ rate: 1, random, value: 'injected' });
          for (let n = 0; n < draws.length; n++) {
            expect(await never.execute(() => 'ran')).toBe('ran');
            expect(await always.execute(() => 'ran')).toBe('injected');
          }
        },
      ),
    );
  });
});
