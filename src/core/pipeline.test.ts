import { describe, expect, it, vi } from 'vitest';
import { retry } from '../retry/retry.js';
import { FakeClock } from '../testing/fake-clock.js';
import { timeout } from '../timeout/timeout.js';
import type { Context } from './context.js';
import { ResilienceError, TimeoutError } from './errors.js';
import { pipeline } from './pipeline.js';
import type { Policy } from './policy.js';

const transient = () => new ResilienceError('flaky', { code: 'E_FLAKY', kind: 'transient' });

describe('execute (the outer edge)', () => {
  it('resolves sync and async values and rejects sync throws and rejections', async () => {
    const p = pipeline();
    await expect(p.execute(() => 1)).resolves.toBe(1);
    await expect(p.execute(async () => 2)).resolves.toBe(2);
    const error = new Error('sync');
    await expect(
      p.execute(() => {
        throw error;
      }),
    ).rejects.toBe(error);
    await expect(p.execute(() => Promise.reject(error))).rejects.toBe(error);
  });

  it('rejects with the reason of an already-aborted signal without calling the operation', async () => {
    const op = vi.fn(() => 1);
    const reason = new Error('caller left');
    await expect(pipeline(retry()).execute(op, { signal: AbortSignal.abort(reason) })).rejects.toBe(reason);
    expect(op).not.toHaveBeenCalled();
  });

  it('rejects bad arguments with a TypeError', async () => {
    await expect(pipeline().execute(42 as never)).rejects.toThrow(/"operation".*42/);
    await expect(pipeline().execute(() => 1, { deadline: 'soon' as never })).rejects.toThrow(/"deadline"/);
  });

  it('gives the operation attempt 1, the caller signal and deadline', async () => {
    const controller = new AbortController();
    let seen: Context | undefined;
    await pipeline().execute(
      (ctx) => {
        seen = ctx;
      },
      { signal: controller.signal, deadline: 123 },
    );
    expect(seen?.attempt).toBe(1);
    expect(seen?.signal).toBe(controller.signal);
    expect(seen?.deadline).toBe(123);
  });
});

describe('pipeline', () => {
  it('throws a TypeError naming the argument that is not a policy', () => {
    expect(() => pipeline(retry(), {} as Policy)).toThrow(/argument 2.*object/);
    expect(() => pipeline(null as never)).toThrow(
      new TypeError('expected pipeline argument 1 to be a policy, got null'),
    );
    expect(() => pipeline(retry(), retry(), { execute: 'run' } as never)).toThrow(
      'expected pipeline argument 3 to be a policy, got an object',
    );
  });

  it('first = outermost: pipeline(timeout, retry) bounds all attempts together', async () => {
    const clock = new FakeClock();
    let calls = 0;
    const p = pipeline(timeout(250, { clock }), retry({ clock, maxAttempts: 10, backoff: () => 100 }));
    const result = p.execute(() => {
      calls++;
      throw transient();
    });
    const settled = result.catch((e: unknown) => e);
    await clock.advance(1_000);
    const error = await settled;
    // attempts at 0, 100, 200; the retry sees the 250 ms deadline and gives up before sleeping past it
    expect(calls).toBe(3);
    expect((error as ResilienceError).code).toBe('ERR_RETRIES_EXHAUSTED');
  });

  it('pipeline(retry, timeout) gives each attempt its own time limit', async () => {
    const clock = new FakeClock();
    const starts: number[] = [];
    const p = pipeline(retry({ clock, maxAttempts: 3, backoff: () => 10 }), timeout(100, { clock }));
    const result = p
      .execute(
        ({ signal }) =>
          new Promise((_, reject) => {
            starts.push(clock.now());
            signal.addEventListener('abort', () => reject(signal.reason));
          }),
      )
      .catch((e: unknown) => e);
    await clock.advance(1_000);
    const error = (await result) as ResilienceError;
    expect(starts).toEqual([0, 110, 220]);
    expect(error.code).toBe('ERR_RETRIES_EXHAUSTED');
    expect(error.cause).toBeInstanceOf(TimeoutError);
    expect(error.kind).toBe('timeout');
  });

  it('an inner policy sees the outer deadline and signal', async () => {
    const clock = new FakeClock(1_000);
    let seen: Context | undefined;
    const controller = new AbortController();
    const p = pipeline(timeout(500, { clock }), retry({ clock }));
    await p.execute(
      (ctx) => {
        seen = ctx;
        return 'ok';
      },
      { signal: controller.signal },
    );
    expect(seen?.deadline).toBe(1_500);
    expect(seen?.signal.aborted).toBe(false);
    // the operation's signal follows the caller's
    const pending = p.execute(
      ({ signal }) =>
        new Promise((_, reject) => {
          signal.addEventListener('abort', () => reject(signal.reason));
        }),
      { signal: controller.signal },
    );
    const reason = new Error('caller abort');
    controller.abort(reason);
    await expect(pending).rejects.toBe(reason);
  });

  it('composes a foreign policy that only has execute()', async () => {
    const seen: string[] = [];
    const foreign: Policy = {
      async execute(operation, options) {
        seen.push('before');
        try {
          return await operation({ signal: options?.signal ?? new AbortController().signal, attempt: 1 });
        } finally {
          seen.push('after');
        }
      },
    };
    const clock = new FakeClock();
    let calls = 0;
    const p = pipeline(foreign, retry({ clock, backoff: () => 0 }));
    await expect(
      p.execute(() => {
        calls++;
        if (calls < 2) throw transient();
        return 'done';
      }),
    ).resolves.toBe('done');
    expect(seen).toEqual(['before', 'after']);
    const error = new Error('x');
    await expect(
      pipeline(foreign).execute(() => {
        throw error;
      }),
    ).rejects.toBe(error);
  });
});
