import { describe, expect, it } from 'vitest';
import {
  inRange,
  isClock,
  isFunction,
  nonNegative,
  oneOf,
  optionKeys,
  optionsObject,
  positive,
  positiveInteger,
  refuseUnknownKeys,
  show,
  storeKey,
  unknownKeyError,
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

describe('number checks', () => {
  it('nonNegative accepts zero and finite numbers, refusing the rest with the house message', () => {
    expect(nonNegative('delayMs', 0)).toBe(0);
    expect(nonNegative('delayMs', 2.5)).toBe(2.5);
    expect(() => nonNegative('delayMs', -1)).toThrow(
      new TypeError('expected "delayMs" to be a non-negative finite number, got -1'),
    );
    expect(() => nonNegative('delayMs', '5')).toThrow(
      new TypeError('expected "delayMs" to be a non-negative finite number, got "5"'),
    );
    expect(() => nonNegative('delayMs', Infinity)).toThrow(
      new TypeError('expected "delayMs" to be a non-negative finite number, got Infinity'),
    );
  });

  it('nonNegative with allowInfinity accepts Infinity and says so in its message', () => {
    expect(nonNegative('waitMs', Infinity, true)).toBe(Infinity);
    expect(() => nonNegative('waitMs', -1, true)).toThrow(
      new TypeError('expected "waitMs" to be a non-negative number, got -1'),
    );
    expect(() => nonNegative('waitMs', Number.NaN, true)).toThrow(
      new TypeError('expected "waitMs" to be a non-negative number, got NaN'),
    );
  });

  it('positive accepts numbers above zero and refuses zero, negatives, NaN, non-numbers and Infinity', () => {
    expect(positive('rate', 5)).toBe(5);
    expect(positive('rate', 0.001)).toBe(0.001);
    for (const [bad, shown] of [
      [0, '0'],
      [-1, '-1'],
      [Number.NaN, 'NaN'],
      ['5', '"5"'],
      [Infinity, 'Infinity'],
    ] as const) {
      expect(() => positive('rate', bad)).toThrow(
        new TypeError(`expected "rate" to be a positive finite number, got ${shown}`),
      );
    }
  });

  it('positive with allowInfinity accepts Infinity and says so in its message', () => {
    expect(positive('rate', Infinity, true)).toBe(Infinity);
    expect(positive('rate', 3, true)).toBe(3);
    expect(() => positive('rate', 0, true)).toThrow(
      new TypeError('expected "rate" to be a positive number, got 0'),
    );
  });

  it('positiveInteger accepts integers from 1, and Infinity only when allowed', () => {
    expect(positiveInteger('max', 1)).toBe(1);
    expect(positiveInteger('max', 7, true)).toBe(7);
    for (const bad of [0, -3, 1.5, Number.NaN, '1', Infinity]) {
      expect(() => positiveInteger('max', bad)).toThrow(/^expected "max" to be a positive integer, got /);
    }
    expect(() => positiveInteger('max', 1.5, true)).toThrow(
      new TypeError('expected "max" to be a positive integer or Infinity, got 1.5'),
    );
    expect(() => positiveInteger('max', -Infinity, true)).toThrow(
      new TypeError('expected "max" to be a positive integer or Infinity, got -Infinity'),
    );
  });

  it('inRange includes both bounds and refuses what lies outside or is not a number', () => {
    expect(inRange('jitter', 0, 0, 1)).toBe(0);
    expect(inRange('jitter', 1, 0, 1)).toBe(1);
    expect(inRange('jitter', 0.5, 0, 1)).toBe(0.5);
    for (const [bad, shown] of [
      [-0.1, '-0.1'],
      [1.1, '1.1'],
      [Number.NaN, 'NaN'],
      ['0.5', '"0.5"'],
    ] as const) {
      expect(() => inRange('jitter', bad, 0, 1)).toThrow(
        new TypeError(`expected "jitter" to be a number from 0 to 1, got ${shown}`),
      );
    }
  });
});

describe('other checks', () => {
  it('isFunction returns the function and refuses anything else', () => {
    const f = () => 1;
    expect(isFunction('map', f)).toBe(f);
    expect(() => isFunction('map', 1)).toThrow(new TypeError('expected "map" to be a function, got 1'));
  });

  it('oneOf returns an allowed value and lists every allowed one when refusing', () => {
    expect(oneOf('mode', 'b', ['a', 'b'])).toBe('b');
    expect(() => oneOf('mode', 'x', ['a', 'b', 'c'])).toThrow(
      new TypeError('expected "mode" to be one of "a", "b", "c", got "x"'),
    );
  });

  it('optionsObject returns the object given and refuses null, arrays and primitives', () => {
    const given = { maxAttempts: 2 };
    expect(optionsObject('retry options', given)).toBe(given);
    expect(optionsObject('retry options', { anything: 1 } as object)).toEqual({ anything: 1 });
    for (const [bad, shown] of [
      [null, 'null'],
      [[1], 'an array'],
      ['x', '"x"'],
      [() => ({}), 'a function'],
    ] as const) {
      expect(() => optionsObject('retry options', bad as never)).toThrow(
        new TypeError(`expected "retry options" to be an options object, got ${shown}`),
      );
    }
  });

  it('isClock accepts an object with now, sleep, setTimer and clearTimer and names what is missing', () => {
    const full = { now() {}, sleep() {}, setTimer() {}, clearTimer() {} };
    expect(isClock('clock', full)).toBe(full);
    const message = (shown: string) =>
      new TypeError(`expected "clock" to be a Clock (now, sleep, setTimer, clearTimer), got ${shown}`);
    expect(() => isClock('clock', null)).toThrow(message('null'));
    expect(() => isClock('clock', 5)).toThrow(message('5'));
    expect(() =>
      isClock(
        'clock',
        Object.assign(() => 0, full),
      ),
    ).toThrow(message('a function'));
    for (const missing of ['now', 'sleep', 'setTimer', 'clearTimer'] as const) {
      const partial: Record<string, unknown> = { ...full };
      delete partial[missing];
      expect(() => isClock('clock', partial)).toThrow(message('an object'));
      expect(() => isClock('clock', { ...full, [missing]: 1 })).toThrow(message('an object'));
    }
  });

  it('storeKey accepts a non-empty well-formed string and refuses empty, non-string and lone surrogates', () => {
    expect(storeKey('key', 'user:1')).toBe('user:1');
    expect(storeKey('key', 'a\u{1F600}')).toBe('a\u{1F600}');
    expect(() => storeKey('key', '')).toThrow(
      new TypeError('expected "key" to be a non-empty string, got ""'),
    );
    expect(() => storeKey('key', 5)).toThrow(new TypeError('expected "key" to be a non-empty string, got 5'));
    expect(() => storeKey('key', '\uD800')).toThrow(
      new TypeError(
        'expected "key" to be well-formed UTF-16 (no lone surrogate: Redis would store it as U+FFFD), got "\\ud800"',
      ),
    );
  });
});

describe('suggesting the nearest known option', () => {
  const suggestion = (key: string, known: string[]) => {
    const match = /; did you mean "(.*)"\?$/.exec(unknownKeyError('options', key, known).message);
    return match === null ? undefined : match[1];
  };

  it('names the key and the options in the message', () => {
    expect(unknownKeyError('pool options', 'sise', ['size']).message).toBe(
      'unknown option "sise" in pool options; did you mean "size"?',
    );
    expect(unknownKeyError('pool options', 'colour', ['size']).message).toBe(
      'unknown option "colour" in pool options',
    );
  });

  it('refuses the first unknown own key and ignores inherited ones', () => {
    const known = new Set(['size']);
    expect(() => refuseUnknownKeys('pool options', { size: 1, first: 1, second: 2 }, known)).toThrow(
      new TypeError('unknown option "first" in pool options'),
    );
    expect(() => refuseUnknownKeys('pool options', Object.create({ sise: 1 }), known)).not.toThrow();
  });

  it('allows one edit in keys shorter than six letters, one per three letters beyond', () => {
    expect(suggestion('xy', ['xz'])).toBe('xz');
    expect(suggestion('limt', ['limit'])).toBe('limit');
    expect(suggestion('abcde', ['abxye'])).toBeUndefined();
    expect(suggestion('abcxyf', ['abcdef'])).toBe('abcdef');
  });

  it('counts a swap of two adjacent letters as one edit, and only a true swap', () => {
    expect(suggestion('mdoe', ['mode'])).toBe('mode');
    expect(suggestion('ax', ['ya'])).toBeUndefined();
    expect(suggestion('xa', ['ay'])).toBeUndefined();
  });

  it('suggests a name that one of at least three letters starts, or that starts the key', () => {
    expect(suggestion('delay', ['delayMs'])).toBe('delayMs');
    expect(suggestion('del', ['delayMs'])).toBe('delayMs');
    expect(suggestion('de', ['delayMs'])).toBeUndefined();
    expect(suggestion('limitPerSecond', ['limit'])).toBe('limit');
    expect(suggestion('layMs', ['delayMs'])).toBeUndefined();
    expect(suggestion('perSecondLimit', ['limit'])).toBeUndefined();
  });

  it('picks the nearest name, the first one listed on a tie', () => {
    expect(suggestion('maxAtempt', ['maxAttempts', 'maxAttempt'])).toBe('maxAttempt');
    expect(suggestion('maxAtempt', ['maxAttempt', 'maxAttempts'])).toBe('maxAttempt');
    expect(suggestion('mode', ['node', 'code'])).toBe('node');
    expect(suggestion('delay', ['delayMs', 'relay'])).toBe('relay');
  });
});
