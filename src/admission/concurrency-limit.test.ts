import fc from 'fast-check';
import { describe, expect, it, vi } from 'vitest';
import { deferred } from '../../test/support/deferred.js';
import type { Context } from '../core/context.js';
import { isRejectedError, RejectedError } from '../core/errors.js';
import { setListenerErrorHandler } from '../core/events.js';
import { pipeline } from '../core/pipeline.js';
import { retry } from '../retry/retry.js';
import { FakeClock } from '../testing/fake-clock.js';
import { timeout } from '../timeout/timeout.js';
import { type ConcurrencyLimitRejectedEvent, concurrencyLimit } from './concurrency-limit.js';
import { ConcurrencyLimitError, isBulkheadFullError, isConcurrencyLimitError } from './errors.js';

/** Lets pending promise reactions run. */
const tick = () => new Promise<void>((resolve) => setImmediate(resolve));

const honoursSignal = ({ signal }: Context) =>
  new Promise<never>((_, reject) => signal.addEventListener('abort', () => reject(signal.reason)));

describe('concurrencyLimit: options', () => {
  it.each([0, -1, 1.5, Number.NaN, Infinity, '2', null, undefined])('max %s is a TypeError', (max) => {
    expect(() => concurrencyLimit(max as number)).toThrow(TypeError);
    expect(() => concurrencyLimit(max as number)).toThrow(/expected "max" to be a positive integer/);
  });

  it('rejects a non-object options argument and a non-function onRejected', () => {
    expect(() => concurrencyLimit(1, 'x' as never)).toThrow(
      /expected "concurrencyLimit options" to be an options object/,
    );
    expect(() => concurrencyLimit(1, { onRejected: 3 as never })).toThrow(
      /expected "onRejected" to be a function, got 3/,
    );
  });

  it('execute rejects (does not throw) on a non-function operation and a bad deadline', async () => {
    const limit = concurrencyLimit(1);
    await expect(limit.execute(null as never)).rejects.toThrow(/expected "operation" to be a function/);
    await expect(limit.execute(() => 1, { deadline: 'soon' as never })).rejects.toThrow(
      /expected "deadline" to be a number/,
    );
    expect(limit.inFlight).toBe(0);
  });
});

describe('concurrencyLimit: admission', () => {
  it('admits max calls and refuses the next at once without running it', async () => {
    const limit = concurrencyLimit(2);
    const gates = [deferred(), deferred()];
    const a = limit.execute(() => gates[0]!.promise);
    const b = limit.execute(() => gates[1]!.promise);
    expect(limit.inFlight).toBe(2);
    const refused = vi.fn(() => 'never');
    const error = await limit.execute(refused).catch((e: unknown) => e);
    expect(refused).not.toHaveBeenCalled();
    expect(error).toBeInstanceOf(ConcurrencyLimitError);
    expect(error).toBeInstanceOf(RejectedError);
    expect(isConcurrencyLimitError(error)).toBe(true);
    expect(isRejectedError(error)).toBe(true);
    expect(isBulkheadFullError(error)).toBe(false);
    expect(error).toMatchObject({ code: 'ERR_CONCURRENCY_LIMIT', kind: 'overloaded', limit: 2 });
    expect((error as ConcurrencyLimitError).retryAfterMs).toBeUndefined();
    expect(limit.inFlight).toBe(2);
    gates[0]!.resolve('a');
    await expect(a).resolves.toBe('a');
    expect(limit.inFlight).toBe(1);
    // the freed slot is available again
    await expect(limit.execute(() => 'c')).resolves.toBe('c');
    gates[1]!.resolve('b');
    await b;
    expect(limit.inFlight).toBe(0);
  });

  it('the refusal message names the limit, "call" for one and "calls" for more', async () => {
    const one = concurrencyLimit(1);
    const gate = deferred();
    const held = one.execute(() => gate.promise);
    await expect(one.execute(() => 'x')).rejects.toThrow(
      /^concurrency limit reached: 1 call already in flight$/,
    );
    gate.resolve(undefined);
    await held;
    const three = concurrencyLimit(3);
    const gates = [deferred(), deferred(), deferred()];
    const running = gates.map((g) => three.execute(() => g.promise));
    await expect(three.execute(() => 'x')).rejects.toThrow(
      /^concurrency limit reached: 3 calls already in flight$/,
    );
    for (const g of gates) g.resolve(undefined);
    await Promise.all(running);
  });

  it('an already-aborted signal rejects with its reason and takes no slot', async () => {
    const limit = concurrencyLimit(1);
    const reason = new Error('gone');
    const op = vi.fn();
    await expect(limit.execute(op, { signal: AbortSignal.abort(reason) })).rejects.toBe(reason);
    expect(op).not.toHaveBeenCalled();
    expect(limit.inFlight).toBe(0);
  });

  it('checks the ceiling before anything else: a refused call never reaches inner policies', async () => {
    const limit = concurrencyLimit(1);
    const retried = vi.fn();
    const inner = retry({ maxAttempts: 3, onRetry: retried });
    const policy = pipeline(limit, inner);
    const gate = deferred();
    const first = policy.execute(() => gate.promise);
    const op = vi.fn();
    await expect(policy.execute(op)).rejects.toBeInstanceOf(ConcurrencyLimitError);
    expect(op).not.toHaveBeenCalled();
    expect(retried).not.toHaveBeenCalled();
    gate.resolve(1);
    await first;
    expect(limit.inFlight).toBe(0);
  });

  it('a refusal inside retry is retried (kind overloaded is transient)', async () => {
    const clock = new FakeClock();
    const limit = concurrencyLimit(1);
    const gate = deferred();
    const holder = limit.execute(() => gate.promise);
    const policy = pipeline(retry({ clock, maxAttempts: 3, backoff: () => 10 }), limit);
    const call = policy.execute(() => 'through');
    await clock.advance(10); // first retry: still full
    gate.resolve('held');
    await holder;
    await clock.advance(10);
    await expect(call).resolves.toBe('through');
  });
});

describe('concurrencyLimit: the slot is released exactly once', () => {
  type Ending = 'resolve' | 'reject' | 'sync-throw' | 'sync-value' | 'abort' | 'bad-thenable';

  /** Starts a call that ends the given way when `end()` is called; returns its result promise. */
  function start(limit: ReturnType<typeof concurrencyLimit>, ending: Ending, viaPipeline: boolean) {
    const controller = new AbortController();
    const gate = deferred();
    const op = (ctx: Context): unknown => {
      switch (ending) {
        case 'resolve':
          return gate.promise.then(() => 'value');
        case 'reject':
          return gate.promise.then(() => {
            throw new Error('failed');
          });
        case 'sync-throw':
          throw new Error('sync');
        case 'sync-value':
          return 'sync';
        case 'abort':
          return honoursSignal(ctx);
        case 'bad-thenable':
          // calls both callbacks, several times
          return {
            // biome-ignore lint/suspicious/noThenProperty: a misbehaving thenable on purpose
            then(onValue: (v: unknown) => void, onError: (e: unknown) => void) {
              gate.promise.then(() => {
                onValue('first');
                onValue('second');
                onError(new Error('third'));
              });
            },
          };
      }
    };
    const target = viaPipeline ? pipeline(limit) : limit;
    const result = target.execute(op, { signal: controller.signal }).then(
      (value) => ({ ok: true, value }),
      (error: unknown) => ({ ok: false, error }),
    );
    const end = () => (ending === 'abort' ? controller.abort(new Error('aborted')) : gate.resolve(undefined));
    return { result, end };
  }

  const endings: Ending[] = ['resolve', 'reject', 'sync-throw', 'sync-value', 'abort', 'bad-thenable'];

  it.each([false, true])('every ending frees its slot once (via pipeline: %s)', async (viaPipeline) => {
    const limit = concurrencyLimit(endings.length);
    const calls = endings.map((ending) => start(limit, ending, viaPipeline));
    // the synchronous endings are already released (or will be on the next tick in a pipeline)
    await tick();
    expect(limit.inFlight).toBe(4);
    for (const call of calls) call.end();
    const results = await Promise.all(calls.map((c) => c.result));
    expect(limit.inFlight).toBe(0);
    expect(results.map((r) => r.ok)).toEqual([true, false, false, true, false, true]);
    expect(results[5]).toEqual({ ok: true, value: 'first' });
    // Exactly once: the full capacity is available again, and not one more.
    const gate = deferred();
    const held = Array.from({ length: endings.length }, () => limit.execute(() => gate.promise));
    expect(limit.inFlight).toBe(endings.length);
    await expect(limit.execute(() => 1)).rejects.toBeInstanceOf(ConcurrencyLimitError);
    gate.resolve(0);
    await Promise.all(held);
    expect(limit.inFlight).toBe(0);
  });

  it('a caller abort does not free the slot before the operation actually ends', async () => {
    const limit = concurrencyLimit(1);
    const controller = new AbortController();
    const gate = deferred();
    const call = limit.execute(() => gate.promise, { signal: controller.signal });
    controller.abort(new Error('stop'));
    await tick();
    expect(limit.inFlight).toBe(1); // the operation ignores its signal and is still running
    await expect(limit.execute(() => 1)).rejects.toBeInstanceOf(ConcurrencyLimitError);
    gate.resolve('late');
    await expect(call).resolves.toBe('late');
    expect(limit.inFlight).toBe(0);
  });

  it('with a timeout outside, the slot is held until the abandoned operation really ends', async () => {
    const clock = new FakeClock();
    const limit = concurrencyLimit(1);
    const gate = deferred();
    const policy = pipeline(timeout(100, { clock, mode: 'aggressive' }), limit);
    const call = policy.execute(() => gate.promise).catch((e: unknown) => e);
    await clock.advance(100);
    expect((await call) as Error).toMatchObject({ code: 'ERR_TIMEOUT' });
    expect(limit.inFlight).toBe(1);
    gate.resolve('done');
    await tick();
    expect(limit.inFlight).toBe(0);
  });
});

describe('concurrencyLimit: events', () => {
  it('onRejected reports each refusal; the disposer unsubscribes; options.onRejected works too', async () => {
    const fromOptions: ConcurrencyLimitRejectedEvent[] = [];
    const limit = concurrencyLimit(1, { onRejected: (e) => fromOptions.push(e) });
    const seen: ConcurrencyLimitRejectedEvent[] = [];
    const dispose = limit.onRejected((e) => seen.push(e));
    const gate = deferred();
    const held = limit.execute(() => gate.promise);
    await limit.execute(() => 1).catch(() => {});
    dispose();
    dispose();
    await limit.execute(() => 1).catch(() => {});
    expect(seen).toEqual([
      { policy: 'concurrency-limit', reason: 'limit-reached', error: expect.any(ConcurrencyLimitError) },
    ]);
    expect(fromOptions).toHaveLength(2);
    gate.resolve(0);
    await held;
  });

  it('a throwing listener never breaks the refusal', async () => {
    const reported: unknown[] = [];
    const previous = setListenerErrorHandler((e) => reported.push(e));
    try {
      const limit = concurrencyLimit(1);
      limit.onRejected(() => {
        throw new Error('listener bug');
      });
      const gate = deferred();
      const held = limit.execute(() => gate.promise);
      await expect(limit.execute(() => 1)).rejects.toBeInstanceOf(ConcurrencyLimitError);
      expect(reported).toHaveLength(1);
      gate.resolve(0);
      await held;
    } finally {
      setListenerErrorHandler(previous);
    }
  });
});

describe('concurrencyLimit: property', () => {
  it('never has more than max in flight; every call is admitted or refused; all slots come back', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.integer({ min: 1, max: 5 }),
        fc.array(
          fc.record({
            startAt: fc.integer({ min: 0, max: 50 }),
            durationMs: fc.integer({ min: 0, max: 30 }),
            ending: fc.constantFrom('resolve', 'reject', 'throw', 'abort'),
            viaPipeline: fc.boolean(),
          }),
          { maxLength: 40 },
        ),
        async (max, calls) => {
          const clock = new FakeClock();
          const limit = concurrencyLimit(max);
          let running = 0;
          let peak = 0;
          let ran = 0;
          const results: Promise<string>[] = [];
          for (const call of calls) {
            clock.setTimer(() => {
              const controller = new AbortController();
              const target = call.viaPipeline ? pipeline(limit) : limit;
              const op = async ({ signal }: Context) => {
                ran++;
                running++;
                peak = Math.max(peak, running);
                expect(limit.inFlight).toBeLessThanOrEqual(max);
                try {
                  if (call.ending === 'throw') throw new Error('throw');
                  await clock.sleep(call.durationMs, signal);
                  if (call.ending === 'reject') throw new Error('reject');
                  return 'ok';
                } finally {
                  running--;
                }
              };
              results.push(
                target.execute(op, { signal: controller.signal }).then(
                  () => 'ok',
                  (e: unknown) => (isConcurrencyLimitError(e) ? 'refused' : 'failed'),
                ),
              );
              if (call.ending === 'abort') clock.setTimer(() => controller.abort(new Error('a')), 1);
            }, call.startAt);
          }
          await clock.advance(200);
          const outcomes = await Promise.all(results);
          expect(outcomes).toHaveLength(calls.length);
          expect(peak).toBeLessThanOrEqual(max);
          expect(ran).toBe(outcomes.filter((o) => o !== 'refused').length);
          expect(limit.inFlight).toBe(0);
          expect(clock.pendingTimers).toBe(0);
        },
      ),
      { numRuns: 150 },
    );
  });
});
