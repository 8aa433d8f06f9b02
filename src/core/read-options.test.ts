import { describe, expect, it } from 'vitest';
import { FakeClock } from '../testing/fake-clock.js';
import { systemClock } from './clock.js';
import {
  atLeast,
  boolean,
  type Check,
  clockField,
  fraction,
  func,
  instanceOf,
  listenerField,
  nested,
  nonEmptyString,
  nonNegativeInt,
  nonNegativeNumber,
  nonNegativeOrInfinity,
  oneOf,
  optional,
  policy,
  positiveFraction,
  positiveInt,
  positiveIntOrInfinity,
  positiveNumber,
  positiveOrInfinity,
  readOptions,
  required,
  type Schema,
  signal,
  storeOf,
  withDefault,
} from './read-options.js';

interface Inner {
  readonly threshold: number;
  readonly windowMs?: number | undefined;
}

class Token {}

interface Options {
  readonly max: number;
  readonly maxAttempts?: number | undefined;
  readonly delayMs?: number | undefined;
  readonly waitMs?: number | undefined;
  readonly ratio?: number | undefined;
  readonly mode?: 'a' | 'b' | undefined;
  readonly map?: ((x: number) => number) | undefined;
  readonly enabled?: boolean | undefined;
  readonly signal?: AbortSignal | undefined;
  readonly token?: Token | undefined;
  readonly inner?: Inner | undefined;
  readonly clock?: FakeClock | undefined;
  readonly onEvent?: ((event: { n: number }) => void) | undefined;
}

const schema = {
  max: required(positiveInt),
  maxAttempts: withDefault(3, positiveIntOrInfinity),
  delayMs: withDefault(0, nonNegativeNumber),
  waitMs: withDefault(Infinity, nonNegativeOrInfinity),
  ratio: optional(fraction),
  mode: withDefault<'a' | 'b'>('a', oneOf(['a', 'b'])),
  map: optional(func<(x: number) => number>()),
  enabled: withDefault(true, boolean),
  signal: optional(signal),
  token: optional(instanceOf(Token, 'a Token')),
  inner: optional(nested({ threshold: required(fraction), windowMs: withDefault(10, nonNegativeNumber) })),
  clock: clockField,
  onEvent: listenerField<{ n: number }>(),
} satisfies Schema<Options>;

const read = (options: unknown) => readOptions('test options', options as Options, schema);

describe('readOptions', () => {
  it('fills in defaults and keeps given values', () => {
    const clock = new FakeClock();
    const token = new Token();
    const signalValue = new AbortController().signal;
    const o = read({ max: 2, ratio: 0.5, clock, token, signal: signalValue, inner: { threshold: 1 } });
    expect(o).toEqual({
      max: 2,
      maxAttempts: 3,
      delayMs: 0,
      waitMs: Infinity,
      ratio: 0.5,
      mode: 'a',
      map: undefined,
      enabled: true,
      signal: signalValue,
      token,
      inner: { threshold: 1, windowMs: 10 },
      clock,
      onEvent: undefined,
    });
    expect(read({ max: 1 }).clock).toBe(systemClock);
  });

  it('treats an option set to undefined as absent', () => {
    expect(read({ max: 1, maxAttempts: undefined, clock: undefined }).maxAttempts).toBe(3);
  });

  it('names the option and shows the bad value, in the house form', () => {
    expect(() => read({ max: -1 })).toThrow(new TypeError('expected "max" to be a positive integer, got -1'));
    expect(() => read({})).toThrow(new TypeError('expected "max" to be a positive integer, got undefined'));
    expect(() => read({ max: 1, maxAttempts: 0 })).toThrow(
      new TypeError('expected "maxAttempts" to be a positive integer or Infinity, got 0'),
    );
    expect(() => read({ max: 1, delayMs: Infinity })).toThrow(/"delayMs" to be a non-negative finite number/);
    expect(() => read({ max: 1, waitMs: -1 })).toThrow(/"waitMs" to be a non-negative number, got -1/);
    expect(() => read({ max: 1, ratio: 2 })).toThrow(/"ratio" to be a number from 0 to 1, got 2/);
    expect(() => read({ max: 1, mode: 'c' })).toThrow(/"mode" to be one of "a", "b", got "c"/);
    expect(() => read({ max: 1, map: 1 })).toThrow(/"map" to be a function, got 1/);
    expect(() => read({ max: 1, enabled: 'yes' })).toThrow(/"enabled" to be a boolean, got "yes"/);
    expect(() => read({ max: 1, signal: { aborted: false } })).toThrow(
      new TypeError('expected "signal" to be an AbortSignal, got an object'),
    );
    expect(() => read({ max: 1, token: {} })).toThrow(/"token" to be a Token, got an object/);
    expect(() => read({ max: 1, clock: { now() {} } })).toThrow(/"clock" to be a Clock/);
    expect(() => read({ max: 1, onEvent: 'x' })).toThrow(/"onEvent" to be a function, got "x"/);
  });

  it('names nested fields by their path and refuses unknown nested keys', () => {
    expect(() => read({ max: 1, inner: { threshold: 3 } })).toThrow(
      /"inner.threshold" to be a number from 0 to 1/,
    );
    expect(() => read({ max: 1, inner: 5 })).toThrow(/"inner" to be an options object, got 5/);
    expect(() => read({ max: 1, inner: { threshold: 1, windowMS: 1 } })).toThrow(
      new TypeError('unknown option "windowMS" in inner; did you mean "windowMs"?'),
    );
  });

  it('refuses a key the schema does not declare, suggesting the nearest', () => {
    expect(() => read({ max: 1, maxAttempt: 5 })).toThrow(
      new TypeError('unknown option "maxAttempt" in test options; did you mean "maxAttempts"?'),
    );
    expect(() => read({ max: 1, colour: 'red' })).toThrow(
      new TypeError('unknown option "colour" in test options'),
    );
  });

  it('refuses what is not an options object', () => {
    for (const bad of [5, null, 'x', [1]]) {
      expect(() => read(bad)).toThrow(/expected "test options" to be an options object/);
    }
    expect(() => readOptions('empty options', undefined, {})).not.toThrow();
  });

  it('ties a schema to its options type at compile time', () => {
    // @ts-expect-error a key of the type is missing from the schema
    ({ max: required(positiveInt) }) satisfies Schema<Options>;
    // @ts-expect-error a key the type does not have
    ({ ...schema, extra: required(positiveInt) }) satisfies Schema<Options>;
  });
});

describe('checks', () => {
  const refuses = (check: Check<unknown>, value: unknown, message: string) =>
    expect(() => check('n', value)).toThrow(new TypeError(message));

  it('nonEmptyString accepts a string with a character, nothing else', () => {
    expect(nonEmptyString('name', 'x')).toBe('x');
    refuses(nonEmptyString, '', 'expected "n" to be a non-empty string, got ""');
    refuses(nonEmptyString, 5, 'expected "n" to be a non-empty string, got 5');
  });

  it('nonNegativeInt accepts zero and positive integers only', () => {
    expect(nonNegativeInt('maxQueue', 0)).toBe(0);
    expect(nonNegativeInt('maxQueue', 12)).toBe(12);
    for (const [bad, shown] of [
      [-1, '-1'],
      [1.5, '1.5'],
      [Number.NaN, 'NaN'],
      [Infinity, 'Infinity'],
      ['1', '"1"'],
    ] as const) {
      refuses(nonNegativeInt, bad, `expected "n" to be a non-negative integer, got ${shown}`);
    }
  });

  it('positiveNumber and positiveOrInfinity differ only on Infinity', () => {
    expect(positiveNumber('rate', 0.5)).toBe(0.5);
    refuses(positiveNumber, Infinity, 'expected "n" to be a positive finite number, got Infinity');
    refuses(positiveNumber, 0, 'expected "n" to be a positive finite number, got 0');
    expect(positiveOrInfinity('rate', Infinity)).toBe(Infinity);
    expect(positiveOrInfinity('rate', 2)).toBe(2);
    refuses(positiveOrInfinity, 0, 'expected "n" to be a positive number, got 0');
  });

  it('nonNegativeNumber and nonNegativeOrInfinity accept zero', () => {
    expect(nonNegativeNumber('delayMs', 0)).toBe(0);
    expect(nonNegativeOrInfinity('waitMs', 0)).toBe(0);
    expect(nonNegativeOrInfinity('waitMs', Infinity)).toBe(Infinity);
  });

  it('fraction includes 0 and 1', () => {
    expect(fraction('ratio', 0)).toBe(0);
    expect(fraction('ratio', 1)).toBe(1);
    refuses(fraction, -0.5, 'expected "n" to be a number from 0 to 1, got -0.5');
  });

  it('positiveFraction accepts above 0 up to and including 1', () => {
    expect(positiveFraction('share', 1)).toBe(1);
    expect(positiveFraction('share', 0.01)).toBe(0.01);
    for (const [bad, shown] of [
      [0, '0'],
      [-0.5, '-0.5'],
      [1.01, '1.01'],
      [Number.NaN, 'NaN'],
      ['0.5', '"0.5"'],
    ] as const) {
      refuses(positiveFraction, bad, `expected "n" to be a number above 0 and at most 1, got ${shown}`);
    }
  });

  it('atLeast accepts finite numbers from its minimum', () => {
    const factor = atLeast(1);
    expect(factor('factor', 1)).toBe(1);
    expect(factor('factor', 2.5)).toBe(2.5);
    for (const [bad, shown] of [
      [0.99, '0.99'],
      [Infinity, 'Infinity'],
      [Number.NaN, 'NaN'],
      ['2', '"2"'],
    ] as const) {
      refuses(factor, bad, `expected "n" to be a finite number of at least 1, got ${shown}`);
    }
  });

  it('positiveInt refuses Infinity, positiveIntOrInfinity accepts it', () => {
    expect(positiveInt('max', 1)).toBe(1);
    refuses(positiveInt, Infinity, 'expected "n" to be a positive integer, got Infinity');
    expect(positiveIntOrInfinity('max', Infinity)).toBe(Infinity);
  });

  it('oneOf lists every allowed value when refusing', () => {
    const mode = oneOf(['fast', 'safe', 'off']);
    expect(mode('mode', 'off')).toBe('off');
    refuses(mode, 'slow', 'expected "n" to be one of "fast", "safe", "off", got "slow"');
  });

  it('storeOf wants an object with each method, and a numeric timeoutMs when it has a deadline', () => {
    const lockStore = storeOf('a lock store', ['acquire', 'release'], true);
    const store = { acquire() {}, release() {}, timeoutMs: 100 };
    expect(lockStore('store', store)).toBe(store);
    const message = (got: string) =>
      `expected "store" to be a lock store (acquire, release, timeoutMs), got ${got}`;
    expect(() => lockStore('store', 'redis')).toThrow(new TypeError(message('"redis"')));
    expect(() => lockStore('store', null)).toThrow(new TypeError(message('null')));
    // A function carrying the methods is not a store object either.
    expect(() =>
      lockStore(
        'store',
        Object.assign(() => {}, store),
      ),
    ).toThrow(TypeError);
    expect(() => lockStore('store', { acquire() {}, timeoutMs: 100 })).toThrow(TypeError);
    expect(() => lockStore('store', { acquire() {}, release() {} })).toThrow(TypeError);
    expect(() => lockStore('store', { ...store, timeoutMs: '100' })).toThrow(TypeError);
    const plain = storeOf('a cache layer', ['get'], false);
    const layer = { get() {} };
    expect(plain('layer', layer)).toBe(layer);
    expect(() => plain('layer', {})).toThrow(
      new TypeError('expected "layer" to be a cache layer (get), got an object'),
    );
  });

  it('boolean accepts false as well as true', () => {
    expect(boolean('enabled', false)).toBe(false);
    expect(read({ max: 1, enabled: false }).enabled).toBe(false);
  });

  it('keeps a given function, listener and non-default values as given', () => {
    const map = (x: number) => x * 2;
    const onEvent = () => {};
    const o = read({ max: 1, map, onEvent, mode: 'b', maxAttempts: Infinity, delayMs: 5, waitMs: 7 });
    expect(o.map).toBe(map);
    expect(o.onEvent).toBe(onEvent);
    expect(o.mode).toBe('b');
    expect(o.maxAttempts).toBe(Infinity);
    expect(o.delayMs).toBe(5);
    expect(o.waitMs).toBe(7);
  });
});

describe('nested', () => {
  const limits = { limits: required(nested({ inFlight: required(positiveInt) })) };

  it('refuses an absent required nested object, naming it', () => {
    expect(() => readOptions('shedder options', {}, limits)).toThrow(
      new TypeError('expected "limits" to be an object, got undefined'),
    );
  });

  it('reads a nested object into a new object, its fields named by path', () => {
    const given = { limits: { inFlight: 4 } };
    const o = readOptions('shedder options', given, limits);
    expect(o).toEqual({ limits: { inFlight: 4 } });
    expect(o.limits).not.toBe(given.limits);
    expect(() => readOptions('shedder options', { limits: {} }, limits)).toThrow(
      new TypeError('expected "limits.inFlight" to be a positive integer, got undefined'),
    );
    expect(() => readOptions('shedder options', { limits: null }, limits)).toThrow(
      new TypeError('expected "limits" to be an options object, got null'),
    );
  });

  it('names fields nested twice by their full path', () => {
    const schema2 = { a: required(nested({ b: required(nested({ c: required(positiveInt) })) })) };
    expect(() => readOptions('deep options', { a: { b: { c: 0 } } }, schema2)).toThrow(
      new TypeError('expected "a.b.c" to be a positive integer, got 0'),
    );
    expect(() => readOptions('deep options', { a: { b: { colour: 1 } } }, schema2)).toThrow(
      new TypeError('unknown option "colour" in a.b'),
    );
  });
});

describe('reading', () => {
  it('returns a new object and refuses a key the schema only inherits', () => {
    const given = { max: 1 };
    expect(read(given)).not.toBe(given);
    expect(() => read({ max: 1, toString: () => 'x' })).toThrow(/^unknown option "toString" in test options/);
  });
});

describe('policy', () => {
  it('takes anything with execute and refuses the rest, naming the option', () => {
    const p = { execute: () => Promise.resolve(1) };
    expect(policy('compensation', p)).toBe(p);
    for (const bad of [null, undefined, {}, { execute: 1 }, 'retry'])
      expect(() => policy('compensation', bad)).toThrow(
        /^expected "compensation" to be a policy \(with execute\), got /,
      );
  });
});
