/**
 * The Redis key of a user key: its layout is covered with each store; here, that a bad key is a
 * `TypeError` naming the argument it came from (`key` unless the store says otherwise).
 */
import { expect, it } from 'vitest';
import { redisKey, taggedKey } from './keys.js';

it('builds <head><key>} and names the bad argument: "key" by default, else the name given', () => {
  expect(redisKey('b:rl:api:{', 'user:1')).toBe('b:rl:api:{user:1}');
  expect(() => redisKey('b:{', '')).toThrow(/"key"/);
  expect(() => taggedKey('b:{', '\uD800')).toThrow(/"key"/);
  expect(() => redisKey('b:{', '', 'resource')).toThrow(/"resource"/);
});
