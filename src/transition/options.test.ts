import { describe, expect, it } from 'vitest';
import { readTransitionGuardOptions, type TransitionGuardOptions } from './options.js';

const read = (options: unknown) => readTransitionGuardOptions(options as TransitionGuardOptions);
const transitions = { pending: ['paid', 'cancelled'], paid: [], cancelled: [] };

describe('transitionGuard options: bad definitions are refused at construction', () => {
  it.each([
    ['no options', undefined, 'expected "field" to be a non-empty string, got undefined'],
    ['no field', { transitions }, 'expected "field" to be a non-empty string, got undefined'],
    ['an empty field', { field: '', transitions }, 'expected "field" to be a non-empty string, got ""'],
    [
      'a field that is no string',
      { field: 1, transitions },
      'expected "field" to be a non-empty string, got 1',
    ],
    [
      'no transitions',
      { field: 'status' },
      'expected "transitions" to be an object mapping each state to the states it may move to, got undefined',
    ],
    [
      'transitions that are an array',
      { field: 'status', transitions: [['pending', []]] },
      'expected "transitions" to be an object mapping each state to the states it may move to, got an array',
    ],
    [
      'transitions that are a Map',
      { field: 'status', transitions: new Map([['pending', []]]) },
      'expected "transitions" to be an object mapping each state to the states it may move to, got an object',
    ],
    [
      'transitions that are null',
      { field: 'status', transitions: null },
      'expected "transitions" to be an object mapping each state to the states it may move to, got null',
    ],
    [
      'transitions that are a string',
      { field: 'status', transitions: 'pending' },
      'expected "transitions" to be an object mapping each state to the states it may move to, got "pending"',
    ],
    [
      'no state at all',
      { field: 'status', transitions: {} },
      'expected "transitions" to define at least one state, got {}',
    ],
    [
      'a state mapping to a non-array',
      { field: 'status', transitions: { pending: 'paid', paid: [] } },
      'expected "transitions.pending" to be an array of states, got "paid"',
    ],
    [
      'a state mapping to nothing',
      { field: 'status', transitions: { pending: undefined } },
      'expected "transitions.pending" to be an array of states, got undefined',
    ],
    [
      'a target that is no string',
      { field: 'status', transitions: { pending: ['paid', 2], paid: [] } },
      'expected "transitions.pending[1]" to be a state (a string), got 2',
    ],
    [
      'a hole among the targets',
      // biome-ignore lint/suspicious/noSparseArray: the hole is the case under test
      { field: 'status', transitions: { pending: [, 'paid'], paid: [] } },
      'expected "transitions.pending[0]" to be a state (a string), got undefined',
    ],
    [
      'a target that is not a state',
      { field: 'status', transitions: { pending: ['paid', 'shiped'], paid: [] } },
      '"transitions.pending" lists "shiped", which is not a state: every target must be a key of "transitions"',
    ],
    [
      'a target listed twice',
      { field: 'status', transitions: { pending: ['paid', 'paid'], paid: [] } },
      '"transitions.pending" lists "paid" twice',
    ],
    [
      'an empty name',
      { field: 'status', transitions, name: '' },
      'expected "name" to be a non-empty string, got ""',
    ],
    [
      'an unknown option',
      { field: 'status', transitions, onRejected: () => {} },
      'unknown option "onRejected" in transitionGuard options',
    ],
    [
      'a misspelled option',
      { field: 'status', transition: transitions },
      'unknown option "transition" in transitionGuard options; did you mean "transitions"?',
    ],
  ])('%s', (_, options, message) => {
    expect(() => read(options)).toThrow(new TypeError(message));
  });

  it('a target that is only inherited, not a key, is not a state', () => {
    expect(() => read({ field: 'status', transitions: { pending: ['toString'] } })).toThrow(
      /lists "toString", which is not a state/,
    );
  });
});

describe('transitionGuard options: a good definition', () => {
  it('reads each state with its targets in order, frozen and copied, and defaults the name', () => {
    const given = { pending: ['paid', 'cancelled'], paid: [], cancelled: ['cancelled'] };
    const options = read({ field: 'status', transitions: given });
    expect(options.name).toBe('transition-guard');
    expect(options.field).toBe('status');
    expect([...options.transitions]).toEqual([
      ['pending', ['paid', 'cancelled']],
      ['paid', []],
      ['cancelled', ['cancelled']],
    ]);
    const pending = options.transitions.get('pending')!;
    expect(Object.isFrozen(pending)).toBe(true);
    given.pending.push('oops');
    expect(pending).toEqual(['paid', 'cancelled']);
  });

  it('takes a null-prototype definition (from JSON, say) and any string as a state', () => {
    const definition = Object.assign(Object.create(null) as object, {
      '': ['in progress'],
      'in progress': [''],
    });
    const options = read({ field: 'state', transitions: definition, name: 'jobs' });
    expect(options.name).toBe('jobs');
    expect(options.transitions.get('')).toEqual(['in progress']);
  });
});
