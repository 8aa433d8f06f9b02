import { describe, expect, it } from 'vitest';
import {
  inRange,
  nonNegative,
  oneOf,
  optionKeys,
  optionsObject,
  positive,
  positiveInteger,
  refuseUnknownKeys,
  show,
} from './validate.js';

describe('validate', () => {
  it('names the option and shows the bad value', () => {
    expect(() => positiveInteger('maxAttempts', -1)).toThrow(
      new TypeError('expected "maxAttempts" to be a positive integer, got -1'),
    );
    expect(() => positiveInteger('maxAttempts', 1.5)).toThrow(/got 1.5/);
    expect(() => positiveInteger('maxAttempts', Infinity)).toThrow(/got Infinity/);
    expect(positiveInteger('maxAttempts', Infinity, true)).toBe(Infinity);
    expect(() => nonNegative('ms', Number.NaN)).toThrow(/"ms".*NaN/);
    expect(() => nonNegative('ms', Infinity)).toThrow(/finite/);
    expect(nonNegative('ms', Infinity, true)).toBe(Infinity);
    expect(() => positive('ms', 0)).toThrow(/"ms".*got 0/);
    expect(() => positive('ms', '5')).toThrow(/got "5"/);
    expect(() => inRange('jitter', 2, 0, 1)).toThrow(/from 0 to 1, got 2/);
    expect(() => oneOf('mode', 'x', ['a', 'b'])).toThrow(/"a", "b", got "x"/);
    expect(() => optionsObject('opts', 5 as never)).toThrow(/"opts".*got 5/);
    expect(optionsObject('opts', undefined)).toEqual({});
  });

  it('shows values of every type', () => {
    expect(show(null)).toBe('null');
    expect(show(undefined)).toBe('undefined');
    expect(show(() => 1)).toBe('a function');
    expect(show([1])).toBe('an array');
    expect(show({})).toBe('an object');
    expect(show(10n)).toBe('10n');
  });
});

describe('unknown option keys', () => {
  interface Options {
    readonly maxAttempts?: number | undefined;
    readonly backoff?: unknown;
    readonly timeoutMs?: number | undefined;
  }
  const known = optionKeys<Options>({ maxAttempts: true, backoff: true, timeoutMs: true });

  it('refuses a key outside the known set, naming it and the nearest known name', () => {
    expect(() => refuseUnknownKeys('retry options', { maxAttempt: 5 }, known)).toThrow(
      new TypeError('unknown option "maxAttempt" in retry options; did you mean "maxAttempts"?'),
    );
    expect(() => optionsObject('retry options', { TimeoutMS: 1 } as Options, known)).toThrow(
      /unknown option "TimeoutMS" in retry options; did you mean "timeoutMs"\?/,
    );
    expect(() => refuseUnknownKeys('retry options', { colour: 'red' }, known)).toThrow(
      new TypeError('unknown option "colour" in retry options'),
    );
  });

  it('accepts known keys, explicit undefined values and no options at all', () => {
    expect(() =>
      refuseUnknownKeys('retry options', { maxAttempts: 1, backoff: undefined }, known),
    ).not.toThrow();
    expect(() => refuseUnknownKeys('retry options', undefined, known)).not.toThrow();
    expect(optionsObject('retry options', undefined, known)).toEqual({});
    expect([...known].sort()).toEqual(['backoff', 'maxAttempts', 'timeoutMs']);
  });

  it('ties the known set to the options type at compile time', () => {
    // @ts-expect-error a key of the type is missing from the list
    optionKeys<Options>({ maxAttempts: true, backoff: true });
    // @ts-expect-error a key the type does not have
    optionKeys<Options>({ maxAttempts: true, backoff: true, timeoutMs: true, extra: true });
  });
});
