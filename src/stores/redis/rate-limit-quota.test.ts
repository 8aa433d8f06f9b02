/**
 * The Redis rate-limit store's `adjust`, `block` and `takeAll` against a scripted client (no
 * Redis): the calls they make, the keys they build (hostile ones included), and replies Redis
 * should never send. Their decisions run on real Redis in test/rate-limit/.
 */
import { describe, expect, it } from 'vitest';
import { scriptedClient } from '../../../test/rate-limit/support/scripted-client.js';
import { isStoreUnavailableError } from '../../core/errors.js';
import { ruleOf } from '../../rate-limit/rule.js';
import { FakeClock } from '../../testing/fake-clock.js';
import { redisStores } from './index.js';

const gcra = ruleOf({ name: 'api', limit: 5, periodMs: 60_000 });
const window = ruleOf({ name: 'win', algorithm: 'sliding-window', limit: 4, periodMs: 1_500, buckets: 3 });

describe('Redis rate-limit store: adjust, block and takeAll calls', () => {
  it('adjust and block: one call on the key, the amount, then the rule; the reply as a state report', async () => {
    const { client, calls } = scriptedClient(() => [3, 0, 24_000]);
    const store = redisStores(client, { prefix: 'p:', clock: new FakeClock() }).rateLimit;
    expect(await store.adjust('k', -2, gcra)).toEqual({
      allowed: true,
      remaining: 3,
      retryAfterMs: 0,
      resetMs: 24_000,
      limit: 5,
    });
    await store.block('k', 1_500.5, window);
    expect(calls).toEqual([
      { method: 'eval', numKeys: 1, args: ['p:rl:api:{k}', -2, '5', '60000', '5', '1'] },
      { method: 'eval', numKeys: 1, args: ['p:rl:win:{k}', 1_500.5, '4', '1500', '4', '3'] },
    ]);
  });

  it('takeAll: one call over one key per rule, the cost, then each rule with its algorithm', async () => {
    const { client, calls } = scriptedClient(() => [
      [4, 0, 12_000],
      [0, 500, 1_500],
    ]);
    const store = redisStores(client, { prefix: 'p:', clock: new FakeClock() }).rateLimit;
    expect(await store.takeAll('u:1', 1, [gcra, window])).toEqual([
      { allowed: true, remaining: 4, retryAfterMs: 0, resetMs: 12_000, limit: 5 },
      { allowed: false, remaining: 0, retryAfterMs: 500, resetMs: 1_500, limit: 4 },
    ]);
    expect(calls).toEqual([
      {
        method: 'eval',
        numKeys: 2,
        args: [
          'p:rl:api:{u:1}',
          'p:rl:win:{u:1}',
          1,
          'gcra',
          '5',
          '60000',
          '5',
          '1',
          'sliding-window',
          '4',
          '1500',
          '4',
          '3',
        ],
      },
    ]);
  });

  it('a take queued in the tick goes out before an adjust, a block or a takeAll made after it', async () => {
    const { client, calls } = scriptedClient((call) =>
      call.numKeys === 2
        ? [
            [0, 0, 0],
            [0, 0, 0],
          ]
        : [0, 0, 0],
    );
    const store = redisStores(client, { clock: new FakeClock() }).rateLimit;
    await Promise.all([
      store.take('a', 1, gcra),
      store.adjust('a', 1, gcra),
      store.take('b', 1, gcra),
      store.block('a', 10, gcra),
      store.takeAll('a', 1, [gcra, window]),
    ]);
    // take a (cost 1), adjust a (1 unit), take b, block a (10 ms), takeAll a: in the order made.
    expect(calls.map((c) => c.args.slice(0, 2))).toEqual([
      ['bulwark:rl:api:{a}', 1],
      ['bulwark:rl:api:{a}', 1],
      ['bulwark:rl:api:{b}', 1],
      ['bulwark:rl:api:{a}', 10],
      ['bulwark:rl:api:{a}', 'bulwark:rl:win:{a}'],
    ]);
  });

  it('a user key starting with "}" (an empty hash tag) or NUL gets a NUL in front; others are as given', () => {
    const store = redisStores(scriptedClient(() => null).client, { prefix: 'p:' }).rateLimit;
    expect(['}', '}x', '\u0000', '\u0000}x', 'x}', '{x}', 'a'].map((key) => store.keyOf(key, gcra))).toEqual([
      'p:rl:api:{\u0000}}',
      'p:rl:api:{\u0000}x}',
      'p:rl:api:{\u0000\u0000}',
      'p:rl:api:{\u0000\u0000}x}',
      'p:rl:api:{x}}',
      'p:rl:api:{{x}}',
      'p:rl:api:{a}',
    ]);
  });

  it('a bad key rejects with a TypeError before any call', async () => {
    const { client, calls } = scriptedClient(() => [0, 0, 0]);
    const store = redisStores(client, { clock: new FakeClock() }).rateLimit;
    await expect(store.adjust('', 1, gcra)).rejects.toThrow(/"key" to be a non-empty string/);
    await expect(store.block('\uD800', 1, gcra)).rejects.toThrow(/well-formed UTF-16/);
    await expect(store.takeAll('', 1, [gcra])).rejects.toThrow(TypeError);
    expect(calls).toEqual([]);
  });

  it.each([
    [null, 'null'],
    [[1, 0], '[1,0]'],
    [[1, '0', 0], '[1,"0",0]'],
  ])('an adjust or block reply of %j is a store failure', async (reply, shown) => {
    const store = redisStores(scriptedClient(() => reply).client, { clock: new FakeClock() }).rateLimit;
    for (const call of [() => store.adjust('k', 1, gcra), () => store.block('k', 1, gcra)]) {
      const error = (await call().catch((e: unknown) => e)) as Error;
      expect(isStoreUnavailableError(error)).toBe(true);
      expect(error.message).toBe(`Redis failed: unexpected rate-limit script reply: ${shown}`);
    }
  });

  it.each([
    [[[1, 0, 0]], 'unexpected rate-limit script reply: [[1,0,0]]'],
    ['OK', 'unexpected rate-limit script reply: "OK"'],
    [[[1, 0, 0], 'WRONGTYPE Operation against a key'], 'WRONGTYPE Operation against a key'],
  ])('a takeAll reply of %j is a store failure', async (reply, message) => {
    const store = redisStores(scriptedClient(() => reply).client, { clock: new FakeClock() }).rateLimit;
    const error = (await store.takeAll('k', 1, [gcra, window]).catch((e: unknown) => e)) as Error;
    expect(isStoreUnavailableError(error)).toBe(true);
    expect(error.message).toBe(`Redis failed: ${message}`);
  });
});
