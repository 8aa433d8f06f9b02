import { describe, expect, it } from 'vitest';
import { systemClock } from '../core/clock.js';
import { FakeClock } from '../testing/fake-clock.js';
import { optimisticUpdate } from './optimistic-update.js';
import {
  DEFAULT_BASE_MS,
  DEFAULT_MAX_ATTEMPTS,
  DEFAULT_MAX_MS,
  type OptimisticUpdateOptions,
  readOptimisticCallOptions,
  readOptimisticUpdateOptions,
} from './options.js';

type Options = OptimisticUpdateOptions<string, number, number>;
const base: Options = {
  load: () => ({ value: 1, version: 1 }),
  save: () => true,
  mutate: (n) => n + 1,
};
const build = (options: unknown) => () => optimisticUpdate(options as Options);

describe('optimisticUpdate options', () => {
  it('fills in the defaults: 5 attempts, a jittered 10–200 ms backoff, its name, the system clock', () => {
    const o = readOptimisticUpdateOptions({ ...base, random: () => 0.5 });
    expect([DEFAULT_MAX_ATTEMPTS, DEFAULT_BASE_MS, DEFAULT_MAX_MS]).toEqual([5, 10, 200]);
    expect(o.maxAttempts).toBe(5);
    expect(o.name).toBe('optimisticUpdate');
    expect(o.clock).toBe(systemClock);
    // random 0.5 is no jitter: the plain doubling, capped at 200
    expect([1, 2, 3, 4, 5, 6].map(o.backoff)).toEqual([10, 20, 40, 80, 160, 200]);
    expect(o.onConflict).toBeUndefined();
    expect(o.onGiveUp).toBeUndefined();
  });

  it('keeps a backoff, clock and name of yours', () => {
    const backoff = (n: number) => n;
    const clock = new FakeClock();
    const o = readOptimisticUpdateOptions({ ...base, backoff, clock, name: 'accounts', maxAttempts: 21 });
    expect(o).toMatchObject({ backoff, clock, name: 'accounts', maxAttempts: 21 });
  });

  it.each([
    [{ ...base, load: undefined }, 'expected "load" to be a function, got undefined'],
    [{ save: base.save, mutate: base.mutate }, 'expected "load" to be a function, got undefined'],
    [{ ...base, save: 'UPDATE' }, 'expected "save" to be a function, got "UPDATE"'],
    [{ ...base, mutate: null }, 'expected "mutate" to be a function, got null'],
    [{ ...base, maxAttempts: 0 }, 'expected "maxAttempts" to be a positive integer, got 0'],
    [{ ...base, maxAttempts: 2.5 }, 'expected "maxAttempts" to be a positive integer, got 2.5'],
    [{ ...base, maxAttempts: Infinity }, 'expected "maxAttempts" to be a positive integer, got Infinity'],
    [{ ...base, backoff: 100 }, 'expected "backoff" to be a function, got 100'],
    [{ ...base, name: '' }, 'expected "name" to be a non-empty string, got ""'],
    [{ ...base, clock: {} }, '"clock"'],
    [{ ...base, random: 0.5 }, 'expected "random" to be a function, got 0.5'],
    [{ ...base, onConflict: true }, 'expected "onConflict" to be a function, got true'],
    [
      { ...base, maxAttempt: 3 },
      'unknown option "maxAttempt" in optimisticUpdate options; did you mean "maxAttempts"?',
    ],
    [42, 'expected "optimisticUpdate options" to be an options object, got 42'],
    [undefined, 'expected "load" to be a function, got undefined'],
  ])('refuses %o at construction', (options, message) => {
    expect(build(options)).toThrow(TypeError);
    expect(build(options)).toThrow(message);
  });

  it('an option set to undefined counts as absent', () => {
    expect(
      readOptimisticUpdateOptions({ ...base, maxAttempts: undefined, backoff: undefined }).maxAttempts,
    ).toBe(5);
  });

  it('reads a call’s signal, and refuses a bad one or an unknown key', () => {
    const signal = new AbortController().signal;
    expect(readOptimisticCallOptions({ signal }).signal).toBe(signal);
    expect(readOptimisticCallOptions(undefined).signal).toBeUndefined();
    expect(() => readOptimisticCallOptions({ signal: 'abort' as never })).toThrow(
      'expected "signal" to be an AbortSignal, got "abort"',
    );
    expect(() => readOptimisticCallOptions({ signl: signal } as never)).toThrow(
      'unknown option "signl" in update options; did you mean "signal"?',
    );
  });
});
