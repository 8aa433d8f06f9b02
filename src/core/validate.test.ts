import { describe, expect, it } from 'vitest';
import { inRange, nonNegative, oneOf, optionsObject, positive, positiveInteger, show } from './validate.js';

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
