import { describe, expect, it } from 'vitest';
import { chaos } from './chaos.js';

const unavailable = () => Object.assign(new Error('Service Unavailable'), { status: 503 });

describe('chaos options', () => {
  it.each([
    [
      'fault without rate',
      () => chaos.fault({ error: unavailable } as never),
      '"rate" to be a number from 0 to 1',
    ],
    [
      'rate above 1',
      () => chaos.fault({ rate: 1.5, error: unavailable }),
      '"rate" to be a number from 0 to 1, got 1.5',
    ],
    [
      'a NaN rate',
      () => chaos.latency({ rate: Number.NaN, ms: 1 }),
      '"rate" to be a number from 0 to 1, got NaN',
    ],
    ['fault without error', () => chaos.fault({ rate: 1 } as never), '"error" to be an error (an object)'],
    [
      'a string error',
      () => chaos.fault({ rate: 1, error: 'down' as never }),
      '"error" to be an error (an object) or a function giving one, got "down"',
    ],
    [
      'latency without ms',
      () => chaos.latency({ rate: 1 } as never),
      '"ms" to be a non-negative finite number, got undefined',
    ],
    [
      'a negative ms',
      () => chaos.latency({ rate: 1, ms: -1 }),
      '"ms" to be a non-negative finite number, got -1',
    ],
    [
      'outcome without value',
      () => chaos.outcome({ rate: 1 } as never),
      '"value" to be a value or a function, got undefined',
    ],
    [
      'behavior without run',
      () => chaos.behavior({ rate: 1 } as never),
      '"run" to be a function, got undefined',
    ],
    [
      'random and seed',
      () => chaos.fault({ rate: 1, error: unavailable, seed: 1, random: Math.random }),
      '"random" or "seed", not both',
    ],
    [
      'a fractional seed',
      () => chaos.fault({ rate: 1, error: unavailable, seed: 1.5 }),
      '"seed" to be an integer, got 1.5',
    ],
    [
      'a non-function random',
      () => chaos.fault({ rate: 1, error: unavailable, random: 0.5 as never }),
      '"random" to be a function',
    ],
    [
      'a string enabled',
      () => chaos.fault({ rate: 1, error: unavailable, enabled: 'yes' as never }),
      '"enabled" to be a boolean or a function, got "yes"',
    ],
    ['a bad clock', () => chaos.latency({ rate: 1, ms: 1, clock: {} as never }), '"clock" to be a Clock'],
    [
      'a misspelled option',
      () => chaos.latency({ rate: 1, ms: 1, seeds: 1 } as never),
      'unknown option "seeds" in chaos.latency options; did you mean "seed"?',
    ],
    [
      'a misspelled event',
      () => chaos.outcome({ rate: 1, value: 1, onInject: () => {} } as never),
      'did you mean "onInjected"?',
    ],
    [
      'no options',
      () => chaos.behavior(undefined as never),
      '"rate" to be a number from 0 to 1, got undefined',
    ],
  ])('%s is a TypeError naming the option', (_name, make, message) => {
    expect(make).toThrow(TypeError);
    expect(make).toThrow(message);
  });
});
