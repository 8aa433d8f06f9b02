import { describe, expect, it } from 'vitest';
import { retryBudget } from '../retry/budget.js';
import { FakeClock } from '../testing/fake-clock.js';
import { hedge } from './hedge.js';

const fn = () => 'x';

describe('hedge options', () => {
  it.each([
    ['null', null, /expected "hedge options" to be an options object, got null/],
    ['an array', [], /expected "hedge options" to be an options object, got an array/],
    ['a number', 5, /expected "hedge options" to be an options object, got 5/],
  ])('rejects %s as the options object', (_name, options, message) => {
    expect(() => hedge(options as never)).toThrow(TypeError);
    expect(() => hedge(options as never)).toThrow(message);
  });

  it.each([
    [0, /expected "attempts" to be a positive integer, got 0/],
    [-1, /expected "attempts" to be a positive integer, got -1/],
    [1.5, /expected "attempts" to be a positive integer, got 1.5/],
    [Number.NaN, /expected "attempts" to be a positive integer, got NaN/],
    [Infinity, /expected "attempts" to be a positive integer, got Infinity/],
    ['2', /expected "attempts" to be a positive integer, got "2"/],
  ])('rejects attempts %s', (attempts, message) => {
    expect(() => hedge({ attempts: attempts as number })).toThrow(TypeError);
    expect(() => hedge({ attempts: attempts as number })).toThrow(message);
  });

  it.each([
    [-1, /expected "delayMs" to be a non-negative finite number, got -1/],
    [Number.NaN, /expected "delayMs" to be a non-negative finite number, got NaN/],
    [Infinity, /expected "delayMs" to be a non-negative finite number, got Infinity/],
    ['10', /expected "delayMs" to be a non-negative finite number, got "10"/],
  ])('rejects delayMs %s', (delayMs, message) => {
    expect(() => hedge({ delayMs: delayMs as number })).toThrow(TypeError);
    expect(() => hedge({ delayMs: delayMs as number })).toThrow(message);
  });

  it.each([
    ['an empty array', [], /expected "variants" to be a non-empty array of functions, got an array/],
    ['a function', fn, /expected "variants" to be a non-empty array of functions, got a function/],
    ['a string', 'ab', /expected "variants" to be a non-empty array of functions, got "ab"/],
    ['a non-function entry', [fn, 2], /expected "variants\[1\]" to be a function, got 2/],
    ['a hole', [fn, undefined], /expected "variants\[1\]" to be a function, got undefined/],
  ])('rejects variants: %s', (_name, variants, message) => {
    expect(() => hedge({ variants: variants as never })).toThrow(TypeError);
    expect(() => hedge({ variants: variants as never })).toThrow(message);
  });

  it('rejects attempts that disagree with the number of variants', () => {
    expect(() => hedge({ attempts: 2, variants: [fn, fn, fn] })).toThrow(
      /expected "attempts" to equal the number of variants \(3\), got 2/,
    );
    expect(() => hedge({ attempts: 4, variants: [fn, fn, fn] })).toThrow(TypeError);
    expect(() => hedge({ attempts: 0, variants: [fn] })).toThrow(/"attempts" to be a positive integer/);
    expect(() => hedge({ attempts: 3, variants: [fn, fn, fn] })).not.toThrow();
  });

  it('rejects a budget that is not a RetryBudget', () => {
    expect(() => hedge({ budget: { tryWithdraw: () => true } as never })).toThrow(
      /expected "budget" to be a RetryBudget/,
    );
    expect(() => hedge({ budget: retryBudget({ ratio: 0.1, minPerSecond: 1 }) })).not.toThrow();
  });

  it.each([
    ['clock', { clock: {} }, /expected "clock" to be a Clock/],
    ['clock', { clock: null }, /expected "clock" to be a Clock/],
    ['isFatal', { isFatal: 5 }, /expected "isFatal" to be a function, got 5/],
    ['onHedge', { onHedge: 'log' }, /expected "onHedge" to be a function, got "log"/],
  ])('rejects a bad %s', (_name, options, message) => {
    expect(() => hedge(options as never)).toThrow(TypeError);
    expect(() => hedge(options as never)).toThrow(message);
  });

  it('rejects a non-function listener passed to onHedge()', () => {
    expect(() => hedge().onHedge(42 as never)).toThrow(TypeError);
  });

  it('accepts no options, delayMs 0 and a FakeClock', () => {
    expect(() => hedge()).not.toThrow();
    expect(() => hedge({})).not.toThrow();
    expect(() => hedge({ attempts: 1, delayMs: 0, clock: new FakeClock() })).not.toThrow();
  });

  it('execute rejects a non-function operation and a NaN deadline with a TypeError', async () => {
    const policy = hedge({ clock: new FakeClock() });
    await expect(policy.execute(5 as never)).rejects.toThrow(/expected "operation" to be a function/);
    await expect(policy.execute(fn, { deadline: Number.NaN })).rejects.toThrow(/expected "deadline"/);
  });
});
