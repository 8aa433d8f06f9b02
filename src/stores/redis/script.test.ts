import { Redis } from 'ioredis';
import { describe, expect, it } from 'vitest';
import { redisStores } from './index.js';
import { isNoScriptError, RedisScript } from './script.js';

describe('isNoScriptError', () => {
  it.each([
    'NOSCRIPT No matching script. Please use EVAL.',
    'ERR NOSCRIPT No matching script',
    '  noscript no matching script',
  ])('matches %o', (message) => {
    expect(isNoScriptError(new Error(message))).toBe(true);
  });

  it.each(['ERR unknown command', 'WRONGTYPE Operation', 'ERR Error running script: NOSCRIPTS', ''])(
    'does not match %o',
    (message) => {
      expect(isNoScriptError(new Error(message))).toBe(false);
    },
  );

  it('is total on hostile input', () => {
    expect(isNoScriptError(null)).toBe(false);
    expect(isNoScriptError('NOSCRIPT')).toBe(false);
    expect(isNoScriptError({ message: 42 })).toBe(false);
  });
});

describe('RedisScript', () => {
  it('computes the SHA1 Redis uses', () => {
    expect(new RedisScript('return 1').sha).toBe('e0e1f9fabfc9d4800c877a703b823ac0578ff8db');
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
