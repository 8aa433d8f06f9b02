import { getEventListeners } from 'node:events';
import { describe, expect, it, vi } from 'vitest';
import { deferred } from '../../test/support/deferred.js';
import { track } from '../../test/support/track.js';
import { FakeClock } from '../testing/fake-clock.js';
import { mapConcurrentIterable } from './map-concurrent-iterable.js';

const tick = () => new Promise<void>((resolve) => setImmediate(resolve));

/** An infinite source (sync or async) that counts what was pulled and whether it was closed. */
function counting(isAsync = false) {
  const stats = { pulled: 0, closed: false };
  function* sync() {
    try {
      for (let i = 0; ; i++) {
        stats.pulled++;
        yield i;
      }
    } finally {
      stats.closed = true;
    }
  }
  async function* asyncSource() {
    yield* sync();
  }
  return { stats, source: isAsync ? asyncSource() : sync() };
}

/** Calls that stay in flight until the test settles them; counts how many are running. */
function held() {
  const calls: { index: number; signal: AbortSignal; settle: ReturnType<typeof deferred<string>> }[] = [];
  const state = { running: 0, peak: 0 };
  const fn = async (_item: unknown, index: number, { signal }: { signal: AbortSignal }) => {
    state.running++;
    state.peak = Math.max(state.peak, state.running);
    const settle = deferred<string>();
    calls.push({ index, signal, settle });
    try {
      return await settle.promise;
    } finally {
      state.running--;
    }
  };
  return { calls, state, fn };
}

/** An endless source whose close (its `finally`) throws `closeError`. */
function* closeFails(closeError: Error) {
  try {
    for (;;) yield 1;
  } finally {
    // biome-ignore lint/correctness/noUnsafeFinally: a misbehaving source on purpose
    throw closeError;
  }
}

describe('mapConcurrentIterable: invalid input throws a TypeError at once and takes nothing', () => {
  const fn = (x: number) => x;

  it.each([null, undefined, 5, {}])('items %s', (items) => {
    expect(() => mapConcurrentIterable(items as never, fn, { concurrency: 1 })).toThrow(
      /expected "items" to be an iterable or async iterable/,
    );
  });

  it('fn, concurrency, backpressure, signal and unknown options', () => {
    const bad: [unknown, unknown, RegExp][] = [
      ['f', { concurrency: 1 }, /expected "fn" to be a function/],
      [fn, { concurrency: 0 }, /expected "concurrency" to be a positive integer or Infinity, got 0/],
      [fn, { concurrency: 1.5 }, /expected "concurrency" to be a positive integer/],
      [fn, {}, /expected "concurrency" to be a positive integer or Infinity, got undefined/],
      [
        fn,
        { concurrency: 4, backpressure: 2 },
        /expected "backpressure" to be at least "concurrency" \(4\), got 2/,
      ],
      [fn, { concurrency: 1, backpressure: 0 }, /expected "backpressure" to be a positive integer/],
      [fn, { concurrency: 1, signal: { aborted: false } }, /expected "signal" to be an AbortSignal/],
      [fn, { concurrency: 1, backpresure: 2 }, /unknown option "backpresure".*did you mean "backpressure"/],
      [fn, 4, /expected "mapConcurrentIterable options" to be an options object, got 4/],
    ];
    for (const [f, options, message] of bad) {
      expect(() => mapConcurrentIterable([1], f as never, options as never)).toThrow(message);
    }
  });

  it('nothing is pulled from the source, at the call or before the first next()', async () => {
    const { stats, source } = counting();
    expect(() => mapConcurrentIterable(source, 'f' as never, { concurrency: 1 })).toThrow(TypeError);
    mapConcurrentIterable(source, (x) => x, { concurrency: 4 });
    await tick();
    expect(stats.pulled).toBe(0);
  });
});

describe('mapConcurrentIterable: a failing fn ends the iteration with its error', () => {
  it('aborts the siblings, drops results not yet yielded, waits for them, closes the source, then rejects', async () => {
    const { stats, source } = counting();
    const { calls, state, fn } = held();
    const iterator = mapConcurrentIterable(source, fn, { concurrency: 3 });
    const first = iterator.next();
    await tick();
    expect(calls.map((c) => c.index)).toEqual([0, 1, 2]);
    const boom = new Error('item 1 failed');
    calls[2]!.settle.resolve('two'); // done, but behind item 0: never yielded
    calls[1]!.settle.reject(boom);
    await tick();
    expect(calls[0]!.signal.aborted).toBe(true);
    expect(calls[0]!.signal.reason).toBe(boom);
    const pending = track(first);
    await tick();
    expect(pending.settled).toBe(false); // item 0 still running: no orphaned work
    calls[0]!.settle.resolve('zero');
    await tick();
    expect(pending).toMatchObject({ settled: true, error: boom });
    expect(state.running).toBe(0);
    expect(stats).toEqual({ pulled: 3, closed: true });
    await expect(iterator.next()).resolves.toEqual({ done: true, value: undefined });
  });

  it('rejects with the first error in time, not by index', async () => {
    const clock = new FakeClock();
    const errors = [new Error('e0'), new Error('e1')];
    const iterator = mapConcurrentIterable(
      [30, 10],
      async (ms, i) => {
        await clock.sleep(ms);
        throw errors[i];
      },
      { concurrency: 2 },
    );
    const caught = iterator.next().catch((e: unknown) => e);
    await clock.advance(30);
    expect(await caught).toBe(errors[1]);
  });

  it('a source that throws (sync or async) ends it with that error, after running calls, unclosed', async () => {
    const broken = new Error('source broke');
    for (const isAsync of [false, true]) {
      const closed = vi.fn();
      function* sync() {
        try {
          yield 1;
          throw broken;
        } finally {
          closed();
        }
      }
      async function* asyncSource() {
        yield* sync();
      }
      const iterator = mapConcurrentIterable(isAsync ? asyncSource() : sync(), (x) => x * 10, {
        concurrency: 1,
      });
      await expect(iterator.next()).resolves.toEqual({ done: false, value: 10 });
      await expect(iterator.next()).rejects.toBe(broken);
      expect(closed).toHaveBeenCalledTimes(1); // the generator's own finally, not a second close
    }
  });

  it('a failed close is attached to the error that stopped the run', async () => {
    const boom = new Error('fn failed');
    const closeError = new Error('close failed');
    const error: unknown = await mapConcurrentIterable(
      closeFails(closeError),
      () => {
        throw boom;
      },
      { concurrency: 1 },
    )
      .next()
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(AggregateError);
    expect((error as AggregateError).errors).toEqual([boom, closeError]);
    expect((error as AggregateError).message).toMatch(/^mapConcurrentIterable stopped on errors\[0\]/);
  });
});

describe('mapConcurrentIterable: caller abort', () => {
  it('aborts the running calls with the reason, waits for them, then rejects with it; no listener left', async () => {
    const controller = new AbortController();
    const { stats, source } = counting(true);
    const { calls, state, fn } = held();
    const iterator = mapConcurrentIterable(source, fn, { concurrency: 2, signal: controller.signal });
    const pending = track(iterator.next());
    await tick();
    expect(getEventListeners(controller.signal, 'abort')).toHaveLength(1);
    const reason = new Error('caller gave up');
    controller.abort(reason);
    expect(calls.map((c) => c.signal.reason)).toEqual([reason, reason]);
    await tick();
    expect(pending.settled).toBe(false);
    for (const call of calls) call.settle.resolve('ignored the abort');
    await tick();
    expect(pending).toMatchObject({ settled: true, error: reason });
    expect(state.running).toBe(0);
    expect(stats).toEqual({ pulled: 2, closed: true });
    expect(getEventListeners(controller.signal, 'abort')).toHaveLength(0);
  });

  it('an already-aborted signal rejects the first next() without touching the source', async () => {
    const reason = new Error('already');
    const iterable = { [Symbol.iterator]: vi.fn(() => [1][Symbol.iterator]()) };
    const fn = vi.fn();
    const iterator = mapConcurrentIterable(iterable, fn, {
      concurrency: 1,
      signal: AbortSignal.abort(reason),
    });
    await expect(iterator.next()).rejects.toBe(reason);
    await expect(iterator.next()).resolves.toEqual({ done: true, value: undefined });
    expect(iterable[Symbol.iterator]).not.toHaveBeenCalled();
    expect(fn).not.toHaveBeenCalled();
  });

  it('an abort after all work is done still ends the iteration', async () => {
    const controller = new AbortController();
    const iterator = mapConcurrentIterable([1, 2, 3], (x) => x, {
      concurrency: 3,
      signal: controller.signal,
    });
    await expect(iterator.next()).resolves.toEqual({ done: false, value: 1 });
    await tick();
    expect(getEventListeners(controller.signal, 'abort')).toHaveLength(0);
    const reason = new Error('late');
    controller.abort(reason);
    await expect(iterator.next()).rejects.toBe(reason);
    await expect(iterator.next()).resolves.toEqual({ done: true, value: undefined });
  });
});

describe('mapConcurrentIterable: stopping early', () => {
  it('break aborts the running calls, waits for them, stops pulling and closes the source', async () => {
    const clock = new FakeClock();
    const controller = new AbortController();
    const { stats, source } = counting(true);
    let running = 0;
    const signals: AbortSignal[] = [];
    const loop = (async () => {
      const seen: number[] = [];
      for await (const value of mapConcurrentIterable(
        source,
        async (i, _index, { signal }) => {
          running++;
          signals.push(signal);
          try {
            await clock.sleep(i === 0 ? 1 : 1_000, signal);
            return i;
          } finally {
            running--;
          }
        },
        { concurrency: 3, signal: controller.signal },
      )) {
        seen.push(value);
        break;
      }
      return seen;
    })();
    await clock.advance(1);
    expect(await loop).toEqual([0]);
    expect(running).toBe(0);
    expect(signals[0]!.aborted).toBe(true);
    expect(signals[0]!.reason).toMatchObject({ name: 'AbortError' });
    expect(stats.closed).toBe(true);
    const pulled = stats.pulled;
    await tick();
    expect(stats.pulled).toBe(pulled);
    expect(pulled).toBeLessThanOrEqual(4);
    expect(clock.pendingTimers).toBe(0);
    expect(getEventListeners(controller.signal, 'abort')).toHaveLength(0);
  });

  it('return() answers once the running calls settle; pending next() calls end; later calls are done', async () => {
    const { calls, fn } = held();
    const iterator = mapConcurrentIterable([1, 2], fn, { concurrency: 2 });
    const next = track(iterator.next());
    await tick();
    const returned = track(iterator.return!());
    await tick();
    expect(next).toMatchObject({ settled: true, value: { done: true } });
    expect(returned.settled).toBe(false);
    for (const call of calls) call.settle.resolve('late');
    await tick();
    expect(returned).toMatchObject({ settled: true, value: { done: true, value: undefined } });
    await expect(iterator.next()).resolves.toEqual({ done: true, value: undefined });
  });

  it('return() rejects with the close failure alone', async () => {
    const closeError = new Error('close failed');
    const iterator = mapConcurrentIterable(closeFails(closeError), (x) => x, { concurrency: 1 });
    await iterator.next();
    await expect(iterator.return!()).rejects.toBe(closeError);
  });
});
