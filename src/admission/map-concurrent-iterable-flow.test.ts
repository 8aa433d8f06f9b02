import { describe, expect, it, vi } from 'vitest';
import { deferred } from '../../test/support/deferred.js';
import { FakeClock } from '../testing/fake-clock.js';
import { mapSkip } from './map-concurrent.js';
import { mapConcurrentIterable } from './map-concurrent-iterable.js';

const tick = () => new Promise<void>((resolve) => setImmediate(resolve));

async function collect<T>(iterable: AsyncIterable<T>): Promise<T[]> {
  const values: T[] = [];
  for await (const value of iterable) values.push(value);
  return values;
}

async function* fromArray<T>(items: readonly T[]) {
  for (const item of items) yield item;
}

/** A source (infinite unless `length`) that counts the items pulled from it. */
function counted(isAsync: boolean, length = Infinity) {
  const stats = { pulled: 0 };
  function* sync() {
    for (let i = 0; i < length; i++) {
      stats.pulled++;
      yield i;
    }
  }
  async function* asyncSource() {
    yield* sync();
  }
  return { stats, source: isAsync ? asyncSource() : sync() };
}

describe('mapConcurrentIterable: results in input order', () => {
  it('yields in input order whatever the completion order, at most `concurrency` in flight', async () => {
    const clock = new FakeClock();
    let running = 0;
    let peak = 0;
    const durations = [50, 10, 40, 20, 30, 5, 45, 15];
    const values = collect(
      mapConcurrentIterable(
        durations,
        async (ms, index) => {
          running++;
          peak = Math.max(peak, running);
          await clock.sleep(ms);
          running--;
          return `${index}:${ms}`;
        },
        { concurrency: 3, backpressure: 8 },
      ),
    );
    await clock.advance(200);
    expect(await values).toEqual(durations.map((ms, i) => `${i}:${ms}`));
    expect(peak).toBe(3);
  });

  it('takes arrays, Sets, strings, generators and async iterables; an empty source is done at once', async () => {
    const double = (x: number) => x * 2;
    expect(await collect(mapConcurrentIterable([1, 2, 3], double, { concurrency: 2 }))).toEqual([2, 4, 6]);
    expect(await collect(mapConcurrentIterable(new Set([1, 2]), double, { concurrency: 2 }))).toEqual([2, 4]);
    expect(await collect(mapConcurrentIterable('ab', (c) => c.toUpperCase(), { concurrency: 1 }))).toEqual([
      'A',
      'B',
    ]);
    expect(await collect(mapConcurrentIterable(fromArray([1, 2, 3]), double, { concurrency: 2 }))).toEqual([
      2, 4, 6,
    ]);
    for (const empty of [[], new Set<number>(), fromArray<number>([])]) {
      expect(await collect(mapConcurrentIterable(empty, double, { concurrency: Infinity }))).toEqual([]);
    }
  });

  it('leaves out the items whose fn returns mapSkip; indexes still count every item', async () => {
    const indexes: number[] = [];
    const odd = mapConcurrentIterable(
      fromArray([0, 1, 2, 3, 4, 5]),
      async (x, index) => {
        indexes.push(index);
        return x % 2 === 1 ? x : mapSkip;
      },
      { concurrency: 2 },
    );
    const values: number[] = await collect(odd);
    expect(values).toEqual([1, 3, 5]);
    expect(indexes).toEqual([0, 1, 2, 3, 4, 5]);
    expect(await collect(mapConcurrentIterable([1, 2], () => mapSkip, { concurrency: 2 }))).toEqual([]);
  });

  it('answers overlapping next() calls in order, and is its own (one-pass) iterable', async () => {
    const iterator = mapConcurrentIterable(['a', 'b', 'c'], (s) => s.toUpperCase(), { concurrency: 1 });
    expect(iterator[Symbol.asyncIterator]()).toBe(iterator);
    const results = await Promise.all([iterator.next(), iterator.next(), iterator.next(), iterator.next()]);
    expect(results).toEqual([
      { done: false, value: 'A' },
      { done: false, value: 'B' },
      { done: false, value: 'C' },
      { done: true, value: undefined },
    ]);
    expect(await collect(iterator)).toEqual([]);
  });
});

describe('mapConcurrentIterable: leaving after a failure it was not told of', () => {
  it('return() resolves done once the run has ended: the error is not thrown at a consumer that left', async () => {
    const failing = deferred<number>();
    const slow = deferred<number>();
    const iterator = mapConcurrentIterable([0, 1, 2], (x) => [x, failing.promise, slow.promise][x]!, {
      concurrency: 3,
    });
    await expect(iterator.next()).resolves.toEqual({ done: false, value: 0 });
    failing.reject(new Error('boom')); // while the consumer handles item 0
    await tick();
    const returned = iterator.return!();
    slow.resolve(2);
    await expect(returned).resolves.toEqual({ done: true, value: undefined });
    await expect(iterator.next()).resolves.toEqual({ done: true, value: undefined });
  });
});

describe('mapConcurrentIterable: return() before any next()', () => {
  it('touches nothing: the source is never pulled (nor opened, so not closed)', async () => {
    const iterable = { [Symbol.iterator]: () => [1, 2][Symbol.iterator]() };
    const opened = vi.spyOn(iterable, Symbol.iterator);
    const iterator = mapConcurrentIterable(iterable, (x) => x, { concurrency: 2 });
    await expect(iterator.return!()).resolves.toEqual({ done: true, value: undefined });
    await expect(iterator.next()).resolves.toEqual({ done: true, value: undefined });
    expect(opened).not.toHaveBeenCalled();
  });
});

describe('mapConcurrentIterable: backpressure', () => {
  it.each([false, true])(
    'never runs more than `backpressure` items ahead of a consumer that stops pulling (async: %s)',
    async (isAsync) => {
      const { stats, source } = counted(isAsync);
      const iterator = mapConcurrentIterable(source, (x) => x, { concurrency: 2, backpressure: 5 });
      expect(stats.pulled).toBe(0); // lazy: nothing before the first next()
      await expect(iterator.next()).resolves.toEqual({ done: false, value: 0 });
      await tick();
      expect(stats.pulled).toBe(1 + 5);
      await iterator.next();
      await iterator.next();
      await tick();
      expect(stats.pulled).toBe(3 + 5);
      await iterator.return!();
    },
  );

  it('a slow item at the head holds the window: `backpressure` taken, `concurrency` running', async () => {
    const head = deferred<string>();
    let calls = 0;
    let running = 0;
    let peak = 0;
    const iterator = mapConcurrentIterable(
      counted(false).source,
      async (i) => {
        calls++;
        running++;
        peak = Math.max(peak, running);
        const value = i === 0 ? await head.promise : `#${i}`;
        running--;
        return value;
      },
      { concurrency: 2, backpressure: 4 },
    );
    const first = iterator.next();
    await tick();
    expect(calls).toBe(4); // items 1..3 done and buffered behind item 0
    expect(peak).toBe(2);
    head.resolve('#0');
    expect(await first).toEqual({ done: false, value: '#0' });
    await tick();
    expect(calls).toBe(5);
    for (const value of ['#1', '#2', '#3', '#4']) {
      await expect(iterator.next()).resolves.toEqual({ done: false, value });
    }
    await iterator.return!();
  });

  it('by default buffers `concurrency` items, and a skipped item frees its place once passed', async () => {
    const { stats, source } = counted(false, 10);
    const iterator = mapConcurrentIterable(source, (x) => (x < 3 ? mapSkip : x), { concurrency: 3 });
    await expect(iterator.next()).resolves.toEqual({ done: false, value: 3 });
    await tick();
    expect(stats.pulled).toBe(4 + 3);
    expect(await collect(iterator)).toEqual([4, 5, 6, 7, 8, 9]);
  });
});
