/**
 * The Redis fence store against a scripted fake client: what it sends (fences as decimal text),
 * how it decodes replies, stale fences, malformed replies and bad input. The Lua itself runs on
 * real Redis in test/lock/.
 */
import { describe, expect, it } from 'vitest';
import { systemClock } from '../../core/clock.js';
import { isStoreUnavailableError } from '../../core/errors.js';
import { isStaleFenceError, type StaleFenceError } from '../../lock/errors.js';
import { StoreDeadline } from './deadline.js';
import { type FenceRedisClient, RedisFenceStore } from './fence.js';
import { highestScript, readScript, writeScript } from './fence-scripts.js';

function fake(...replies: unknown[]) {
  const calls: unknown[][] = [];
  const reply = (_script: string, _numKeys: number, ...keysAndArgs: unknown[]) => {
    calls.push(keysAndArgs);
    return Promise.resolve(replies.shift());
  };
  const client: FenceRedisClient = { eval: reply, evalsha: reply };
  return { store: new RedisFenceStore(client, 'p:', new StoreDeadline(systemClock, 1_000)), calls };
}

/** The error `promise` rejects with (a resolution fails the test). */
async function failure(promise: Promise<unknown>): Promise<Error> {
  try {
    await promise;
  } catch (error) {
    return error as Error;
  }
  throw new Error('expected a rejection');
}

describe('RedisFenceStore.write', () => {
  it('sends the fence as decimal text, exact up to 2^53 − 1, and resolves on 1', async () => {
    const { store, calls } = fake(1, 1);
    await store.write('a}b', Number.MAX_SAFE_INTEGER, 'v');
    await store.write('a}b', 0, '');
    expect(calls).toEqual([
      ['p:fence:{a}b}', '9007199254740991', 'v'],
      ['p:fence:{a}b}', '0', ''],
    ]);
    expect(store.keyOf('a}b')).toBe('p:fence:{a}b}');
  });

  it('a reply of the higher fence is a StaleFenceError with both fences', async () => {
    const error = (await failure(fake('9007199254740991').store.write('r', 5, 'v'))) as StaleFenceError;
    expect(isStaleFenceError(error)).toBe(true);
    expect([error.resource, error.fence, error.highest]).toEqual(['r', 5, Number.MAX_SAFE_INTEGER]);
  });

  it.each([[0], [2], ['5'], ['4'], ['x'], ['9007199254740992'], [null], [['7']]])(
    'a malformed write reply %j (for fence 5) is a StoreUnavailableError',
    async (reply) => {
      const error = await failure(fake(reply).store.write('r', 5, 'v'));
      expect(isStoreUnavailableError(error)).toBe(true);
      expect((error.cause as Error).message).toMatch(/^unexpected write script reply: /);
    },
  );
});

describe('RedisFenceStore.read and highest', () => {
  it('decode the fence and value (Buffers as UTF-8), and nil as never written', async () => {
    const { store, calls } = fake(
      ['1700000000000007', 'seven'],
      [Buffer.from('3'), Buffer.from('ünï 😀')],
      [null, null],
      '9007199254740991',
      null,
    );
    expect(await store.read('r')).toEqual({ fence: 1_700_000_000_000_007, value: 'seven' });
    expect(await store.read('r')).toEqual({ fence: 3, value: 'ünï 😀' });
    expect(await store.read('r')).toBeUndefined();
    expect(await store.highest('r')).toBe(Number.MAX_SAFE_INTEGER);
    expect(await store.highest('r')).toBeUndefined();
    expect(calls).toEqual([
      ['p:fence:{r}'],
      ['p:fence:{r}'],
      ['p:fence:{r}'],
      ['p:fence:{r}'],
      ['p:fence:{r}'],
    ]);
  });

  it.each([
    [null],
    ['x'],
    [['1']],
    [['1', null]],
    [[null, 'v']],
    [[null, null, 'v']],
    [['1.5', 'v']],
    [['1', 'v', 'w']],
  ])('a malformed read reply %j is a StoreUnavailableError', async (reply) => {
    const error = await failure(fake(reply).store.read('r'));
    expect(isStoreUnavailableError(error)).toBe(true);
    expect((error.cause as Error).message).toMatch(/^unexpected read script reply: /);
  });

  it.each([[1], ['-1'], ['x'], [['1']], ['9007199254740992']])(
    'a malformed highest reply %j is a StoreUnavailableError',
    async (reply) => {
      const error = await failure(fake(reply).store.highest('r'));
      expect(isStoreUnavailableError(error)).toBe(true);
      expect((error.cause as Error).message).toMatch(/^unexpected highest script reply: /);
    },
  );
});

describe('RedisFenceStore input errors name the argument, and nothing is sent', () => {
  it.each([
    ['an empty resource', (s: RedisFenceStore) => s.write('', 1, 'v'), /"resource" to be a non-empty string/],
    [
      'a lone surrogate resource',
      (s: RedisFenceStore) => s.write('\uDBFF', 1, 'v'),
      /"resource" to be well-formed/,
    ],
    [
      'a negative fence',
      (s: RedisFenceStore) => s.write('r', -1, 'v'),
      /"fence" to be a non-negative safe integer/,
    ],
    ['a fence past 2^53', (s: RedisFenceStore) => s.write('r', 2 ** 53, 'v'), /"fence"/],
    ['a string fence', (s: RedisFenceStore) => s.write('r', '5' as never, 'v'), /"fence"/],
    ['a non-string value', (s: RedisFenceStore) => s.write('r', 1, 5 as never), /"value" to be a string/],
    [
      'a lone surrogate value',
      (s: RedisFenceStore) => s.write('r', 1, '\uD800'),
      /"value" to be well-formed/,
    ],
    ['a read of an empty resource', (s: RedisFenceStore) => s.read(''), /"resource"/],
    ['the highest of a non-string', (s: RedisFenceStore) => s.highest(1 as never), /"resource"/],
  ])('%s is a TypeError', async (_, call, message) => {
    const { store, calls } = fake(1);
    const error = await failure(call(store));
    expect(error).toBeInstanceOf(TypeError);
    expect(error.message).toMatch(message);
    expect(calls).toEqual([]);
  });
});

describe('fence scripts', () => {
  it('touch one key, never set a TTL, and compare fences as numbers', () => {
    for (const script of [writeScript, readScript, highestScript]) {
      expect(script).not.toMatch(/KEYS\[2\]|EXPIRE|'PX'/);
    }
    expect(writeScript).toContain('tonumber(ARGV[1]) < tonumber(highest)');
  });
});
