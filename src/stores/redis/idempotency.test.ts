/**
 * The Redis idempotency store against a scripted fake client: reply decoding, malformed replies,
 * and the subscriber's dispatch. The Lua itself runs on real Redis in test/idempotency/.
 */
import { EventEmitter } from 'node:events';
import { describe, expect, it } from 'vitest';
import { systemClock } from '../../core/clock.js';
import { isStoreUnavailableError } from '../../core/errors.js';
import { StoreDeadline } from './deadline.js';
import { type IdempotencyRedisClient, RedisIdempotencyStore } from './idempotency.js';
import { claimScript, completeScript, releaseScript, renewScript } from './idempotency-scripts.js';
import { redisStores } from './index.js';

class FakeSubscriber extends EventEmitter {
  status = 'wait';
  subscribed: string[] = [];
  disconnected = false;
  connect(): Promise<void> {
    this.status = 'ready';
    queueMicrotask(() => this.emit('ready'));
    return Promise.resolve();
  }
  subscribe(channel: string): Promise<number> {
    this.subscribed.push(channel);
    return Promise.resolve(1);
  }
  disconnect(): void {
    this.disconnected = true;
    this.status = 'end';
  }
}

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
