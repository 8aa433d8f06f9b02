/**
 * The Redis lock store against a scripted fake client: what it sends, how it decodes replies,
 * malformed replies, and bad input. The Lua itself runs on real Redis in test/lock/.
 */
import { describe, expect, it } from 'vitest';
import { systemClock } from '../../core/clock.js';
import { isStoreUnavailableError } from '../../core/errors.js';
import { StoreDeadline } from './deadline.js';
import { type LockRedisClient, RedisLockStore } from './lock.js';
import { acquireScript, FENCE_RETENTION_MS, markScript, releaseScript, renewScript } from './lock-scripts.js';

/** A store whose client replies `replies` in turn and records each script call's keys and args. */
function fake(...replies: unknown[]) {
  const calls: unknown[][] = [];
  const reply = (_script: string, _numKeys: number, ...keysAndArgs: unknown[]) => {
    calls.push(keysAndArgs);
    return Promise.resolve(replies.shift());
  };
  const client: LockRedisClient = { eval: reply, evalsha: reply };
  const store = new RedisLockStore(client, 'p:', new StoreDeadline(systemClock, 1_000));
  return { store, calls };
}

describe('RedisLockStore replies', () => {
  it("decodes an acquisition, '<fence>:<sec>:<µs>' (a Buffer too), as the fence and the lease's end on that time, and 0 as held", async () => {
    const { store } = fake(
      '1700000000000000:1700000000:999999',
      Buffer.from('9007199254740991:0:5000'),
      '42:0:0',
      0,
    );
    expect(await store.acquire('k', 'a', 1_000)).toEqual({
      fence: 1_700_000_000_000_000,
      expiresAt: 1_700_000_000_999 + 1_000,
    });
    expect(await store.acquire('k', 'a', 7)).toEqual({ fence: Number.MAX_SAFE_INTEGER, expiresAt: 12 });
    expect(await store.acquire('k', 'a', 1)).toEqual({ fence: 42, expiresAt: 1 });
    expect(await store.acquire('k', 'a', 1_000)).toBeUndefined();
  });

  it.each([
    [null],
    [1],
    ['held'],
    [['1', 2, 3]],
    ['1'],
    ['1:5'],
    ['1:5:'],
    ['1::5'],
    [':5:6'],
    ['0:5:6'],
    ['-1:5:6'],
    ['1.5:5:6'],
    ['1e15:5:6'],
    ['9007199254740992:5:6'],
    ['1:5.5:6'],
    ['1:-5:6'],
    ['1:5:1000000'],
    ['1:5:6:7'],
    ['1 :5:6'],
    ['1:9007199254740:0'],
    ['12345'],
    ['1:23456'],
  ])('a malformed acquire reply %j is a StoreUnavailableError naming the script', async (reply) => {
    const error = (await fake(reply)
      .store.acquire('k', 'a', 1_000)
      .catch((e: unknown) => e)) as Error;
    expect(isStoreUnavailableError(error)).toBe(true);
    expect((error.cause as Error).message).toMatch(/^unexpected acquire script reply: /);
  });

  it('renew and release map 1/0 to true/false, anything else to StoreUnavailableError', async () => {
    const { store } = fake(1, 0, 0, 1, '1', null);
    expect(await store.renew('k', 'a', 1_000)).toBe(true);
    expect(await store.renew('k', 'a', 1_000)).toBe(false);
    expect(await store.release('k', 'a')).toBe(false);
    expect(await store.release('k', 'a')).toBe(true);
    const renew = (await store.renew('k', 'a', 1_000).catch((e: unknown) => e)) as Error;
    expect(isStoreUnavailableError(renew)).toBe(true);
    expect((renew.cause as Error).message).toBe('unexpected renew script reply: "1"');
    const release = (await store.release('k', 'a').catch((e: unknown) => e)) as Error;
    expect((release.cause as Error).message).toBe('unexpected release script reply: null');
  });

  it('sends the lock and its fence key under one hash tag, and release the channel', async () => {
    const { store, calls } = fake(0, 1, 1);
    await store.acquire('a}b{c', 'owner', 1_000);
    await store.renew('a}b{c', 'owner', 2_000);
    await store.release('a}b{c', 'owner');
    expect(calls).toEqual([
      ['p:lock:{a}b{c}', 'p:lock:{a}b{c}:fence', 'owner', 1_000],
      ['p:lock:{a}b{c}', 'owner', 2_000],
      ['p:lock:{a}b{c}', 'owner', 'p:lock:wake'],
    ]);
    expect(store.keyOf('a}b{c')).toBe('p:lock:{a}b{c}');
    expect(store.channel).toBe('p:lock:wake');
  });

  it('timeoutMs is the store set’s deadline', () => {
    const store = new RedisLockStore(
      { eval: () => Promise.resolve(0), evalsha: () => Promise.resolve(0) },
      'p:',
      new StoreDeadline(systemClock, 250),
    );
    expect(store.timeoutMs).toBe(250);
  });
});

describe('RedisLockStore input errors name the argument, and nothing is sent', () => {
  it.each([
    ['an empty key', (s: RedisLockStore) => s.acquire('', 'a', 1_000), /"key" to be a non-empty string/],
    [
      'a lone surrogate key',
      (s: RedisLockStore) => s.acquire('\uD800', 'a', 1_000),
      /"key" to be well-formed/,
    ],
    ['an empty owner', (s: RedisLockStore) => s.acquire('k', '', 1_000), /"owner" to be a non-empty string/],
    ['a non-string owner', (s: RedisLockStore) => s.acquire('k', 1 as never, 1_000), /"owner"/],
    [
      'a lone surrogate owner',
      (s: RedisLockStore) => s.acquire('k', 'a\uDC00', 1_000),
      /"owner" to be well-formed/,
    ],
    [
      'a zero ttlMs',
      (s: RedisLockStore) => s.acquire('k', 'a', 0),
      /"ttlMs" to be a positive safe integer, got 0/,
    ],
    ['a fractional ttlMs', (s: RedisLockStore) => s.acquire('k', 'a', 1.5), /"ttlMs"/],
    ['a ttlMs past 2^53', (s: RedisLockStore) => s.acquire('k', 'a', 2 ** 53), /"ttlMs"/],
    ['a NaN renewal', (s: RedisLockStore) => s.renew('k', 'a', Number.NaN), /"ttlMs"/],
    ['a renewal of an empty key', (s: RedisLockStore) => s.renew('', 'a', 1_000), /"key"/],
    ['a renewal by an empty owner', (s: RedisLockStore) => s.renew('k', '', 1_000), /"owner"/],
    ['a release by a non-string owner', (s: RedisLockStore) => s.release('k', null as never), /"owner"/],
    ['a release of a lone surrogate key', (s: RedisLockStore) => s.release('x\uD800', 'a'), /"key"/],
  ])('%s is a TypeError', async (_, call, message) => {
    const { store, calls } = fake(1);
    const error = await call(store).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(TypeError);
    expect((error as Error).message).toMatch(message);
    expect(calls).toEqual([]);
  });

  it('the largest safe lease is accepted', async () => {
    const { store, calls } = fake('1:0:0');
    expect(await store.acquire('k', 'a', Number.MAX_SAFE_INTEGER)).toEqual({
      fence: 1,
      expiresAt: Number.MAX_SAFE_INTEGER,
    });
    expect(calls[0]).toContain(Number.MAX_SAFE_INTEGER);
  });
});

describe('lock scripts', () => {
  it('acquire reads TIME, swaps the fence key keeping it FENCE_RETENTION_MS and formats the fence with %.0f', () => {
    expect(acquireScript).toContain("redis.call('TIME')");
    expect(acquireScript).toContain("string.format('%.0f', fence)");
    expect(acquireScript).toContain(`redis.pcall('SET', KEYS[2], text, 'PX', ${FENCE_RETENTION_MS}, 'GET')`);
    expect(acquireScript).toContain(`redis.call('SET', KEYS[2], text, 'PX', ${FENCE_RETENTION_MS})`);
    expect(acquireScript).toContain("if not redis.call('SET', KEYS[1], ARGV[1], 'NX', 'PX', ARGV[2]) then");
    expect(acquireScript).not.toMatch(/PEXPIRE|EXPIRE|PX', ARGV\[2\] \+/);
  });

  it('renew and release touch only the lock key and accept the awaited mark; only release publishes', () => {
    for (const script of [renewScript, releaseScript]) {
      expect(script).toContain("ARGV[1] .. '\\255'");
      expect(script).not.toMatch(/KEYS\[2\]/);
    }
    expect(releaseScript).toContain("redis.call('PUBLISH', ARGV[2], KEYS[1])");
    expect(renewScript).not.toContain('PUBLISH');
    expect(markScript).toContain("redis.call('APPEND', KEYS[1], '\\255')");
  });
});

describe('RedisLockStore marks what this process waits for', () => {
  /** A store whose wake-ups have a subscriber that never connects, recording every script sent. */
  function watched() {
    const calls: { script: string; keysAndArgs: unknown[] }[] = [];
    const reply =
      (how: 'sha' | 'source') =>
      (script: string, _numKeys: number, ...keysAndArgs: unknown[]) => {
        calls.push({ script: how === 'source' ? script : `sha:${script}`, keysAndArgs });
        return Promise.resolve(0);
      };
    const subscriber = { on: () => subscriber, connect: () => new Promise(() => {}), status: 'wait' };
    const client = { eval: reply('source'), evalsha: reply('sha'), duplicate: () => subscriber };
    const store = new RedisLockStore(client as never, 'p:', new StoreDeadline(systemClock, 1_000));
    return { store, calls };
  }

  it('watch sends the mark script for the lock key; acquire asks to mark only while the key is watched', async () => {
    const { store, calls } = watched();
    await store.acquire('k', 'a', 1_000);
    expect(calls.at(-1)?.keysAndArgs).toEqual(['p:lock:{k}', 'p:lock:{k}:fence', 'a', 1_000]);
    const unwatch = store.watch('k', () => {});
    expect(calls.at(-1)).toEqual({ script: markScript, keysAndArgs: ['p:lock:{k}'] });
    await store.acquire('k', 'a', 1_000);
    expect(calls.at(-1)?.keysAndArgs).toEqual(['p:lock:{k}', 'p:lock:{k}:fence', 'a', 1_000, 1]);
    await store.acquire('other', 'a', 1_000);
    expect(calls.at(-1)?.keysAndArgs).toHaveLength(4);
    unwatch();
    await store.acquire('k', 'a', 1_000);
    expect(calls.at(-1)?.keysAndArgs).toHaveLength(4);
  });

  it('a bad key, or a closed store, watches without sending anything', () => {
    const { store, calls } = watched();
    store.watch('', () => {})();
    store.watch('\uD800', () => {})();
    store.close();
    store.watch('k', () => {})();
    expect(calls).toEqual([]);
  });
});
