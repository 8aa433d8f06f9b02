import { Redis } from 'ioredis';
import { describe, expect, it } from 'vitest';
import { redisStores } from './index.js';
import { isNoScriptError, RedisScript, type ScriptClient } from './script.js';

describe('isNoScriptError', () => {
  it.each([
    'NOSCRIPT No matching script. Please use EVAL.',
    'ERR NOSCRIPT No matching script',
    'ERR  NOSCRIPT No matching script',
    '  noscript no matching script',
    'NOSCRIPT',
  ])('matches %o', (message) => {
    expect(isNoScriptError(new Error(message))).toBe(true);
  });

  it.each([
    'ERR unknown command',
    'WRONGTYPE Operation',
    'ERR Error running script: NOSCRIPTS',
    'ERR Error running script: NOSCRIPT inside a message',
    'NOSCRIPTS are not this',
    'ERRNOSCRIPT',
    '',
  ])('does not match %o', (message) => {
    expect(isNoScriptError(new Error(message))).toBe(false);
  });

  it('is total on hostile input', () => {
    expect(isNoScriptError(null)).toBe(false);
    expect(isNoScriptError('NOSCRIPT')).toBe(false);
    expect(isNoScriptError({ message: 42 })).toBe(false);
    // Only a message string is read: not something that merely prints as NOSCRIPT.
    expect(isNoScriptError({ message: ['NOSCRIPT'] })).toBe(false);
  });
});

/** A script client that answers from a list of replies (a value, or an Error to reject with). */
function scripted(...replies: unknown[]) {
  const calls: string[] = [];
  const next = (method: string, id: string, numKeys: number, args: unknown[]) => {
    calls.push(`${method} ${id} ${numKeys} ${args.join(' ')}`);
    const reply = replies.shift();
    return reply instanceof Error ? Promise.reject(reply) : Promise.resolve(reply);
  };
  const client: ScriptClient = {
    eval: (source, numKeys, ...args) => next('eval', source, numKeys, args),
    evalsha: (sha, numKeys, ...args) => next('evalsha', sha, numKeys, args),
  };
  return { client, calls };
}

/** `script.send` as a promise of its reply, for `keys` then `args`. */
function run(script: RedisScript, client: ScriptClient, keys: string[], args: (string | number)[]) {
  return new Promise((resolve, reject) =>
    script.send(client, keys.length, [...keys, ...args], resolve, reject),
  );
}

describe('RedisScript', () => {
  it('computes the SHA1 Redis uses', () => {
    expect(new RedisScript('return 1').sha).toBe('e0e1f9fabfc9d4800c877a703b823ac0578ff8db');
  });

  it('sends the source once per client (EVAL), then its SHA (EVALSHA)', async () => {
    const script = new RedisScript('return 1');
    const { client, calls } = scripted(1, 2, 3);
    const other = scripted(4);
    expect(await run(script, client, ['k'], [5])).toBe(1);
    expect(await run(script, client, ['k', 'j'], [])).toBe(2);
    expect(await run(script, other.client, [], ['a'])).toBe(4);
    expect(await run(script, client, [], [])).toBe(3);
    expect(calls).toEqual(['eval return 1 1 k 5', `evalsha ${script.sha} 2 k j`, `evalsha ${script.sha} 0 `]);
    expect(other.calls).toEqual(['eval return 1 0 a']);
  });

  it('a failed first EVAL is not taken as loaded: the next call sends the source again', async () => {
    const script = new RedisScript('return 1');
    const down = new Error('ECONNRESET');
    const { client, calls } = scripted(down, 7);
    await expect(run(script, client, ['k'], [])).rejects.toBe(down);
    expect(await run(script, client, ['k'], [])).toBe(7);
    expect(calls.map((c) => c.split(' ')[0])).toEqual(['eval', 'eval']);
  });

  it('answers NOSCRIPT with one EVAL that runs the script, and passes on its failure', async () => {
    const script = new RedisScript('return 1');
    const wrongType = new Error('WRONGTYPE Operation against a key holding the wrong kind of value');
    const { client, calls } = scripted(
      1,
      new Error('NOSCRIPT No matching script'),
      2,
      new Error('NOSCRIPT'),
      wrongType,
    );
    await run(script, client, ['k'], []);
    expect(await run(script, client, ['k'], [])).toBe(2);
    await expect(run(script, client, ['k'], [])).rejects.toBe(wrongType);
    expect(calls.map((c) => c.split(' ')[0])).toEqual(['eval', 'evalsha', 'eval', 'evalsha', 'eval']);
  });

  it('passes on any other error of EVALSHA as it is, without sending the source', async () => {
    const script = new RedisScript('return 1');
    const wrongType = new Error('WRONGTYPE Operation against a key holding the wrong kind of value');
    const { client, calls } = scripted(1, wrongType, 3);
    await run(script, client, ['k'], []);
    await expect(run(script, client, ['k'], [])).rejects.toBe(wrongType);
    expect(await run(script, client, ['k'], [])).toBe(3);
    expect(calls.map((c) => c.split(' ')[0])).toEqual(['eval', 'evalsha', 'evalsha']);
  });
});

describe('redisStores', () => {
  it('rejects something that is not an ioredis client, and bad options', () => {
    expect(() => redisStores({} as never)).toThrow(/"client" to be an ioredis Redis or Cluster client/);
    expect(() => redisStores(null as never)).toThrow(/"client"/);
    const client = new Redis({ lazyConnect: true });
    try {
      expect(() => redisStores(client, { timeoutMs: 0 })).toThrow(/"timeoutMs".*0/);
      expect(() => redisStores(client, { timeoutMs: Number.NaN })).toThrow(/"timeoutMs".*NaN/);
      expect(() => redisStores(client, { prefix: 5 as never })).toThrow(/"prefix" to be a string/);
      expect(() => redisStores(client, { clock: {} as never })).toThrow(/"clock"/);
      const stores = redisStores(client);
      expect(stores.rateLimit).toBe(stores.rateLimit);
    } finally {
      client.disconnect();
    }
  });
});
