import { describe, expect, expectTypeOf, it } from 'vitest';
import { FakeClock } from '../testing/fake-clock.js';
import { mapConcurrent, mapSkip } from './map-concurrent.js';
import { mapConcurrentIterable } from './map-concurrent-iterable.js';

async function* fromArray<T>(items: readonly T[]) {
  for (const item of items) yield item;
}

describe('mapSkip', () => {
  it('is one symbol for every copy of bulwark', () => {
    expect(typeof mapSkip).toBe('symbol');
    expect(mapSkip).toBe(Symbol.for('bulwark.mapSkip'));
  });

  it('a failure still fails the map when earlier items were skipped', async () => {
    const boom = new Error('boom');
    await expect(
      mapConcurrent(
        [0, 1, 2],
        (x) => {
          if (x === 2) throw boom;
          return mapSkip;
        },
        { concurrency: 1 },
      ),
    ).rejects.toBe(boom);
  });

  it('mapConcurrent leaves skipped items out, the rest in input order, whatever the completion order', async () => {
    const clock = new FakeClock();
    const durations = [30, 5, 20, 10, 25, 0];
    const result = mapConcurrent(
      durations,
      async (ms, index) => {
        await clock.sleep(ms);
        return index % 3 === 1 ? mapSkip : `${index}:${ms}`;
      },
      { concurrency: 3 },
    );
    await clock.advance(100);
    expect(await result).toEqual(['0:30', '2:20', '3:10', '5:0']);
  });

  it('mapConcurrent skips from iterables, async iterables, sync fns, and with settle: true', async () => {
    const keepEven = (x: number) => (x % 2 === 0 ? x : mapSkip);
    const items = [0, 1, 2, 3, 4];
    await expect(mapConcurrent(items.values(), keepEven, { concurrency: 2 })).resolves.toEqual([0, 2, 4]);
    await expect(mapConcurrent(fromArray(items), keepEven, { concurrency: 2 })).resolves.toEqual([0, 2, 4]);
    await expect(mapConcurrent(items, () => mapSkip, { concurrency: 2 })).resolves.toEqual([]);
    const boom = new Error('odd');
    await expect(
      mapConcurrent(
        items,
        async (x) => {
          if (x === 3) throw boom;
          return keepEven(x);
        },
        { concurrency: 2, settle: true },
      ),
    ).resolves.toEqual([
      { status: 'fulfilled', value: 0 },
      { status: 'fulfilled', value: 2 },
      { status: 'rejected', reason: boom },
      { status: 'fulfilled', value: 4 },
    ]);
  });

  it('is typed out of the results', () => {
    const fn = async (x: number) => (x > 0 ? String(x) : mapSkip);
    expectTypeOf(mapConcurrent([1], fn, { concurrency: 1 })).resolves.toEqualTypeOf<string[]>();
    expectTypeOf(mapConcurrent([1], fn, { concurrency: 1, settle: true })).resolves.toEqualTypeOf<
      PromiseSettledResult<string>[]
    >();
    expectTypeOf(mapConcurrentIterable([1], fn, { concurrency: 1 })).toEqualTypeOf<
      AsyncIterableIterator<string>
    >();
  });
});
