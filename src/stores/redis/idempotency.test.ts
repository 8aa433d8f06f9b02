/**
 * The Redis idempotency store against a scripted fake client: reply decoding, malformed replies,
 * and the subscriber's dispatch. The Lua itself runs on real Redis in test/idempotency/.
 */
import { EventEmitter } from 'node:events';
import { describe, expect, it } from 'vitest';
import { FakeSubscriber } from '../../../test/support/redis-doubles.js';
import { until } from '../../../test/support/until.js';
import { systemClock } from '../../core/clock.js';
import { isStoreUnavailableError } from '../../core/errors.js';
import type { KeyedWakers } from '../../core/keyed-wakers.js';
import { StoreDeadline } from './deadline.js';
import { type IdempotencyRedisClient, RedisIdempotencyStore } from './idempotency.js';
import { claimScript, completeScript, releaseScript, renewScript } from './idempotency-scripts.js';
import { redisStores } from './index.js';

function fake(...replies: unknown[]) {
  const subscribers: FakeSubscriber[] = [];
  const client: IdempotencyRedisClient = {
    eval: () => Promise.resolve(replies.shift()),
    evalsha: () => Promise.resolve(replies.shift()),
    duplicate: () => {
      const subscriber = new FakeSubscriber();
      subscribers.push(subscriber);
      return subscriber;
    },
  };
  const store = new RedisIdempotencyStore(client, 'p:', new StoreDeadline(systemClock, 1_000));
  return { store, subscribers };
}

describe('RedisIdempotencyStore replies', () => {
  it('decodes claim replies, Buffers as UTF-8 too, and keeps the token it sent', async () => {
    const { store } = fake(
      ['claimed'],
      [Buffer.from('completed'), Buffer.from('ünï 😀')],
      ['in_progress', 250],
      ['mismatch'],
    );
    const claimed = await store.claim('k', 'fp', 1_000);
    expect(claimed).toEqual({ status: 'claimed', token: expect.stringMatching(/^[0-9a-f-]{36}$/) });
    expect(await store.claim('k', 'fp', 1_000)).toEqual({ status: 'completed', result: 'ünï 😀' });
    expect(await store.claim('k', 'fp', 1_000)).toEqual({ status: 'in_progress', retryAfterMs: 250 });
    expect(await store.claim('k', 'fp', 1_000)).toEqual({ status: 'mismatch' });
  });

  it.each([[null], ['claimed'], [['what']], [['completed']], [['in_progress', 'soon']]])(
    'a malformed claim reply %j is a StoreUnavailableError',
    async (reply) => {
      await expect(fake(reply).store.claim('k', 'fp', 1_000)).rejects.toSatisfy(isStoreUnavailableError);
    },
  );

  it('owner operations map 1/0 to true/false, anything else to StoreUnavailableError', async () => {
    const { store } = fake(1, 0, 1, 2);
    expect(await store.complete('k', 't', 'r', 1_000)).toBe(true);
    expect(await store.release('k', 't')).toBe(false);
    expect(await store.renew('k', 't', 1_000)).toBe(true);
    await expect(store.renew('k', 't', 1_000)).rejects.toSatisfy(isStoreUnavailableError);
  });
});

describe('RedisIdempotencyStore.watch', () => {
  it('one subscriber; wakes only the key’s watchers, later, and a throwing waker breaks nothing', async () => {
    const { store, subscribers } = fake();
    const woken: string[] = [];
    store.watch('a', () => {
      throw new Error('boom');
    });
    const unwatch = store.watch('a', () => woken.push('a'));
    store.watch('a', () => woken.push('a2'));
    store.watch('b', () => woken.push('b'));
    expect(subscribers).toHaveLength(1);
    const subscriber = subscribers[0]!;
    await Promise.resolve();
    await Promise.resolve();
    expect(subscriber.subscribed).toEqual(['p:idem:wake']);
    expect(woken).toEqual(['a', 'a2', 'b']); // subscribed: every watcher looks once
    woken.length = 0;
    subscriber.emit('message', 'p:idem:wake', 'a');
    subscriber.emit('message', 'elsewhere', 'b');
    expect(woken).toEqual(['a', 'a2']);
    unwatch();
    subscriber.emit('message', 'p:idem:wake', 'a');
    expect(woken).toEqual(['a', 'a2', 'a2']);
    store.close();
    expect(subscriber.disconnected).toBe(true);
    subscriber.emit('message', 'p:idem:wake', 'b');
    expect(woken).toEqual(['a', 'a2', 'a2']);
  });

  it('never throws: no duplicate(), a throwing duplicate(), bad arguments', () => {
    const deadline = new StoreDeadline(systemClock, 1_000);
    const base = { eval: () => Promise.resolve(0), evalsha: () => Promise.resolve(0) };
    const none = new RedisIdempotencyStore(base, 'p:', deadline);
    expect(none.watch('k', () => {})).toBeTypeOf('function');
    const throwing = new RedisIdempotencyStore(
      {
        ...base,
        duplicate: () => {
          throw new Error('no');
        },
      },
      'p:',
      deadline,
    );
    throwing.watch('k', () => {})();
    expect(none.watch(undefined as never, () => {})).toBeTypeOf('function');
    expect(none.watch('k', 'wake' as never)).toBeTypeOf('function');
  });

  it('redisStores: .idempotency is created once; close() resolves and closes only the subscriber', async () => {
    const subscribers: FakeSubscriber[] = [];
    const client = {
      eval: () => Promise.resolve(0),
      evalsha: () => Promise.resolve(0),
      duplicate: () => {
        const subscriber = new FakeSubscriber();
        subscribers.push(subscriber);
        return subscriber;
      },
    };
    const stores = redisStores(client as never);
    expect(stores.idempotency).toBe(stores.idempotency);
    stores.idempotency.watch('k', () => {});
    await stores.close();
    await stores.close();
    expect(subscribers.map((s) => s.disconnected)).toEqual([true]);
  });
});

describe('idempotency scripts', () => {
  it('each writes only KEYS[1]; complete and release publish in the same script', () => {
    for (const script of [claimScript, completeScript, releaseScript, renewScript]) {
      expect(script).toContain('local key = KEYS[1]');
      expect(script).not.toMatch(/KEYS\[2\]/);
    }
    expect(completeScript).toContain("redis.call('PUBLISH', ARGV[4], ARGV[5])");
    expect(releaseScript).toContain("redis.call('PUBLISH', ARGV[2], ARGV[3])");
    expect(renewScript).not.toContain('PUBLISH');
  });
});

describe('RedisIdempotencyStore input and reply errors name what was wrong', () => {
  it.each([
    [
      'a non-string fingerprint',
      (s: RedisIdempotencyStore) => s.claim('k', 1 as never, 1_000),
      /"fingerprint" to be a string/,
    ],
    [
      'a lone surrogate',
      (s: RedisIdempotencyStore) => s.claim('k', '\uD800', 1_000),
      /"fingerprint" to be well-formed UTF-16/,
    ],
    [
      'a lease past 2^53',
      (s: RedisIdempotencyStore) => s.claim('k', 'fp', 2 ** 53),
      /"leaseMs" to be a positive safe integer/,
    ],
    [
      'a non-string result',
      (s: RedisIdempotencyStore) => s.complete('k', 't', 1 as never, 1_000),
      /"result" to be a string/,
    ],
    ['a fractional retention', (s: RedisIdempotencyStore) => s.complete('k', 't', 'r', 1.5), /"ttlMs"/],
    [
      'a non-string token',
      (s: RedisIdempotencyStore) => s.release('k', 1 as never),
      /"token" to be a string/,
    ],
    [
      'a non-string token completing',
      (s: RedisIdempotencyStore) => s.complete('k', 1 as never, 'r', 1_000),
      /"token" to be a string/,
    ],
    [
      'a non-string token renewing',
      (s: RedisIdempotencyStore) => s.renew('k', 1 as never, 1_000),
      /"token" to be a string/,
    ],
    ['a zero renewal', (s: RedisIdempotencyStore) => s.renew('k', 't', 0), /"leaseMs"/],
  ])('%s is a TypeError naming the argument', async (_, call, message) => {
    const error = await call(fake(1).store).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(TypeError);
    expect((error as Error).message).toMatch(message);
  });

  it('the largest safe lease is accepted', async () => {
    expect(await fake(['claimed']).store.claim('k', 'fp', Number.MAX_SAFE_INTEGER)).toMatchObject({
      status: 'claimed',
    });
  });

  it.each([
    ['claim', (s: RedisIdempotencyStore) => s.claim('k', 'fp', 1_000)],
    ['complete', (s: RedisIdempotencyStore) => s.complete('k', 't', 'r', 1_000)],
    ['release', (s: RedisIdempotencyStore) => s.release('k', 't')],
    ['renew', (s: RedisIdempotencyStore) => s.renew('k', 't', 1_000)],
  ])('a malformed %s reply names the script and the reply', async (what, call) => {
    const error = (await call(fake('junk').store).catch((e: unknown) => e)) as Error;
    expect(isStoreUnavailableError(error)).toBe(true);
    expect((error.cause as Error).message).toBe(`unexpected ${what} script reply: "junk"`);
  });

  it.each([[['what', 5]], [['in_progress']], [['in_progress', null]]])(
    'a claim reply %j is malformed too',
    async (reply) => {
      await expect(fake(reply).store.claim('k', 'fp', 1_000)).rejects.toSatisfy(isStoreUnavailableError);
    },
  );
});

/** A connection whose socket counts its unrefs. */
function socket() {
  const connection = Object.assign(new EventEmitter(), { unrefs: 0, stream: { unref: () => {} } });
  connection.stream.unref = () => {
    connection.unrefs += 1;
  };
  return connection;
}

describe('RedisIdempotencyStore subscriber connection', () => {
  it('bad arguments and a closed store never open a subscriber', () => {
    const { store, subscribers } = fake();
    store.watch(undefined as never, () => {});
    store.watch('', () => {});
    store.watch('k', 'wake' as never);
    expect(subscribers).toHaveLength(0);
    store.close();
    store.watch('k', () => {});
    expect(subscribers).toHaveLength(0);
  });

  it('an unwatched key leaves no entry behind, and unwatching twice is harmless', () => {
    const { store } = fake();
    const unwatch = store.watch('k', () => {});
    const channels = (store as unknown as { wakeups: { channels: Map<string, { wakers: KeyedWakers }> } })
      .wakeups.channels;
    const watchers = channels.get('p:idem:wake')!.wakers;
    expect(watchers.size).toBe(1);
    unwatch();
    expect(watchers.size).toBe(0);
    const again = store.watch('k', () => {});
    unwatch(); // a second call of a spent unwatch leaves the new watcher alone
    expect(watchers.has('k')).toBe(true);
    again();
    expect(watchers.size).toBe(0);
  });

  it('the socket is unref’d on connect, a Cluster’s node connections too; a socket without unref is fine', () => {
    const { store, subscribers } = fake();
    store.watch('k', () => {});
    const own = socket();
    const subscriber = Object.assign(subscribers[0]!, { stream: own.stream });
    subscriber.emit('connect');
    expect(own.unrefs).toBe(1);
    const node = socket();
    subscriber.emit('+node', node);
    node.emit('connect');
    expect(node.unrefs).toBe(1);
    const bare = Object.assign(new EventEmitter(), { stream: {} });
    subscriber.emit('+node', bare);
    expect(() => bare.emit('connect')).not.toThrow();
    expect(() => subscriber.emit('error', new Error('ECONNRESET'))).not.toThrow();
  });

  it('once subscribed, the connection ioredis subscribes on is unref’d too', async () => {
    const { store, subscribers } = fake();
    const inner = socket();
    store.watch('k', () => {});
    Object.assign(subscribers[0]!, { subscriber: { getInstance: () => inner } });
    await until(() => inner.unrefs === 1, 'the inner connection is unref’d');
  });

  it('a subscriber without a reachable inner connection is fine (no unhandled rejection)', async () => {
    const unhandled: unknown[] = [];
    const onUnhandled = (reason: unknown): void => {
      unhandled.push(reason);
    };
    process.on('unhandledRejection', onUnhandled);
    try {
      const { store, subscribers } = fake();
      store.watch('k', () => {});
      Object.assign(subscribers[0]!, { subscriber: {} });
      await until(() => subscribers[0]!.subscribed.length === 1, 'the subscriber subscribes');
      await new Promise((resolve) => setImmediate(resolve));
      expect(unhandled).toEqual([]);
    } finally {
      process.off('unhandledRejection', onUnhandled);
    }
  });

  it('connects only a client that waits to be connected (a connecting one would reject)', () => {
    const connects: string[] = [];
    const subscriber = new FakeSubscriber();
    subscriber.status = 'connecting';
    subscriber.connect = () => {
      connects.push('connect');
      return Promise.reject(new Error('Redis is already connecting/connected'));
    };
    const store = new RedisIdempotencyStore(
      { eval: () => Promise.resolve(0), evalsha: () => Promise.resolve(0), duplicate: () => subscriber },
      'p:',
      new StoreDeadline(systemClock, 1_000),
    );
    store.watch('k', () => {});
    expect(connects).toEqual([]);
  });
});
