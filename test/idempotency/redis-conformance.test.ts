/**
 * The idempotency store conformance suite against real Redis (the same suite the in-memory store
 * passes on a FakeClock), plus what only Redis has: key layout and hash tags, PEXPIRE as lease and
 * retention, one script call per operation, NOSCRIPT recovery, notifications across clients, the
 * subscriber's lifetime, and the server's clock.
 */
import { execFile } from 'node:child_process';
import { setTimeout as sleep } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';
import { isStoreUnavailableError } from '../../src/core/errors.js';
import type { ClaimResult } from '../../src/idempotency/store.js';
import { redisStores } from '../../src/stores/redis/index.js';
import { idempotencyStoreConformance } from '../../src/testing/idempotency-conformance.js';
import { startPrivateRedis } from '../support/private-redis.js';
import { countedClient } from '../support/redis-doubles.js';
import { useRedis } from '../support/services.js';

const redis = await useRedis();
const own = await startPrivateRedis();

function tokenOf(result: ClaimResult): string {
  if (result.status !== 'claimed') throw new Error(`expected a claim, got ${JSON.stringify(result)}`);
  return result.token;
}

redis.describe('idempotency store on real Redis', () => {
  idempotencyStoreConformance(
    'Redis store (server clock)',
    () => {
      const stores = redisStores(redis.client(), { prefix: redis.prefix, timeoutMs: 2_000 });
      return {
        store: stores.idempotency,
        elapse: (ms) => sleep(ms),
        slackMs: 50,
        close: () => stores.close(),
      };
    },
    { describe, it },
  );

  it('keeps one hash per key, the key as its own {hash tag}, under the prefix', async () => {
    const stores = redisStores(redis.client(), { prefix: redis.prefix });
    const store = stores.idempotency;
    const token = tokenOf(await store.claim('user:42', 'fp', 5_000));
    const key = `${redis.prefix}idem:{user:42}`;
    expect(await redis.keys()).toEqual([key]);
    expect(store.keyOf('user:42')).toBe(key);
    expect(await redis.admin().hgetall(key)).toEqual({ s: 'p', f: 'fp', t: token });
    expect(await store.complete('user:42', token, 'done', 60_000)).toBe(true);
    expect(await redis.admin().hgetall(key)).toEqual({ s: 'c', f: 'fp', r: 'done' });
    expect(await redis.keys()).toEqual([key]);
  });

  it('PTTL is the lease while in progress (renew sets it again) and the retention once completed', async () => {
    const store = redisStores(redis.client(), { prefix: redis.prefix }).idempotency;
    const token = tokenOf(await store.claim('k', 'fp', 5_000));
    const pttl = () => redis.admin().pttl(store.keyOf('k'));
    expect(await pttl()).toBeGreaterThan(4_000);
    expect(await pttl()).toBeLessThanOrEqual(5_000);
    expect(await store.renew('k', token, 20_000)).toBe(true);
    expect(await pttl()).toBeGreaterThan(19_000);
    expect(await store.complete('k', token, 'r', 600_000)).toBe(true);
    expect(await pttl()).toBeGreaterThan(599_000);
    expect(await pttl()).toBeLessThanOrEqual(600_000);
    expect(await store.release('k', token)).toBe(false);
    expect(await redis.admin().exists(store.keyOf('k'))).toBe(1);
  });

  it('one script call per operation: EVAL the first time per script and client, EVALSHA after', async () => {
    const { client, calls } = countedClient(redis.client());
    const store = redisStores(client, { prefix: redis.prefix }).idempotency;
    const a = tokenOf(await store.claim('a', 'fp', 5_000));
    await store.claim('a', 'fp', 5_000);
    await store.renew('a', a, 5_000);
    await store.complete('a', a, 'r', 60_000);
    const b = tokenOf(await store.claim('b', 'fp', 5_000));
    await store.release('b', b);
    const c = tokenOf(await store.claim('b', 'fp', 5_000));
    await store.release('b', c);
    await store.complete('b', c, 'r', 60_000);
    expect(calls).toEqual([
      'eval',
      'evalsha',
      'eval',
      'eval',
      'evalsha',
      'eval',
      'evalsha',
      'evalsha',
      'evalsha',
    ]);
  });

  it('SCRIPT FLUSH mid-run (a server of our own): NOSCRIPT reloads the script and the call succeeds', async () => {
    const store = redisStores(own.client(), { prefix: 'flush:' }).idempotency;
    const token = tokenOf(await store.claim('k', 'fp', 5_000));
    await store.claim('k', 'fp', 5_000);
    await own.client().script('FLUSH');
    expect(await store.claim('k', 'fp', 5_000)).toMatchObject({ status: 'in_progress' });
    expect(await store.renew('k', token, 5_000)).toBe(true);
    await own.client().script('FLUSH');
    expect(await store.complete('k', token, 'r', 60_000)).toBe(true);
    expect(await store.claim('k', 'fp', 5_000)).toEqual({ status: 'completed', result: 'r' });
  });

  it('watch wakes on complete and on release made through another client and store set, once a waiter marked the record', async () => {
    const watching = redisStores(redis.client(), { prefix: redis.prefix });
    const other = redisStores(redis.client(), { prefix: redis.prefix }).idempotency;
    const listener = redis.client();
    const published: string[] = [];
    listener.on('message', (_channel: string, message: string) => published.push(message));
    await listener.subscribe(other.channel);
    const woken: string[] = [];

    // Nobody waits: a release and a completion publish nothing.
    await other.release('k', tokenOf(await other.claim('k', 'fp', 5_000)));
    await other.complete('done', tokenOf(await other.claim('done', 'fp', 5_000)), 'r', 60_000);

    // A duplicate sees the key in progress and watches it (as idempotency() does): the watch marks
    // the record, and its release wakes the watcher.
    const first = tokenOf(await other.claim('k', 'fp', 5_000));
    const unwatch = watching.idempotency.watch('k', () => woken.push('k'));
    watching.idempotency.watch('unrelated', () => woken.push('unrelated'));
    await expect.poll(() => redis.admin().hget(other.keyOf('k'), 'w')).toBe('1');
    await expect.poll(() => woken.sort()).toEqual(['k', 'unrelated']); // subscribed: each looks once
    woken.length = 0;
    expect(await other.release('k', first)).toBe(true);
    await expect.poll(() => woken).toEqual(['k']);

    // A record claimed after the watch began: this process's claim that finds it in progress marks it.
    const second = tokenOf(await other.claim('k', 'fp', 5_000));
    expect(await watching.idempotency.claim('k', 'fp', 5_000)).toMatchObject({ status: 'in_progress' });
    expect(await other.complete('k', second, 'r', 60_000)).toBe(true);
    await expect.poll(() => woken).toEqual(['k', 'k']);
    expect(await redis.admin().hgetall(other.keyOf('k'))).toEqual({ s: 'c', f: 'fp', r: 'r' }); // mark gone

    // A claim from a process that does not watch the key marks nothing; refused operations publish
    // nothing; a removed watcher is not called.
    unwatch();
    unwatch(); // idempotent
    const third = tokenOf(await other.claim('x', 'fp', 5_000));
    expect(await other.claim('x', 'fp', 5_000)).toMatchObject({ status: 'in_progress' });
    expect(await redis.admin().hget(other.keyOf('x'), 'w')).toBeNull();
    expect(await other.release('x', second)).toBe(false);
    expect(await other.release('x', third)).toBe(true);
    await sleep(100);
    expect(woken).toEqual(['k', 'k']);
    expect(published).toEqual(['k', 'k']);
    await watching.close();
  });

  it('a client with its own keyPrefix: the record carries it, and notifications still arrive', async () => {
    const stores = redisStores(redis.client({ keyPrefix: `${redis.prefix}client:` }), { prefix: 'b:' });
    const store = stores.idempotency;
    const token = tokenOf(await store.claim('k', 'fp', 5_000));
    let woken = 0;
    store.watch('k', () => woken++);
    expect(await redis.keys()).toEqual([`${redis.prefix}client:b:idem:{k}`]);
    await expect.poll(() => redis.admin().hget(`${redis.prefix}client:b:idem:{k}`, 'w')).toBe('1');
    await expect.poll(() => woken).toBe(1); // subscribed: the watcher looks once
    expect(await store.release('k', token)).toBe(true);
    await expect.poll(() => woken).toBe(2);
    await stores.close();
  });

  it('one subscriber per store set, created on the first watch; close() ends it, later watches never wake', async () => {
    const { client, duplicates } = countedClient(redis.client());
    const stores = redisStores(client, { prefix: redis.prefix });
    const store = stores.idempotency;
    await store.claim('k', 'fp', 5_000);
    expect(duplicates).toHaveLength(0);
    let woken = 0;
    store.watch('a', () => woken++);
    store.watch('b', () => woken++);
    expect(duplicates).toHaveLength(1);
    const subscriber = duplicates[0]!;
    await expect.poll(() => subscriber.status).toBe('ready');
    await expect.poll(() => woken).toBe(2); // subscribed: each watcher looks once
    await stores.close();
    await expect.poll(() => subscriber.status).toBe('end');
    store.watch('c', () => woken++);
    expect(duplicates).toHaveLength(1);
    // The caller's client is not closed: the store still works.
    expect((await store.claim('c', 'fp', 5_000)).status).toBe('claimed');
    expect(client.status).toBe('ready');
    expect(woken).toBe(2);
  });

  it('the subscriber never keeps the process alive: a process that watches and disconnects its client exits', async () => {
    const index = fileURLToPath(new URL('../../src/stores/redis/index.ts', import.meta.url));
    const code = `
      import { Redis } from 'ioredis';
      import { redisStores } from ${JSON.stringify(index)};
      const client = new Redis(${JSON.stringify(redis.url)});
      const store = redisStores(client, { prefix: ${JSON.stringify(redis.prefix)} }).idempotency;
      store.watch('k', () => {});
      await new Promise((resolve) => setTimeout(resolve, 200));
      await client.quit();
      console.log('done');
    `;
    const tsx = fileURLToPath(new URL('../../node_modules/.bin/tsx', import.meta.url));
    const { stdout } = await promisify(execFile)(tsx, ['--input-type=module', '-e', code], {
      timeout: 15_000,
      cwd: fileURLToPath(new URL('../..', import.meta.url)),
    });
    expect(stdout.trim()).toBe('done');
  });

  it('uses the server clock: a client clock far off changes nothing', async () => {
    const skewed = {
      now: () => 0,
      sleep: () => Promise.resolve(),
      setTimer: setTimeout,
      clearTimer: clearTimeout,
    };
    const store = redisStores(redis.client(), { prefix: redis.prefix, clock: skewed as never }).idempotency;
    const realNow = Date.now;
    Date.now = () => 0;
    let during: ClaimResult;
    try {
      tokenOf(await store.claim('k', 'fp', 60_000));
      during = await store.claim('k', 'fp', 60_000);
    } finally {
      Date.now = realNow;
    }
    expect(during).toMatchObject({ status: 'in_progress' });
    expect((during as { retryAfterMs: number }).retryAfterMs).toBeGreaterThan(59_000);
    expect(await redis.admin().pttl(store.keyOf('k'))).toBeGreaterThan(59_000);
  });

  it('results are kept byte for byte, also 200 KB of multi-byte text', async () => {
    const store = redisStores(redis.client(), { prefix: redis.prefix, timeoutMs: 2_000 }).idempotency;
    const result = '😀ü\u0000✓'.repeat(50_000);
    const token = tokenOf(await store.claim('big', 'fp', 5_000));
    expect(await store.complete('big', token, result, 60_000)).toBe(true);
    const got = await store.claim('big', 'fp', 5_000);
    expect(got.status).toBe('completed');
    expect((got as { result: string }).result === result).toBe(true);
  });

  it('bad input rejects with a TypeError before any call', async () => {
    const { client, calls } = countedClient(redis.client());
    const store = redisStores(client, { prefix: redis.prefix }).idempotency;
    const bad: [string, () => Promise<unknown>][] = [
      ['empty key', () => store.claim('', 'fp', 1_000)],
      ['lone surrogate', () => store.claim('\ud800', 'fp', 1_000)],
      ['fingerprint', () => store.claim('k', 5 as never, 1_000)],
      ['lease 0', () => store.claim('k', 'fp', 0)],
      ['lease 1.5', () => store.claim('k', 'fp', 1.5)],
      ['lease huge', () => store.claim('k', 'fp', 1e300)],
      ['token', () => store.complete('k', undefined as never, 'r', 1_000)],
      ['result', () => store.complete('k', 't', '\udc00', 1_000)],
      ['ttl', () => store.complete('k', 't', 'r', -1)],
      ['renew lease', () => store.renew('k', 't', Number.NaN)],
      ['release key', () => store.release('\ud800x', 't')],
    ];
    for (const [what, call] of bad) await expect(call(), what).rejects.toBeInstanceOf(TypeError);
    expect(calls).toEqual([]);
    expect(store.watch('', () => {})).toBeTypeOf('function');
  });

  it('a reply of the wrong type is a StoreUnavailableError, never a free key', async () => {
    const store = redisStores(redis.client(), { prefix: redis.prefix }).idempotency;
    await redis.admin().set(store.keyOf('k'), 'not a hash');
    await expect(store.claim('k', 'fp', 1_000)).rejects.toSatisfy(isStoreUnavailableError);
  });
});
