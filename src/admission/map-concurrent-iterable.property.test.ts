/**
 * Property test of mapConcurrentIterable. For random inputs (some skipped), sources (array,
 * iterable, async iterable), concurrency, backpressure, and random interleavings of calls
 * completing (in any order) with the consumer asking for the next result:
 *
 * - it yields exactly the mapped values, in input order, skipped items left out, then ends;
 * - never more than `concurrency` calls are in flight;
 * - never more than `backpressure` items are taken and not yet passed to the consumer (a skipped
 *   item counts as passed once its call resolves, and a pending next() as answered: the test sees
 *   an answer a microtask late; both only loosen the bound);
 * - when it ends, nothing is left running.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { deferred } from '../../test/support/deferred.js';
import { mapSkip } from './map-concurrent.js';
import { mapConcurrentIterable } from './map-concurrent-iterable.js';

const tick = () => new Promise<void>((resolve) => setImmediate(resolve));

interface Item {
  readonly value: number;
  readonly skip: boolean;
}

/** One step: the consumer asks for the next result, or the call at `pick` (mod in flight) completes. */
const step = fc.oneof(fc.constant('next' as const), fc.nat({ max: 50 }));

describe('mapConcurrentIterable: properties', () => {
  it('yields the mapped values in input order (skips removed) within its concurrency and backpressure', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.array(fc.record({ value: fc.integer(), skip: fc.boolean() }), { maxLength: 25 }),
        fc.integer({ min: 1, max: 6 }),
        fc.integer({ min: 0, max: 4 }),
        fc.constantFrom('array', 'iterable', 'async'),
        fc.array(step, { maxLength: 80 }),
        async (items: Item[], concurrency, extra, kind, steps) => {
          const backpressure = concurrency + extra;
          let taken = 0;
          let passed = 0;
          let running = 0;
          let peak = 0;
          let worstAhead = 0;
          let asking = false;
          const inFlight: { item: Item; resolve: () => void }[] = [];
          function* pulled() {
            for (const item of items) {
              taken++;
              yield item;
            }
          }
          async function* asyncPulled() {
            yield* pulled();
          }
          const source = kind === 'array' ? items : kind === 'iterable' ? pulled() : asyncPulled();
          const iterator = mapConcurrentIterable(
            source,
            async (item: Item) => {
              if (kind === 'array') taken++;
              // A result handed to a pending next() is seen by the test only a microtask later.
              worstAhead = Math.max(worstAhead, taken - passed - (asking ? 1 : 0));
              running++;
              peak = Math.max(peak, running);
              const call = deferred<void>();
              inFlight.push({ item, resolve: call.resolve });
              await call.promise;
              running--;
              if (!item.skip) return item.value * 2;
              passed++;
              return mapSkip;
            },
            { concurrency, backpressure },
          );

          const received: number[] = [];
          let done = false;
          const ask = () => {
            asking = true;
            void iterator.next().then((result) => {
              asking = false;
              if (result.done) done = true;
              else {
                passed++;
                received.push(result.value);
              }
            });
          };
          const act = (action: 'next' | number) => {
            if (action !== 'next') {
              if (inFlight.length > 0) inFlight.splice(action % inFlight.length, 1)[0]!.resolve();
            } else if (!asking && !done) ask();
          };
          for (const action of steps) {
            act(action);
            await tick();
          }
          // Then drain: keep asking, and complete the oldest call still in flight.
          for (let turn = 0; !done && turn < 4 * items.length + 10; turn++) {
            act('next');
            act(0);
            await tick();
          }

          expect(done).toBe(true);
          expect(received).toEqual(items.filter((item) => !item.skip).map((item) => item.value * 2));
          expect(peak).toBeLessThanOrEqual(concurrency);
          expect(worstAhead).toBeLessThanOrEqual(backpressure);
          expect(running).toBe(0);
          expect(taken).toBe(items.length);
        },
      ),
      { numRuns: 300 },
    );
  });
});
