import { describe, expect, it } from 'vitest';
import { FakeClock } from '../testing/fake-clock.js';
import { systemClock } from './clock.js';
import {
  boolean,
  clockField,
  fraction,
  func,
  instanceOf,
  listenerField,
  nested,
  nonNegativeNumber,
  nonNegativeOrInfinity,
  oneOf,
  optional,
  positiveInt,
  positiveIntOrInfinity,
  readOptions,
  required,
  type Schema,
  signal,
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
