/**
 * The Redis cache layer (L2) against real Redis: the cache layer conformance suite (the same the
 * memory layer passes on a FakeClock), plus what only Redis has: the key layout and its hash tags,
 * the server's TTLs, one script or command per operation, corrupted keys, messages across store
 * sets on the store set's one subscriber, a reset after the subscriber was killed (a server of our
 * own), and a black-holed Redis failing within the deadline.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import type { Redis } from 'ioredis';
import { describe, expect, it } from 'vitest';
import { isStoreUnavailableError, isTimeoutError } from '../../src/core/errors.js';
import { redisStores } from '../../src/stores/redis/index.js';
import { cacheLayerConformance } from '../../src/testing/cache-layer-conformance.js';
import { startFaultProxy } from '../support/fault-proxy.js';
import { startPrivateRedis } from '../support/private-redis.js';
import { countedClient } from '../support/redis-doubles.js';
import { useRedis } from '../support/services.js';

const redis = await useRedis();
const own = redis.available ? await startPrivateRedis() : undefined;

/** What Redis Cluster hashes a key by: its `{hash tag}` if it has a non-empty one, else the key. */
function hashTag(key: string): string {
  const open = key.indexOf('{');
  const close = open === -1 ? -1 : key.indexOf('}', open + 1);
  return close > open + 1 ? key.slice(open + 1, close) : key;
}

/** A client recording each script call (`eval`, `evalsha`) and plain command (`GET`, `SET`) sent. */
function recorded(client: Redis): { client: Redis; calls: string[]; duplicates: Redis[] } {
  const counted = countedClient(client);
  const proxy = new Proxy(counted.client, {
    get(target, property, receiver) {
      const value = Reflect.get(target, property, receiver);
      if (property !== 'get' && property !== 'set') return value;
      return (...args: unknown[]) => {
        counted.calls.push(property.toUpperCase());
        return (value as (...a: unknown[]) => unknown).apply(target, args);
      };
    },
  });
  return { ...counted, client: proxy };
}

redis.describe('the cache layer on real Redis', () => {
  cacheLayerConformance(
    'Redis layer (server clock)',
    () => {
      const stores = redisStores(redis.client(), { prefix: redis.prefix, timeoutMs: 2_000 });
      return {
        layer: stores.cacheLayer,
        now: () => Date.now(),
        elapse: (ms) => sleep(ms),
        slackMs: 50,
        close: () => stores.close(),
      };
    },
    { describe, it },
  );

  it('an entry is one string <graceMs>:<payload> with PX ttlMs + graceMs; versions have no TTL; claims their own', async () => {
    const { cacheLayer: layer } = redisStores(redis.client(), { prefix: redis.prefix });
    const admin = redis.admin();
    await layer.set('user:42', 'a:b 😀\u0000', 5_000, 3_000);
    const entry = `${redis.prefix}cache:{user:42}`;
    expect(layer.keyOf('user:42')).toBe(entry);
    expect(await admin.get(entry)).toBe('3000:a:b 😀\u0000');
    expect(await admin.pttl(entry)).toBeGreaterThan(7_000);
    expect(await admin.pttl(entry)).toBeLessThanOrEqual(8_000);
    const read = await layer.get('user:42');
    expect(read).toMatchObject({ payload: 'a:b 😀\u0000', graceMs: 3_000 });
    expect(read!.remainingMs).toBeGreaterThan(7_000);
    expect(read!.remainingMs).toBeLessThanOrEqual(8_000);

    expect(await layer.bumpVersion('tenant:7', 'clear tenant:7')).toBe(1);
    const version = `${redis.prefix}cache-version:{tenant:7}`;
    expect(layer.versionKeyOf('tenant:7')).toBe(version);
    expect(await admin.get(version)).toBe('1');
    expect(await admin.pttl(version)).toBe(-1);

    expect(await layer.claimLoad('user:42', 'owner-1', 4_000)).toBe(true);
    const claim = `${redis.prefix}cache-load:{user:42}`;
    expect(layer.claimKeyOf('user:42')).toBe(claim);
    expect(await admin.get(claim)).toBe('owner-1');
    expect(await admin.pttl(claim)).toBeGreaterThan(3_000);
    expect(await admin.pttl(claim)).toBeLessThanOrEqual(4_000);
    expect(await redis.keys()).toEqual([claim, entry, version].sort());

    await layer.releaseLoad('user:42', 'owner-1');
    await layer.delete('user:42');
    expect(await redis.keys()).toEqual([version]);
    expect(layer.channel).toBe(`${redis.prefix}cache:bus`);
  });

  it('every key is its own hash tag, the empty key and keys with braces included', async () => {
    const { cacheLayer: layer } = redisStores(redis.client(), { prefix: redis.prefix });
    for (const key of ['a}b{c', '{x}', 'tenant:{7}:acct', ' spaced ', '😀']) {
      expect(hashTag(layer.keyOf(key)), key).toBe(key.split('}')[0]);
      expect(hashTag(layer.claimKeyOf(key)), key).toBe(hashTag(layer.keyOf(key)));
    }
    // The empty key: an empty tag, so Cluster hashes the whole key, which is fine for one-key calls.
    expect(layer.keyOf('')).toBe(`${redis.prefix}cache:{}`);
    await layer.set('', 'empty', 5_000, 0);
    await layer.set('}', 'brace', 5_000, 0);
    expect((await layer.get(''))?.payload).toBe('empty');
    expect((await layer.get('}'))?.payload).toBe('brace');
    expect(await layer.bumpVersion('')).toBe(1);
    expect(await layer.version('')).toBe(1);
    expect(await redis.keys()).toEqual(
      [`${redis.prefix}cache-version:{}`, `${redis.prefix}cache:{}`, `${redis.prefix}cache:{}}`].sort(),
    );
  });

  it('one script call or one command per operation: EVAL the first time per script and client, EVALSHA after', async () => {
    const { client, calls } = recorded(redis.client());
    const { cacheLayer: layer } = redisStores(client, { prefix: redis.prefix });
    await layer.set('k', 'v', 5_000, 0);
    await layer.set('k', 'v', 5_000, 0, 'set k');
    expect(await layer.get('k')).toBeDefined();
    expect(await layer.get('absent')).toBeUndefined();
    await layer.delete('k', 'delete k');
    await layer.delete('k');
    expect(await layer.version('ns')).toBe(0);
    expect(await layer.bumpVersion('ns', 'bumped')).toBe(1);
    expect(await layer.bumpVersion('ns')).toBe(2);
    expect(await layer.version('ns')).toBe(2);
    expect(await layer.claimLoad('k', 'a', 5_000)).toBe(true);
    expect(await layer.claimLoad('k', 'b', 5_000)).toBe(false);
    await layer.releaseLoad('k', 'b');
    await layer.releaseLoad('k', 'a');
    expect(calls).toEqual([
      'eval', // set
      'evalsha',
      'eval', // get
      'evalsha',
      'eval', // delete
      'evalsha',
      'GET', // version
      'eval', // bumpVersion
      'evalsha',
      'GET',
      'SET', // claimLoad
      'SET',
      'eval', // releaseLoad
      'evalsha',
    ]);
  });

  it('bumpVersion publishes its message as given, and nothing without one', async () => {
    const { cacheLayer: layer } = redisStores(redis.client(), { prefix: redis.prefix });
    const listener = redis.client();
    const heard: string[] = [];
    listener.on('message', (_channel: string, message: string) => heard.push(message));
    await listener.subscribe(layer.channel);
    await redis.admin().set(layer.versionKeyOf('big'), String(Number.MAX_SAFE_INTEGER - 1));
    const message = JSON.stringify({ ns: 'big', note: '😀 at 987654321987\u0000' });
    expect(await layer.bumpVersion('big', message)).toBe(Number.MAX_SAFE_INTEGER);
    expect(await layer.bumpVersion('quiet')).toBe(1);
    expect(await layer.bumpVersion('quiet')).toBe(2);
    expect(await layer.bumpVersion('other', '')).toBe(1);
    await layer.delete('k', 'last'); // every earlier message has arrived once this one has
    await expect.poll(() => heard).toEqual([message, '', 'last']);
  });

  it('a bump with a bad message is a TypeError: nothing sent, the version unchanged', async () => {
    const { client, calls } = recorded(redis.client());
    const { cacheLayer: layer } = redisStores(client, { prefix: redis.prefix });
    const listener = redis.client();
    const heard: string[] = [];
    listener.on('message', (_channel: string, message: string) => heard.push(message));
    await listener.subscribe(layer.channel);
    await expect(layer.bumpVersion('ns', 'v\uD800')).rejects.toThrow(TypeError);
    await expect(layer.bumpVersion('ns', 7 as never)).rejects.toThrow(/"message" to be a string/);
    await expect(layer.bumpVersion('ns', String as never)).rejects.toThrow(/"message" to be a string/);
    expect(calls).toEqual([]);
    await layer.delete('k', 'last');
    await expect.poll(() => heard).toEqual(['last']);
    expect(await layer.version('ns')).toBe(0);
  });

  it('a corrupted or foreign key is a StoreUnavailableError, never a hit, a miss or a version', async () => {
    const { cacheLayer: layer } = redisStores(redis.client(), { prefix: redis.prefix });
    const admin = redis.admin();
    const unavailable = async (call: Promise<unknown>, what: string) => {
      const error = (await call.catch((e: unknown) => e)) as Error;
      expect(isStoreUnavailableError(error), what).toBe(true);
      return error;
    };
    await admin.set(layer.keyOf('no grace'), 'payload', 'PX', 5_000);
    const error = await unavailable(layer.get('no grace'), 'a value without its grace');
    expect((error.cause as Error).message).toMatch(/^unexpected get script reply: ".*:payload"$/);
    await admin.set(layer.keyOf('no ttl'), '0:payload'); // never written by a layer: no PX
    await unavailable(layer.get('no ttl'), 'a value without a TTL');
    await admin.set(layer.keyOf('bad grace'), '-5:payload', 'PX', 5_000);
    await unavailable(layer.get('bad grace'), 'a negative grace');
    await admin.hset(layer.keyOf('hash'), 'x', '1');
    await unavailable(layer.get('hash'), 'a hash'); // WRONGTYPE
    await admin.set(layer.versionKeyOf('ns'), 'not a number');
    await unavailable(layer.version('ns'), 'a version holding no number');
    await unavailable(layer.bumpVersion('ns', 'm'), 'a bump of a version holding no number');
    expect(await admin.get(layer.versionKeyOf('ns'))).toBe('not a number');
    await admin.sadd(layer.claimKeyOf('set'), 'x');
    await unavailable(layer.releaseLoad('set', 'a'), 'a release of a claim of another type');
    // A write replaces whatever the key held, as SET does.
    await layer.set('hash', 'v', 5_000, 0);
    expect((await layer.get('hash'))?.payload).toBe('v');
  });

  it('messages reach the subscribers of every store set on the prefix, through one subscriber connection each', async () => {
    const first = recorded(redis.client());
    const second = recorded(redis.client());
    const a = redisStores(first.client, { prefix: redis.prefix });
    const b = redisStores(second.client, { prefix: redis.prefix });
    const elsewhere = redisStores(redis.client(), { prefix: `${redis.prefix}other:` });
    const heard: string[] = [];
    a.cacheLayer.subscribe(
      (message) => heard.push(`a ${message}`),
      () => heard.push('a reset'),
    );
    a.lock.watch('k', () => {}); // the lock's watch shares the connection
    b.cacheLayer.subscribe(
      (message) => heard.push(`b ${message}`),
      () => heard.push('b reset'),
    );
    elsewhere.cacheLayer.subscribe(
      (message) => heard.push(`elsewhere ${message}`),
      () => {},
    );
    expect([first.duplicates.length, second.duplicates.length]).toEqual([1, 1]);
    // Each subscriber is told once its subscription is in place (nothing before it was heard).
    await expect.poll(() => [...new Set(heard)].sort()).toEqual(['a reset', 'b reset']);
    heard.length = 0;
    await a.cacheLayer.set('k', 'v', 5_000, 0, 'set by a');
    await b.cacheLayer.delete('k', 'deleted by b');
    await b.cacheLayer.bumpVersion('ns', 'bumped by b');
    await a.cacheLayer.set('quiet', 'v', 5_000, 0);
    const expected = ['set by a', 'deleted by b', 'bumped by b'];
    await expect.poll(() => heard.filter((m) => m.startsWith('a '))).toEqual(expected.map((m) => `a ${m}`));
    await expect.poll(() => heard.filter((m) => m.startsWith('b '))).toEqual(expected.map((m) => `b ${m}`));
    await sleep(50);
    expect(heard.filter((m) => m.startsWith('elsewhere') || m.endsWith('reset'))).toEqual([]);
    await a.close();
    await b.close();
    await elsewhere.close();
    await expect
      .poll(() => [first.duplicates[0]!.status, second.duplicates[0]!.status])
      .toEqual(['end', 'end']);
  });

  it('onReset is called once the killed subscriber connection is back and subscribed (a server of our own); later messages are heard', async () => {
    const client = own!.client();
    const listening = redisStores(client, { prefix: 'reset:', timeoutMs: 1_000 });
    const publishing = redisStores(own!.client(), { prefix: 'reset:', timeoutMs: 1_000 });
    const heard: string[] = [];
    const unsubscribe = listening.cacheLayer.subscribe(
      (message) => heard.push(message),
      () => heard.push('reset'),
    );
    await expect.poll(() => heard).toEqual(['reset']); // subscribed
    await publishing.cacheLayer.delete('k', 'before');
    await expect.poll(() => heard).toEqual(['reset', 'before']);
    const killed = await own!.client().client('KILL', 'TYPE', 'pubsub');
    expect(killed).toBeGreaterThanOrEqual(1);
    await expect.poll(() => heard, { timeout: 5_000 }).toEqual(['reset', 'before', 'reset']);
    await publishing.cacheLayer.delete('k', 'after');
    await expect.poll(() => heard).toEqual(['reset', 'before', 'reset', 'after']);
    unsubscribe();
    unsubscribe(); // idempotent
    await publishing.cacheLayer.delete('k', 'unheard');
    await sleep(100);
    expect(heard).toEqual(['reset', 'before', 'reset', 'after']);
    await listening.close();
    await publishing.close();
  });

  it('SCRIPT FLUSH mid-run (a server of our own): NOSCRIPT reloads the scripts and the calls succeed', async () => {
    const { cacheLayer: layer } = redisStores(own!.client(), { prefix: 'noscript:' });
    await layer.set('k', 'v', 5_000, 0);
    await layer.bumpVersion('ns', 'm');
    await own!.client().script('FLUSH');
    expect((await layer.get('k'))?.payload).toBe('v');
    await layer.set('k', 'w', 5_000, 0);
    expect(await layer.bumpVersion('ns')).toBe(2);
    expect((await layer.get('k'))?.payload).toBe('w');
  });

  it('a black-holed Redis: every call rejects with StoreUnavailableError within the deadline', async () => {
    const proxy = await startFaultProxy({ target: redis.target });
    try {
      const proxied = redis.client({ url: proxy.url(redis.url) });
      await proxied.ping(); // connected before the 100 ms deadlines start to count
      const { cacheLayer: layer } = redisStores(proxied, { prefix: redis.prefix, timeoutMs: 100 });
      await layer.set('k', 'v', 5_000, 0);
      proxy.pause();
      const calls: [string, () => Promise<unknown>][] = [
        ['get', () => layer.get('k')],
        ['set', () => layer.set('k', 'v', 5_000, 0, 'm')],
        ['version', () => layer.version('ns')],
        ['claimLoad', () => layer.claimLoad('k', 'a', 5_000)],
      ];
      for (const [what, call] of calls) {
        const started = performance.now();
        const error = (await call().catch((e: unknown) => e)) as Error;
        const tookMs = performance.now() - started;
        expect(isStoreUnavailableError(error), what).toBe(true);
        expect(isTimeoutError(error.cause), what).toBe(true);
        expect(tookMs, what).toBeGreaterThanOrEqual(95);
        expect(tookMs, what).toBeLessThan(400);
      }
      proxy.resume();
      await expect.poll(async () => (await layer.get('k').catch(() => 'failed')) !== 'failed').toBe(true);
    } finally {
      await proxy.close();
    }
  });
});
