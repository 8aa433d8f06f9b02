import { getEventListeners } from 'node:events';
import fc from 'fast-check';
import { describe, expect, it, vi } from 'vitest';
import { deferred } from '../../test/support/deferred.js';
import { FakeClock } from '../testing/fake-clock.js';
import { type MapContext, mapConcurrent } from './map-concurrent.js';

const tick = () => new Promise<void>((resolve) => setImmediate(resolve));

function track<T>(promise: Promise<T>) {
  const state: { settled: boolean; ok?: boolean; value?: T; error?: unknown } = { settled: false };
  promise.then(
    (value) => Object.assign(state, { settled: true, ok: true, value }),
    (error: unknown) => Object.assign(state, { settled: true, ok: false, error }),
  );
  return state;
}

/** An infinite generator that counts what was pulled and whether it was closed. */
function counting() {
  const stats = { pulled: 0, closed: false };
  function* source() {
    try {
      for (let i = 0; ; i++) {
        stats.pulled++;
        yield i;
      }
    } finally {
      stats.closed = true;
    }
  }
  return { stats, source: source() };
}

function countingAsync() {
  const stats = { pulled: 0, closed: false };
  async function* source() {
    try {
      for (let i = 0; ; i++) {
        stats.pulled++;
        yield i;
      }
    } finally {
      stats.closed = true;
    }
  }
  return { stats, source: source() };
}

async function* fromArray<T>(items: readonly T[]) {
  for (const item of items) yield item;
}

describe('mapConcurrent: invalid input rejects with a TypeError and runs nothing', () => {
  const fn = vi.fn((x: number) => x);

  it.each([null, undefined, 5, {}, Symbol('x')])('items %s', async (items) => {
    await expect(mapConcurrent(items as never, fn, { concurrency: 1 })).rejects.toThrow(
      /expected "items" to be an iterable or async iterable/,
    );
  });

  it('fn', async () => {
    await expect(mapConcurrent([1], 'f' as never, { concurrency: 1 })).rejects.toThrow(
      /expected "fn" to be a function/,
    );
  });

  it.each([0, -1, 1.5, Number.NaN, '2', undefined, null])('concurrency %s', async (concurrency) => {
    await expect(mapConcurrent([1], fn, { concurrency: concurrency as number })).rejects.toThrow(
      /expected "concurrency" to be a positive integer or Infinity/,
    );
  });

  it('options, signal and settle', async () => {
    await expect(mapConcurrent([1], fn, undefined as never)).rejects.toThrow(
      /expected "mapConcurrent options" to be an options object/,
    );
    await expect(mapConcurrent([1], fn, 4 as never)).rejects.toThrow(
      /expected "mapConcurrent options" to be an options object, got 4/,
    );
    await expect(mapConcurrent([1], fn, { concurrency: 1, signal: {} as never })).rejects.toThrow(
      /expected "signal" to be an AbortSignal/,
    );
    await expect(mapConcurrent([1], fn, { concurrency: 1, settle: 'yes' as never })).rejects.toThrow(
      /expected "settle" to be a boolean, got "yes"/,
    );
  });

  it('nothing was pulled or called', async () => {
    const { stats, source } = counting();
    await expect(mapConcurrent(source, fn, { concurrency: 0 })).rejects.toThrow(TypeError);
    expect(stats.pulled).toBe(0);
    expect(fn).not.toHaveBeenCalled();
  });
});

describe('mapConcurrent: results and bounds', () => {
  it('keeps input order whatever the completion order, with at most `concurrency` in flight', async () => {
    const clock = new FakeClock();
    let running = 0;
    let peak = 0;
    const durations = [50, 10, 40, 20, 30, 5, 45, 15];
    const result = mapConcurrent(
      durations,
      async (ms, index) => {
        running++;
        peak = Math.max(peak, running);
        await clock.sleep(ms);
        running--;
        return `${index}:${ms}`;
      },
      { concurrency: 3 },
    );
    await clock.advance(200);
    expect(await result).toEqual(durations.map((ms, i) => `${i}:${ms}`));
    expect(peak).toBe(3);
  });

  it('accepts arrays, Sets, Map iterators, strings, generators and async iterables', async () => {
    const double = (x: number) => x * 2;
    await expect(mapConcurrent([1, 2, 3], double, { concurrency: 2 })).resolves.toEqual([2, 4, 6]);
    await expect(mapConcurrent(new Set([1, 2, 3]), double, { concurrency: 2 })).resolves.toEqual([2, 4, 6]);
    await expect(mapConcurrent(new Map([['a', 1]]).values(), double, { concurrency: 2 })).resolves.toEqual([
      2,
    ]);
    await expect(mapConcurrent('ab', (c) => c.toUpperCase(), { concurrency: 2 })).resolves.toEqual([
      'A',
      'B',
    ]);
    await expect(mapConcurrent(fromArray([1, 2, 3]), double, { concurrency: 2 })).resolves.toEqual([2, 4, 6]);
    await expect(
      mapConcurrent(fromArray([1, 2, 3]), async (x) => double(x), { concurrency: Infinity }),
    ).resolves.toEqual([2, 4, 6]);
  });

  it('resolves [] for empty sources without calling fn', async () => {
    const fn = vi.fn();
    await expect(mapConcurrent([], fn, { concurrency: 4 })).resolves.toEqual([]);
    await expect(mapConcurrent(new Set(), fn, { concurrency: 4 })).resolves.toEqual([]);
    await expect(mapConcurrent(fromArray([]), fn, { concurrency: 4 })).resolves.toEqual([]);
    expect(fn).not.toHaveBeenCalled();
  });

  it('passes the index and one shared signal, not aborted after success', async () => {
    const contexts: MapContext[] = [];
    const signals: AbortSignal[] = [];
    const indexes: number[] = [];
    await mapConcurrent(
      ['a', 'b', 'c'],
      (_item, index, context) => {
        indexes.push(index);
        contexts.push(context);
        signals.push(context.signal);
      },
      { concurrency: 2 },
    );
    expect(indexes).toEqual([0, 1, 2]);
    expect(new Set(contexts).size).toBe(1);
    expect(new Set(signals).size).toBe(1);
    expect(signals[0]!.aborted).toBe(false);
  });

  it('never pulls more than `concurrency` items ahead of their results (sync and async sources)', async () => {
    for (const isAsync of [false, true]) {
      const clock = new FakeClock();
      let pulled = 0;
      let finished = 0;
      let worst = 0;
      function* sync() {
        for (let i = 0; i < 30; i++) {
          pulled++;
          worst = Math.max(worst, pulled - finished);
          yield i;
        }
      }
      async function* asyncSource() {
        yield* sync();
      }
      const result = mapConcurrent(
        isAsync ? asyncSource() : sync(),
        async (i) => {
          await clock.sleep((i * 7) % 11);
          finished++;
          return i;
        },
        { concurrency: 4 },
      );
      await clock.advance(500);
      expect(await result).toEqual(Array.from({ length: 30 }, (_, i) => i));
      expect(worst).toBeLessThanOrEqual(4);
      expect(worst).toBeGreaterThanOrEqual(3);
    }
  });

  it('never calls next() on an async source once it reported done, even with a pull queued behind it', async () => {
    const nexts: ReturnType<typeof deferred<IteratorResult<string>>>[] = [];
    const closed = vi.fn();
    const source: AsyncIterable<string> = {
      [Symbol.asyncIterator]: () => ({
        next: () => {
          const pending = deferred<IteratorResult<string>>();
          nexts.push(pending);
          return pending.promise;
        },
        return: () => {
          closed();
          return Promise.resolve({ done: true as const, value: undefined });
        },
      }),
    };
    const result = track(mapConcurrent(source, (s) => s.toUpperCase(), { concurrency: 2 }));
    await tick();
    expect(nexts).toHaveLength(1);
    nexts[0]!.resolve({ done: false, value: 'a' });
    await tick();
    // A second worker is waiting on next() #2, and the first, done with 'a', queued its pull behind it.
    expect(nexts).toHaveLength(2);
    nexts[1]!.resolve({ done: true, value: undefined });
    await tick();
    expect(nexts).toHaveLength(2);
    expect(result).toEqual({ settled: true, ok: true, value: ['A'] });
    expect(closed).not.toHaveBeenCalled();
  });

  it('runs a large array without stack growth, sync and async fn', async () => {
    const n = 100_000;
    const items = Array.from({ length: n }, (_, i) => i);
    const sync = await mapConcurrent(items, (x) => x + 1, { concurrency: 16 });
    expect(sync[n - 1]).toBe(n);
    const viaGen = await mapConcurrent(items.values(), async (x) => x + 1, { concurrency: 16 });
    expect(viaGen[n - 1]).toBe(n);
  });
});

describe('mapConcurrent: fail fast', () => {
  it('an infinite generator with an early failure: stops pulling, closes the source, rejects', async () => {
    const { stats, source } = counting();
    const boom = new Error('item 2 failed');
    const fn = vi.fn(async (i: number) => {
      await tick();
      if (i === 2) throw boom;
      return i;
    });
    await expect(mapConcurrent(source, fn, { concurrency: 3 })).rejects.toBe(boom);
    expect(stats.pulled).toBeLessThanOrEqual(2 + 3);
    expect(fn.mock.calls.length).toBe(stats.pulled);
    expect(stats.closed).toBe(true);
  });

  it('an infinite async generator with an early failure: same, and the close is awaited', async () => {
    const { stats, source } = countingAsync();
    const boom = new Error('item 1 failed');
    const fn = vi.fn(async (i: number) => {
      await tick();
      if (i === 1) throw boom;
      return i;
    });
    await expect(mapConcurrent(source, fn, { concurrency: 2 })).rejects.toBe(boom);
    expect(stats.pulled).toBeLessThanOrEqual(1 + 2);
    expect(stats.closed).toBe(true);
  });

  it('waits for an async source to finish closing (an async finally) before rejecting', async () => {
    const steps: string[] = [];
    async function* source() {
      try {
        for (let i = 0; ; i++) yield i;
      } finally {
        await tick();
        steps.push('closed');
      }
    }
    const boom = new Error('boom');
    await mapConcurrent(
      source(),
      async (i) => {
        if (i === 0) throw boom;
      },
      { concurrency: 1 },
    ).catch(() => steps.push('rejected'));
    expect(steps).toEqual(['closed', 'rejected']);
  });

  it('aborts the siblings with the first error, launches nothing new, and waits for them', async () => {
    const clock = new FakeClock();
    const first = new Error('first');
    const started: number[] = [];
    const reasons: unknown[] = [];
    const result = track(
      mapConcurrent(
        [0, 1, 2, 3, 4, 5],
        async (i, _index, { signal }) => {
          started.push(i);
          if (i === 1) {
            await clock.sleep(10);
            throw first;
          }
          // Siblings notice the abort but take 50 ms to clean up.
          await new Promise<void>((resolve) => signal.addEventListener('abort', () => resolve()));
          reasons.push(signal.reason);
          await clock.sleep(50);
          throw new Error(`sibling ${i} after abort`);
        },
        { concurrency: 3 },
      ),
    );
    await clock.advance(10);
    expect(started).toEqual([0, 1, 2]);
    expect(reasons).toEqual([first, first]);
    await clock.advance(49);
    expect(result.settled).toBe(false); // siblings still cleaning up: no orphaned work
    await clock.advance(1);
    expect(result).toMatchObject({ settled: true, ok: false, error: first });
    expect(started).toEqual([0, 1, 2]);
  });

  it('rejects with the first error in time, not by index; later errors are ignored', async () => {
    const clock = new FakeClock();
    const errors = [new Error('e0'), new Error('e1'), new Error('e2')];
    const result = mapConcurrent(
      [30, 10, 20],
      async (ms, i) => {
        await clock.sleep(ms);
        throw errors[i];
      },
      { concurrency: 3 },
    );
    const caught = result.catch((e: unknown) => e);
    await clock.advance(30);
    expect(await caught).toBe(errors[1]);
  });

  it('a synchronous throw counts as a failure', async () => {
    const boom = new Error('sync');
    await expect(
      mapConcurrent(
        [1, 2, 3],
        (x) => {
          if (x === 2) throw boom;
          return x;
        },
        { concurrency: 1 },
      ),
    ).rejects.toBe(boom);
  });

  it('a signal read after the failure is already aborted', async () => {
    let late: AbortSignal | undefined;
    const boom = new Error('boom');
    await expect(
      mapConcurrent(
        [0, 1],
        async (i, _index, context) => {
          if (i === 0) throw boom;
          await tick();
          late = context.signal;
        },
        { concurrency: 2 },
      ),
    ).rejects.toBe(boom);
    expect(late?.aborted).toBe(true);
    expect(late?.reason).toBe(boom);
  });
});

describe('mapConcurrent: settle', () => {
  it('returns one PromiseSettledResult per item in order, runs everything, aborts nothing', async () => {
    let signal: AbortSignal | undefined;
    const boom = new Error('odd');
    const results = await mapConcurrent(
      [0, 1, 2, 3],
      async (i, _index, context) => {
        signal = context.signal;
        await tick();
        if (i % 2 === 1) throw boom;
        return i * 10;
      },
      { concurrency: 2, settle: true },
    );
    expect(results).toEqual([
      { status: 'fulfilled', value: 0 },
      { status: 'rejected', reason: boom },
      { status: 'fulfilled', value: 20 },
      { status: 'rejected', reason: boom },
    ]);
    expect(signal?.aborted).toBe(false);
  });
});

describe('mapConcurrent: caller abort', () => {
  it.each([false, true])(
    'stops launching, waits for running work, rejects with the reason (settle: %s)',
    async (settle) => {
      const clock = new FakeClock();
      const controller = new AbortController();
      const reason = new Error('caller gave up');
      const { stats, source } = counting();
      const seen: unknown[] = [];
      const result = track(
        mapConcurrent(
          source,
          async (i, _index, { signal }) => {
            await clock.sleep(10);
            if (signal.aborted) seen.push(signal.reason);
            // ignores the abort for a while, then succeeds anyway
            await clock.sleep(20);
            return i;
          },
          { concurrency: 2, signal: controller.signal, settle },
        ),
      );
      await clock.advance(15);
      const pulledAtAbort = stats.pulled;
      controller.abort(reason);
      await tick();
      expect(result.settled).toBe(false);
      await clock.advance(20);
      expect(result).toMatchObject({ settled: true, ok: false, error: reason });
      expect(stats.pulled).toBe(pulledAtAbort);
      expect(stats.closed).toBe(true);
      expect(seen).toEqual([]); // the first pair checked before the abort
    },
  );

  it('the shared signal aborts with the caller reason', async () => {
    const controller = new AbortController();
    const reason = new Error('stop');
    let inner: AbortSignal | undefined;
    const result = mapConcurrent(
      [1],
      (_x, _i, { signal }) => {
        inner = signal;
        return new Promise((_, reject) => signal.addEventListener('abort', () => reject(signal.reason)));
      },
      { concurrency: 1, signal: controller.signal },
    );
    controller.abort(reason);
    await expect(result).rejects.toBe(reason);
    expect(inner?.reason).toBe(reason);
  });

  it('an already-aborted signal rejects at once without touching the source', async () => {
    const reason = new Error('already');
    const iterable = { [Symbol.iterator]: vi.fn(() => [1][Symbol.iterator]()) };
    const fn = vi.fn();
    await expect(
      mapConcurrent(iterable, fn, { concurrency: 1, signal: AbortSignal.abort(reason) }),
    ).rejects.toBe(reason);
    expect(iterable[Symbol.iterator]).not.toHaveBeenCalled();
    expect(fn).not.toHaveBeenCalled();
  });

  it('does not wait for an async source stuck in next()', async () => {
    const controller = new AbortController();
    const stuck: AsyncIterable<number> = {
      [Symbol.asyncIterator]: () => ({ next: () => new Promise<IteratorResult<number>>(() => {}) }),
    };
    const result = mapConcurrent(stuck, (x) => x, { concurrency: 2, signal: controller.signal });
    await tick();
    const reason = new Error('stop');
    controller.abort(reason);
    await expect(result).rejects.toBe(reason);
  });

  it('waits for a close queued behind a pending next() (an async generator) before rejecting', async () => {
    const controller = new AbortController();
    const reason = new Error('stop');
    const gate = deferred<number>();
    const steps: string[] = [];
    async function* source() {
      try {
        yield await gate.promise; // the first pull waits here
      } finally {
        steps.push('closed');
      }
    }
    const result = track(mapConcurrent(source(), (x) => x, { concurrency: 1, signal: controller.signal }));
    await tick();
    controller.abort(reason);
    await tick();
    // The generator cannot close before its pending next() settles: neither can the map.
    expect(result.settled).toBe(false);
    expect(steps).toEqual([]);
    gate.resolve(1);
    await tick();
    expect(steps).toEqual(['closed']);
    expect(result).toMatchObject({ settled: true, ok: false, error: reason });
  });

  it('refuses a signal look-alike with a TypeError', async () => {
    const lookAlike = { aborted: false, reason: undefined, addEventListener() {}, removeEventListener() {} };
    await expect(
      mapConcurrent([1], (x) => x, { concurrency: 1, signal: lookAlike as never }),
    ).rejects.toThrow(/expected "signal" to be an AbortSignal, got an object/);
  });

  it('removes its listener from the caller signal when done', async () => {
    const controller = new AbortController();
    const added = vi.spyOn(controller.signal, 'addEventListener');
    const removed = vi.spyOn(controller.signal, 'removeEventListener');
    await mapConcurrent([1, 2], (x) => x, { concurrency: 1, signal: controller.signal });
    expect(added).toHaveBeenCalledTimes(1);
    expect(removed).toHaveBeenCalledWith('abort', added.mock.calls[0]![1]);
  });
});

describe('mapConcurrent: a failing source', () => {
  it.each([false, true])(
    'a throwing iterator rejects with its error after running work (settle: %s)',
    async (settle) => {
      const clock = new FakeClock();
      const broken = new Error('source broke');
      let finished = 0;
      function* source() {
        yield 1;
        yield 2;
        throw broken;
      }
      const result = track(
        mapConcurrent(
          source(),
          async (x) => {
            await clock.sleep(x === 1 ? 5 : 50);
            finished++;
            return x;
          },
          { concurrency: 2, settle },
        ),
      );
      await clock.advance(5); // item 1 done; the next pull throws while item 2 runs
      expect(result.settled).toBe(false);
      await clock.advance(45);
      expect(result).toMatchObject({ settled: true, ok: false, error: broken });
      expect(finished).toBe(2);
    },
  );

  it('a rejecting async iterator rejects with its error', async () => {
    const broken = new Error('stream error');
    async function* source() {
      yield 1;
      throw broken;
    }
    await expect(mapConcurrent(source(), (x) => x, { concurrency: 4 })).rejects.toBe(broken);
  });

  it('an error thrown while closing the source never replaces the map error: both are reported', async () => {
    const boom = new Error('boom');
    const closeError = new Error('close failed');
    function* source() {
      try {
        yield 1;
        yield 2;
      } finally {
        // biome-ignore lint/correctness/noUnsafeFinally: a misbehaving source on purpose
        throw closeError;
      }
    }
    const error: unknown = await mapConcurrent(
      source(),
      () => {
        throw boom;
      },
      { concurrency: 1 },
    ).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(AggregateError);
    expect((error as AggregateError).errors).toEqual([boom, closeError]);
    expect((error as AggregateError).errors[0]).toBe(boom);
  });
});

/**
 * Runs `body`, then lets the event loop turn a few times, and returns every unhandled rejection
 * the process saw meanwhile (the listener is removed after).
 */
async function unhandledRejectionsDuring(body: () => Promise<void>): Promise<unknown[]> {
  const seen: unknown[] = [];
  const listener = (reason: unknown) => seen.push(reason);
  process.on('unhandledRejection', listener);
  try {
    await body();
    for (let i = 0; i < 5; i++) await tick();
  } finally {
    process.off('unhandledRejection', listener);
  }
  return seen;
}

/**
 * A hand-written async source: item 0 at once, then every `next()` stays pending (or rejects with
 * `nextError`); `return()` rejects with `closeError` (or throws it synchronously).
 */
function stuckSource(options: {
  closeError?: Error;
  closeThrows?: boolean;
  nextError?: Error;
  first?: boolean;
}) {
  const stats = { next: 0, returned: 0 };
  const pending = deferred<IteratorResult<number>>();
  const iterator: AsyncIterableIterator<number> = {
    [Symbol.asyncIterator]() {
      return iterator;
    },
    next() {
      stats.next++;
      if (stats.next === 1 && options.first !== false) return Promise.resolve({ done: false, value: 0 });
      if (options.nextError !== undefined) return Promise.reject(options.nextError);
      return pending.promise;
    },
    return() {
      stats.returned++;
      if (options.closeThrows) throw options.closeError;
      if (options.closeError !== undefined) return Promise.reject(options.closeError);
      return Promise.resolve({ done: true, value: undefined });
    },
  };
  return { stats, iterator, pending };
}

/** The map's rejection when closing the source failed too: both errors, the first one first. */
function bothErrors(first: unknown, close: unknown) {
  return expect.objectContaining({
    name: 'AggregateError',
    errors: [first, close],
    message: expect.stringMatching(/closing its source failed too/),
  });
}

describe('mapConcurrent: a source whose close fails (never an unhandled rejection)', () => {
  it('fn throws while a next() is pending and return() rejects: the first error, with the close error attached', async () => {
    const boom = new Error('fn failed');
    const closeError = new Error('close failed');
    const { stats, iterator } = stuckSource({ closeError });
    let outcome: unknown;
    const unhandled = await unhandledRejectionsDuring(async () => {
      outcome = await mapConcurrent(
        iterator,
        async () => {
          await tick();
          throw boom;
        },
        { concurrency: 2 },
      ).catch((error: unknown) => error);
    });
    expect(stats).toEqual({ next: 2, returned: 1 });
    expect(outcome).toEqual(bothErrors(boom, closeError));
    expect(unhandled).toEqual([]);
  });

  it('the caller aborts while next() is pending and return() rejects: the reason, with the close error attached', async () => {
    const controller = new AbortController();
    const reason = new Error('caller gave up');
    const closeError = new Error('close failed');
    const { stats, iterator } = stuckSource({ closeError, first: false });
    let outcome: unknown;
    const unhandled = await unhandledRejectionsDuring(async () => {
      const result = mapConcurrent(iterator, (x) => x, { concurrency: 4, signal: controller.signal });
      await tick();
      controller.abort(reason);
      outcome = await result.catch((error: unknown) => error);
    });
    expect(stats).toEqual({ next: 1, returned: 1 });
    expect(outcome).toEqual(bothErrors(reason, closeError));
    expect(unhandled).toEqual([]);
  });

  it('return() throws synchronously (with and without a pull pending): attached the same way', async () => {
    for (const concurrency of [1, 2]) {
      const boom = new Error('fn failed');
      const closeError = new Error('close threw');
      const { stats, iterator } = stuckSource({ closeError, closeThrows: true });
      let outcome: unknown;
      const unhandled = await unhandledRejectionsDuring(async () => {
        outcome = await mapConcurrent(
          iterator,
          async () => {
            await tick();
            throw boom;
          },
          { concurrency },
        ).catch((error: unknown) => error);
      });
      expect(stats, `concurrency ${concurrency}`).toEqual({ next: concurrency, returned: 1 });
      expect(outcome, `concurrency ${concurrency}`).toEqual(bothErrors(boom, closeError));
      expect(unhandled).toEqual([]);
    }
  });

  it('a close that succeeds keeps the first error as it is', async () => {
    const boom = new Error('fn failed');
    const { stats, iterator } = stuckSource({});
    const unhandled = await unhandledRejectionsDuring(async () => {
      await expect(
        mapConcurrent(
          iterator,
          () => {
            throw boom;
          },
          { concurrency: 2 },
        ),
      ).rejects.toBe(boom);
    });
    expect(stats.returned).toBe(1);
    expect(unhandled).toEqual([]);
  });

  it('next() rejects: the map rejects with it and does not close the broken source', async () => {
    const broken = new Error('next failed');
    const { stats, iterator } = stuckSource({ nextError: broken, closeError: new Error('never called') });
    const unhandled = await unhandledRejectionsDuring(async () => {
      await expect(mapConcurrent(iterator, (x) => x, { concurrency: 1 })).rejects.toBe(broken);
    });
    expect(stats).toEqual({ next: 2, returned: 0 });
    expect(unhandled).toEqual([]);
  });

  it('a pending next() that rejects after the map stopped is handled, and the first error wins', async () => {
    const boom = new Error('fn failed');
    const late = new Error('late next failure');
    const { stats, iterator, pending } = stuckSource({});
    const unhandled = await unhandledRejectionsDuring(async () => {
      await expect(
        mapConcurrent(
          iterator,
          async () => {
            await tick();
            throw boom;
          },
          { concurrency: 2 },
        ),
      ).rejects.toBe(boom);
      pending.reject(late);
    });
    expect(stats).toEqual({ next: 2, returned: 1 });
    expect(unhandled).toEqual([]);
  });

  it('an async generator whose finally throws while closing: both errors', async () => {
    const boom = new Error('fn failed');
    const closeError = new Error('finally threw');
    async function* source() {
      try {
        for (let i = 0; ; i++) yield i;
      } finally {
        await tick();
        // biome-ignore lint/correctness/noUnsafeFinally: a misbehaving source on purpose
        throw closeError;
      }
    }
    const unhandled = await unhandledRejectionsDuring(async () => {
      await expect(
        mapConcurrent(
          source(),
          async () => {
            throw boom;
          },
          { concurrency: 1 },
        ),
      ).rejects.toEqual(bothErrors(boom, closeError));
    });
    expect(unhandled).toEqual([]);
  });
});

describe('mapConcurrent: one abort listener per caller signal', () => {
  it('20 concurrent maps sharing one signal leave at most 1 listener on it while running and 0 after', async () => {
    const controller = new AbortController();
    const gates = Array.from({ length: 20 }, () => deferred<void>());
    const maps = gates.map((gate) =>
      mapConcurrent([1, 2], () => gate.promise, { concurrency: 2, signal: controller.signal }),
    );
    await tick();
    expect(getEventListeners(controller.signal, 'abort').length).toBeLessThanOrEqual(1);
    for (const gate of gates.slice(0, 10)) gate.resolve();
    await Promise.all(maps.slice(0, 10));
    expect(getEventListeners(controller.signal, 'abort').length).toBeLessThanOrEqual(1);
    for (const gate of gates.slice(10)) gate.resolve();
    await Promise.all(maps);
    expect(getEventListeners(controller.signal, 'abort')).toHaveLength(0);
  });

  it('an abort still reaches every map sharing the signal, and leaves no listener behind', async () => {
    const controller = new AbortController();
    const reason = new Error('stop');
    const maps = Array.from({ length: 20 }, () =>
      mapConcurrent(
        [1],
        (_x, _i, { signal }) =>
          new Promise((_, reject) => signal.addEventListener('abort', () => reject(signal.reason))),
        { concurrency: 1, signal: controller.signal },
      ),
    );
    controller.abort(reason);
    const outcomes = await Promise.allSettled(maps);
    expect(outcomes.every((o) => o.status === 'rejected' && o.reason === reason)).toBe(true);
    expect(getEventListeners(controller.signal, 'abort')).toHaveLength(0);
  });
});

describe('mapConcurrent: properties', () => {
  it('order kept, bound respected, first error wins, nothing starts after it, nothing left running', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.array(fc.record({ ms: fc.integer({ min: 0, max: 20 }), fails: fc.boolean() }), { maxLength: 30 }),
        fc.integer({ min: 1, max: 6 }),
        fc.constantFrom('array', 'iterable', 'async'),
        fc.boolean(),
        async (items, concurrency, kind, settle) => {
          const clock = new FakeClock();
          let running = 0;
          let peak = 0;
          const events: string[] = [];
          const thrown: Error[] = [];
          const source = kind === 'array' ? items : kind === 'iterable' ? items.values() : fromArray(items);
          const result = mapConcurrent(
            source,
            async (item, index) => {
              events.push('start');
              running++;
              peak = Math.max(peak, running);
              try {
                await clock.sleep(item.ms);
                if (item.fails) {
                  const error = new Error(`item ${index}`);
                  thrown.push(error);
                  events.push('fail');
                  throw error;
                }
                return index;
              } finally {
                running--;
              }
            },
            { concurrency, settle },
          ).then(
            (value) => ({ ok: true as const, value }),
            (error: unknown) => ({ ok: false as const, error }),
          );
          await clock.advance(1_000);
          const r = await result;
          expect(peak).toBeLessThanOrEqual(concurrency);
          expect(running).toBe(0);
          if (settle || thrown.length === 0) {
            expect(r.ok).toBe(true);
            const expected = items.map((item, index) =>
              settle
                ? item.fails
                  ? { status: 'rejected', reason: expect.objectContaining({ message: `item ${index}` }) }
                  : { status: 'fulfilled', value: index }
                : index,
            );
            expect((r as { value: unknown }).value).toEqual(expected);
          } else {
            expect(r).toEqual({ ok: false, error: thrown[0] });
            const firstFail = events.indexOf('fail');
            expect(events.slice(firstFail).includes('start')).toBe(false);
          }
          expect(clock.pendingTimers).toBe(0);
        },
      ),
      { numRuns: 200 },
    );
  });
});
