/**
 * The outer edge every policy shares (`execute`): its argument checks reject (never throw) with a
 * `TypeError` that says what was wrong, values of any kind come back as they were, and a foreign
 * policy in a pipeline is called through its own `execute` with the caller's signal and deadline.
 */
import { describe, expect, it, vi } from 'vitest';
import { retry } from '../retry/retry.js';
import { FakeClock } from '../testing/fake-clock.js';
import { timeout } from '../timeout/timeout.js';
import { pipeline } from './pipeline.js';
import { composable, type ExecuteOptions, type Policy } from './policy.js';

const edges: readonly (readonly [string, () => Policy<unknown>])[] = [
  ['a built-in policy (retry)', () => retry()],
  [
    'a built-in policy, observed',
    () => {
      const policy = retry();
      policy.onSuccess(() => {});
      return policy;
    },
  ],
  ['a pipeline', () => pipeline()],
  ['a pipeline of policies', () => pipeline(retry(), timeout(1_000))],
];

describe.each(edges)('execute on %s', (_, make) => {
  /** Calls `execute` and checks it returned a promise rather than throwing. */
  function call(operation: unknown, options?: unknown): Promise<unknown> {
    let result: Promise<unknown> | undefined;
    expect(() => {
      result = make().execute(operation as never, options as ExecuteOptions);
    }).not.toThrow();
    return result!;
  }

  it('rejects options that are not an object, or null, with a TypeError showing them', async () => {
    const op = vi.fn();
    await expect(call(op, 5)).rejects.toThrow(
      new TypeError('expected "options" to be an options object, got 5'),
    );
    await expect(call(op, null)).rejects.toThrow(
      new TypeError('expected "options" to be an options object, got null'),
    );
    await expect(call(op, 'fast')).rejects.toThrow('got "fast"');
    expect(op).not.toHaveBeenCalled();
  });

  it('rejects a deadline that is not a number, or NaN, with a TypeError showing it', async () => {
    const op = vi.fn();
    await expect(call(op, { deadline: Number.NaN })).rejects.toThrow(
      new TypeError('expected "deadline" to be a number, got NaN'),
    );
    await expect(call(op, { deadline: '10s' })).rejects.toThrow(
      new TypeError('expected "deadline" to be a number, got "10s"'),
    );
    expect(op).not.toHaveBeenCalled();
  });

  it('rejects an operation that is not a function with a TypeError showing it', async () => {
    await expect(call(null)).rejects.toThrow(
      new TypeError('expected "operation" to be a function, got null'),
    );
    await expect(call({ run() {} })).rejects.toThrow('got an object');
  });

  it('takes empty options as no options', async () => {
    await expect(call(() => 'value', {})).resolves.toBe('value');
    await expect(call(() => 'value', { signal: undefined, deadline: undefined })).resolves.toBe('value');
  });

  it('gives back null, undefined and other non-promise values as they are', async () => {
    await expect(call(() => null)).resolves.toBeNull();
    await expect(call(async () => null)).resolves.toBeNull();
    await expect(call(() => undefined)).resolves.toBeUndefined();
    await expect(call(() => 0)).resolves.toBe(0);
  });
});

describe('composable: a policy of another library in a pipeline', () => {
  it("is called through its own execute with the caller's signal and deadline", async () => {
    const seen: (ExecuteOptions | undefined)[] = [];
    const foreign: Policy = {
      execute: (operation, options) => {
        seen.push(options);
        return Promise.resolve(operation({ signal: options!.signal!, attempt: 1 }));
      },
    };
    const controller = new AbortController();
    await expect(
      pipeline(foreign).execute(() => 'value', { signal: controller.signal, deadline: 5_000 }),
    ).resolves.toBe('value');
    expect(seen).toEqual([{ signal: controller.signal, deadline: 5_000 }]);
  });

  it('sees the deadline an outer timeout set', async () => {
    const clock = new FakeClock(1_000);
    const deadlines: unknown[] = [];
    const foreign: Policy = {
      execute: (operation, options) => {
        deadlines.push(options?.deadline);
        return Promise.resolve(operation({ signal: options!.signal!, attempt: 1 }));
      },
    };
    await pipeline(timeout(200, { clock }), foreign).execute(() => 'value');
    expect(deadlines).toEqual([1_200]);
  });

  it('an execute that throws synchronously fails the call with its error, as a rejection', async () => {
    const broken = new Error('foreign bug');
    const foreign: Policy = {
      execute: () => {
        throw broken;
      },
    };
    let result: Promise<unknown> | undefined;
    expect(() => {
      result = pipeline(foreign).execute(() => 'value');
    }).not.toThrow();
    await expect(result).rejects.toBe(broken);
  });

  it('returns a built-in policy as it is', () => {
    const policy = retry();
    expect(composable(policy)).toBe(policy);
  });
});
