/**
 * The Redis lock and fence stores against real Redis: the conformance suites (the same the memory
 * stores pass on a FakeClock), plus what only Redis has: the key layout and its hash tags, one
 * script call per operation, fences that keep increasing after Redis lost its data (a server of our
 * own, flushed), stale owners that never touch a successor, the server's clock, and wake-ups
 * across clients on the store set's one subscriber.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import type { Redis } from 'ioredis';
import { describe, expect, it } from 'vitest';
import { isStoreUnavailableError } from '../../src/core/errors.js';
import { isStaleFenceError, type StaleFenceError } from '../../src/lock/errors.js';
import type { AcquiredLease } from '../../src/lock/store.js';
import { redisStores } from '../../src/stores/redis/index.js';
import { FENCE_RETENTION_MS } from '../../src/stores/redis/lock-scripts.js';
import { fenceStoreConformance, lockStoreConformance } from '../../src/testing/lock-conformance.js';
import { startPrivateRedis } from '../support/private-redis.js';
import { countedClient } from '../support/redis-doubles.js';
import { useRedis } from '../support/services.js';

const redis = await useRedis();
const own = await startPrivateRedis();

/** What Redis Cluster hashes a key by: its `{hash tag}` if it has a non-empty one, else the key. */
function hashTag(key: string): string {
  const open = key.indexOf('{');
  const close = open === -1 ? -1 : key.indexOf('}', open + 1);
  return close > open + 1 ? key.slice(open + 1, close) : key;
}

function leaseOf(lease: AcquiredLease | undefined): AcquiredLease {
  if (lease === undefined) throw new Error('expected a lease, got undefined');
  return lease;
}

/** The server's clock in µs (TIME), as a number. */
async function serverMicros(client: Redis): Promise<number> {
  const [sec, usec] = await client.time();
  return Number(sec) * 1e6 + Number(usec);
}

redis.describe('lock and fence stores on real Redis', () => {
  lockStoreConformance(
    'Redis store (server clock)',
    () => {
      const stores = redisStores(redis.client(), { prefix: redis.prefix, timeoutMs: 2_000 });
      return { store: stores.lock, elapse: (ms) => sleep(ms), slackMs: 50, close: () => stores.close() };
    },
    { describe, it },
  );

  fenceStoreConformance(
    'Redis store',
    () => {
      const stores = redisStores(redis.client(), { prefix: redis.prefix, timeoutMs: 2_000 });
      return {
        store: stores.fence,
        write: (resource, fence, value) => stores.fence.write(resource, fence, value),
        read: async (resource) => (await stores.fence.read(resource))?.value,
        close: () => stores.close(),
      };
    },
    { describe, it },
  );

  it('a lock is two keys under one hash tag: the lease (owner, PX) and the fence (no TTL)', async () => {
    const { lock } = redisStores(redis.client(), { prefix: redis.prefix });
    const { fence, expiresAt } = leaseOf(await lock.acquire('user:42', 'owner-1', 5_000));
    const key = `${redis.prefix}lock:{user:42}`;
    expect(lock.keyOf('user:42')).toBe(key);
    expect(await redis.keys()).toEqual([key, `${key}:fence`]);
    expect(await redis.admin().get(key)).toBe('owner-1');
    expect(await redis.admin().get(`${key}:fence`)).toBe(String(fence));
    expect(await redis.admin().pttl(key)).toBeGreaterThan(4_000);
    // The fence key outlives every lease by far, but not forever: the server clock floors fences.
    const fenceTtl = await redis.admin().pttl(`${key}:fence`);
    expect(fenceTtl).toBeGreaterThan(FENCE_RETENTION_MS - 60_000);
    expect(fenceTtl).toBeLessThanOrEqual(FENCE_RETENTION_MS);
    // expiresAt is on the server's clock: its TIME now plus the lease, give or take the round trip.
    const now = (await serverMicros(redis.admin())) / 1_000;
    expect(expiresAt).toBeGreaterThan(now + 4_000);
    expect(expiresAt).toBeLessThanOrEqual(now + 5_000);
    expect(await lock.release('user:42', 'owner-1')).toBe(true);
    expect(await redis.keys()).toEqual([`${key}:fence`]);
    for (const hostile of ['a}b{c', '{x}', 'tenant:{7}:acct', ' spaced ', '😀']) {
      const head = lock.keyOf(hostile);
      expect(hashTag(head), hostile).toBe(hostile.split('}')[0]);
      expect(hashTag(`${head}:fence`), hostile).toBe(hashTag(head));
    }
    // A key starting with } would make an empty tag (each key hashed whole: CROSSSLOT on a
    // Cluster): it and a key starting with NUL get a NUL in front, and keep one tag.
    for (const hostile of ['}', '}x', '\u0000', '\u0000}x']) {
      const head = lock.keyOf(hostile);
      expect(head, JSON.stringify(hostile)).toBe(`${redis.prefix}lock:{\u0000${hostile}}`);
      expect(hashTag(`${head}:fence`)).toBe(hashTag(head));
      expect(hashTag(head).length).toBeGreaterThan(0);
    }
    expect(new Set(['}', '}x', '\u0000', '\u0000}x'].map((k) => lock.keyOf(k))).size).toBe(4);
  });

  it('a fenced resource is one hash, f and v, with no TTL; fences up to 2^53 − 1 round-trip exactly', async () => {
    const { fence } = redisStores(redis.client(), { prefix: redis.prefix });
    const key = `${redis.prefix}fence:{balance:7}`;
    await fence.write('balance:7', Number.MAX_SAFE_INTEGER - 1, 'one');
    await fence.write('balance:7', Number.MAX_SAFE_INTEGER, 'two');
    expect(fence.keyOf('balance:7')).toBe(key);
    expect(await redis.keys()).toEqual([key]);
    expect(await redis.admin().hgetall(key)).toEqual({ f: '9007199254740991', v: 'two' });
    expect(await redis.admin().pttl(key)).toBe(-1);
    expect(await fence.highest('balance:7')).toBe(Number.MAX_SAFE_INTEGER);
    expect(await fence.read('balance:7')).toEqual({ fence: Number.MAX_SAFE_INTEGER, value: 'two' });
    const error = (await fence
      .write('balance:7', Number.MAX_SAFE_INTEGER - 1, 'late')
      .catch((e) => e)) as StaleFenceError;
    expect(isStaleFenceError(error)).toBe(true);
    expect(error.highest).toBe(Number.MAX_SAFE_INTEGER);
    expect(await fence.read('never')).toBeUndefined();
    expect(await fence.highest('never')).toBeUndefined();
  });

  it('one script call per operation: EVAL the first time per script and client, EVALSHA after', async () => {
    const { client, calls } = countedClient(redis.client());
    const { lock, fence } = redisStores(client, { prefix: redis.prefix });
    const { fence: f } = leaseOf(await lock.acquire('k', 'a', 5_000));
    expect(await lock.acquire('k', 'b', 5_000)).toBeUndefined();
    expect(await lock.renew('k', 'a', 5_000)).toBe(true);
    expect(await lock.renew('k', 'a', 5_000)).toBe(true);
    expect(await lock.release('k', 'a')).toBe(true);
    expect(await lock.release('k', 'a')).toBe(false);
    await fence.write('r', f, 'v');
    await fence.write('r', f, 'v');
    await fence.read('r');
    await fence.highest('r');
    await fence.highest('r');
    expect(calls).toEqual([
      'eval', // acquire
      'evalsha',
      'eval', // renew
      'evalsha',
      'eval', // release
      'evalsha',
      'eval', // write
      'evalsha',
      'eval', // read
      'eval', // highest
      'evalsha',
    ]);
  });

  it('fences keep increasing after Redis lost its data: FLUSHALL, or the fence key alone (a server of our own)', async () => {
    const admin = own.client();
    const { lock } = redisStores(own.client(), { prefix: 'flush:' });
    const first = leaseOf(await lock.acquire('k', 'a', 60_000)).fence;
    await admin.flushall();
    const before = await serverMicros(admin);
    const second = leaseOf(await lock.acquire('k', 'b', 60_000)).fence;
    expect(second).toBeGreaterThan(first);
    expect(second).toBeGreaterThanOrEqual(before); // the TIME floor: the counter was gone
    expect(await lock.release('k', 'b')).toBe(true);
    await admin.del(`${lock.keyOf('k')}:fence`);
    const third = leaseOf(await lock.acquire('k', 'c', 60_000)).fence;
    expect(third).toBeGreaterThan(second);
    expect(await lock.release('k', 'c')).toBe(true);
    // A counter ahead of the clock: the next fence is the counter + 1.
    const ahead = (await serverMicros(admin)) + 1e9;
    await admin.set(`${lock.keyOf('k')}:fence`, String(ahead));
    expect(leaseOf(await lock.acquire('k', 'd', 60_000)).fence).toBe(ahead + 1);
    expect(await admin.get(`${lock.keyOf('k')}:fence`)).toBe(String(ahead + 1));
  });

  it('SCRIPT FLUSH mid-run (a server of our own): NOSCRIPT reloads the scripts and the calls succeed', async () => {
    const { lock, fence } = redisStores(own.client(), { prefix: 'noscript:' });
    const { fence: f } = leaseOf(await lock.acquire('k', 'a', 5_000));
    await fence.write('r', f, 'v');
    await own.client().script('FLUSH');
    expect(await lock.renew('k', 'a', 5_000)).toBe(true);
    expect(await lock.release('k', 'a')).toBe(true);
    expect(leaseOf(await lock.acquire('k', 'b', 5_000)).fence).toBeGreaterThan(f);
    await own.client().script('FLUSH');
    await fence.write('r', f, 'again');
    expect(await fence.read('r')).toEqual({ fence: f, value: 'again' });
  });

  it('a stale owner’s renew and release never touch the successor’s lease', async () => {
    const { lock } = redisStores(redis.client(), { prefix: redis.prefix });
    const key = lock.keyOf('k');
    const stale = leaseOf(await lock.acquire('k', 'stale', 100)).fence;
    await sleep(150);
    const successor = leaseOf(await lock.acquire('k', 'successor', 5_000)).fence;
    expect(successor).toBeGreaterThan(stale);
    expect(await lock.renew('k', 'stale', 60_000)).toBe(false);
    expect(await lock.release('k', 'stale')).toBe(false);
    expect(await redis.admin().get(key)).toBe('successor');
    expect(await redis.admin().pttl(key)).toBeLessThanOrEqual(5_000);
    expect(await redis.admin().pttl(key)).toBeGreaterThan(4_000);
    expect(await redis.admin().get(`${key}:fence`)).toBe(String(successor));
    // Another owner's renew of a live lease does not extend it either.
    expect(await lock.renew('k', 'other', 60_000)).toBe(false);
    expect(await redis.admin().pttl(key)).toBeLessThanOrEqual(5_000);
  });

  it('a corrupted key is a StoreUnavailableError, never a held or free lock, and the just-taken lease is given back', async () => {
    const { lock, fence } = redisStores(redis.client(), { prefix: redis.prefix });
    const admin = redis.admin();
    await admin.hset(lock.keyOf('hash'), 'x', '1');
    await expect(lock.acquire('hash', 'a', 1_000)).rejects.toSatisfy(isStoreUnavailableError);
    await expect(lock.renew('hash', 'a', 1_000)).rejects.toSatisfy(isStoreUnavailableError);
    await expect(lock.release('hash', 'a')).rejects.toSatisfy(isStoreUnavailableError);
    // A fence key holding no number: the lease taken is given back and the key keeps its value.
    await admin.set(`${lock.keyOf('junk')}:fence`, 'not a number');
    await expect(lock.acquire('junk', 'a', 1_000)).rejects.toSatisfy(isStoreUnavailableError);
    expect(await admin.exists(lock.keyOf('junk'))).toBe(0);
    expect(await admin.get(`${lock.keyOf('junk')}:fence`)).toBe('not a number');
    // A fence key of another type: the same.
    await admin.sadd(`${lock.keyOf('set')}:fence`, 'x');
    await expect(lock.acquire('set', 'a', 1_000)).rejects.toSatisfy(isStoreUnavailableError);
    expect(await admin.exists(lock.keyOf('set'))).toBe(0);
    expect(await admin.smembers(`${lock.keyOf('set')}:fence`)).toEqual(['x']);
    await admin.set(fence.keyOf('r'), 'a string');
    await expect(fence.write('r', 1, 'v')).rejects.toSatisfy(isStoreUnavailableError);
    await expect(fence.read('r')).rejects.toSatisfy(isStoreUnavailableError);
  });

  it('a release publishes only when a waiter marked the lease: by watching it, or by a refused acquire while watching', async () => {
    const { client, duplicates } = countedClient(redis.client());
    const watching = redisStores(client, { prefix: redis.prefix });
    const other = redisStores(redis.client(), { prefix: redis.prefix });
    const listener = redis.client();
    const published: string[] = [];
    listener.on('message', (_channel: string, message: string) => published.push(message));
    await listener.subscribe(watching.lock.channel);
    const woken: string[] = [];

    // Nobody waits: nothing is published.
    leaseOf(await other.lock.acquire('k', 'a', 5_000));
    expect(await other.lock.release('k', 'a')).toBe(true);

    // Watching a held key marks its lease: the owner still renews and releases it, and the release
    // wakes the watcher. The mark is the owner followed by one byte 0xFF.
    leaseOf(await other.lock.acquire('k', 'b', 5_000));
    const unwatch = watching.lock.watch('k', () => woken.push('k'));
    watching.lock.watch('unrelated', () => woken.push('unrelated'));
    expect(duplicates).toHaveLength(1);
    await expect
      .poll(() => redis.admin().getBuffer(watching.lock.keyOf('k')))
      .toEqual(Buffer.concat([Buffer.from('b'), Buffer.from([0xff])]));
    expect(await other.lock.acquire('k', 'c', 5_000)).toBeUndefined();
    expect(await other.lock.renew('k', 'b', 5_000)).toBe(true);
    expect(await other.lock.release('k', 'c')).toBe(false); // refused: publishes nothing
    expect(await other.lock.renew('k', 'b\u00ff', 5_000)).toBe(false); // an owner that looks like the mark
    await expect.poll(() => woken.sort()).toEqual(['k', 'unrelated']); // subscribed: each looks once
    woken.length = 0;
    expect(await other.lock.release('k', 'b')).toBe(true);
    await expect.poll(() => woken).toEqual(['k']);

    // A lease taken after the watch began: this process's refused acquire marks it.
    leaseOf(await other.lock.acquire('k', 'd', 5_000));
    expect(await watching.lock.acquire('k', 'w', 5_000)).toBeUndefined();
    expect(await other.lock.release('k', 'd')).toBe(true);
    await expect.poll(() => woken).toEqual(['k', 'k']);

    // A refused acquire from a process that does not watch the key marks nothing.
    leaseOf(await other.lock.acquire('k', 'e', 5_000));
    expect(await other.lock.acquire('k', 'x', 5_000)).toBeUndefined();
    expect(await redis.admin().get(watching.lock.keyOf('k'))).toBe('e');
    expect(await other.lock.release('k', 'e')).toBe(true);

    unwatch();
    unwatch(); // idempotent
    leaseOf(await other.lock.acquire('k', 'f', 5_000));
    expect(await watching.lock.acquire('k', 'w', 5_000)).toBeUndefined(); // no longer watched: no mark
    expect(await other.lock.release('k', 'f')).toBe(true);
    await sleep(100);
    expect(woken).toEqual(['k', 'k']);
    expect(published).toEqual([watching.lock.keyOf('k'), watching.lock.keyOf('k')]);
    await watching.close();
    await expect.poll(() => duplicates[0]!.status).toBe('end');
  });

  it('one subscriber serves the lock and idempotency stores', async () => {
    const { client, duplicates } = countedClient(redis.client());
    const watching = redisStores(client, { prefix: redis.prefix });
    const other = redisStores(redis.client(), { prefix: redis.prefix });
    const woken: string[] = [];
    leaseOf(await other.lock.acquire('k', 'a', 5_000));
    // Each watcher saw its key held (as the patterns do), so its watch marks the key as awaited.
    const claim = await other.idempotency.claim('k', 'fp', 5_000);
    if (claim.status !== 'claimed') throw new Error('expected a claim');
    watching.lock.watch('k', () => woken.push('lock k'));
    watching.idempotency.watch('k', () => woken.push('idem k'));
    expect(duplicates).toHaveLength(1);
    await expect.poll(() => woken.sort()).toEqual(['idem k', 'lock k']); // subscribed: each looks once
    woken.length = 0;
    expect(await other.lock.release('k', 'a')).toBe(true);
    await expect.poll(() => woken).toEqual(['lock k']);
    await other.idempotency.release('k', claim.token);
    await expect.poll(() => woken).toEqual(['lock k', 'idem k']);
    await watching.close();
  });

  it('bad input rejects with a TypeError before any call', async () => {
    const { client, calls } = countedClient(redis.client());
    const { lock, fence } = redisStores(client, { prefix: redis.prefix });
    const bad: [string, () => Promise<unknown>][] = [
      ['empty key', () => lock.acquire('', 'a', 1_000)],
      ['lone surrogate', () => lock.acquire('\ud800', 'a', 1_000)],
      ['owner', () => lock.acquire('k', 5 as never, 1_000)],
      ['ttl 0', () => lock.acquire('k', 'a', 0)],
      ['ttl huge', () => lock.acquire('k', 'a', 1e300)],
      ['renew ttl', () => lock.renew('k', 'a', Number.NaN)],
      ['release owner', () => lock.release('k', '')],
      ['resource', () => fence.write('', 1, 'v')],
      ['fence', () => fence.write('r', 2 ** 53, 'v')],
      ['value', () => fence.write('r', 1, '\udc00')],
    ];
    for (const [what, call] of bad) await expect(call(), what).rejects.toBeInstanceOf(TypeError);
    expect(calls).toEqual([]);
  });
});
