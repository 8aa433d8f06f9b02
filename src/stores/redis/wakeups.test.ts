import { describe, expect, it } from 'vitest';
import { FakeSubscriber } from '../../../test/support/redis-doubles.js';
import { redisStores } from './index.js';
import { RedisWakeups } from './wakeups.js';

function client() {
  const subscribers: FakeSubscriber[] = [];
  const fake = {
    eval: () => Promise.resolve(0),
    evalsha: () => Promise.resolve(0),
    duplicate: () => {
      const subscriber = new FakeSubscriber();
      subscribers.push(subscriber);
      return subscriber;
    },
  };
  return { client: fake, subscribers };
}

const turns = async (): Promise<void> => {
  for (let i = 0; i < 3; i++) await Promise.resolve();
};

describe('RedisWakeups: one subscriber connection per store set', () => {
  it('the idempotency and lock stores share it; a message wakes only its channel’s watchers of its key', async () => {
    const { client: fake, subscribers } = client();
    const stores = redisStores(fake as never, { prefix: 'p:' });
    const woken: string[] = [];
    stores.lock.watch('k', () => woken.push('lock k'));
    stores.idempotency.watch('k', () => woken.push('idem k'));
    stores.lock.watch('other', () => woken.push('lock other'));
    expect(subscribers).toHaveLength(1);
    const subscriber = subscribers[0]!;
    await turns();
    // (SUBSCRIBE of a subscribed channel is a no-op: a watch between the status turning ready and
    // the 'ready' event may send one twice)
    expect([...new Set(subscriber.subscribed)].sort()).toEqual(['p:idem:wake', 'p:lock:wake']);
    subscriber.emit('message', 'p:lock:wake', 'p:lock:{k}'); // the lock publishes its Redis key
    expect(woken).toEqual(['lock k']);
    subscriber.emit('message', 'p:idem:wake', 'k');
    subscriber.emit('message', 'p:elsewhere', 'k');
    expect(woken).toEqual(['lock k', 'idem k']);
    await stores.close();
    expect(subscriber.disconnected).toBe(true);
  });

  it('a channel first watched once the connection is ready is subscribed at once, and only once', async () => {
    const { client: fake, subscribers } = client();
    const wakeups = new RedisWakeups(fake);
    wakeups.watch('a', 'k', () => {});
    await turns();
    const subscriber = subscribers[0]!;
    expect(subscriber.subscribed).toEqual(['a']);
    wakeups.watch('b', 'k', () => {});
    wakeups.watch('b', 'j', () => {});
    wakeups.watch('a', 'j', () => {});
    expect(subscriber.subscribed).toEqual(['a', 'b']);
    subscriber.emit('ready'); // after a reconnect: every channel in use again
    expect(subscriber.subscribed).toEqual(['a', 'b', 'a', 'b']);
  });

  it('closing one store drops its channel only; closing the last in use disconnects', async () => {
    const { client: fake, subscribers } = client();
    const stores = redisStores(fake as never, { prefix: 'p:' });
    let lockWoken = 0;
    let idemWoken = 0;
    stores.lock.watch('k', () => lockWoken++);
    stores.idempotency.watch('k', () => idemWoken++);
    await turns();
    const subscriber = subscribers[0]!;
    stores.lock.close();
    expect(subscriber.unsubscribed).toEqual(['p:lock:wake']);
    expect(subscriber.disconnected).toBe(false);
    subscriber.emit('message', 'p:lock:wake', 'p:lock:{k}');
    subscriber.emit('message', 'p:idem:wake', 'k');
    expect([lockWoken, idemWoken]).toEqual([0, 1]);
    stores.lock.watch('k', () => lockWoken++); // a closed store's watch never wakes
    subscriber.emit('message', 'p:lock:wake', 'p:lock:{k}');
    expect(lockWoken).toBe(0);
    stores.idempotency.close();
    expect(subscriber.disconnected).toBe(true);
    expect(subscribers).toHaveLength(1);
  });

  it('after the store set’s close(), no watch opens a connection or wakes', async () => {
    const { client: fake, subscribers } = client();
    const stores = redisStores(fake as never, { prefix: 'p:' });
    await stores.close();
    stores.lock.watch('k', () => {});
    stores.idempotency.watch('k', () => {});
    expect(subscribers).toHaveLength(0);
  });

  it('a bad key or wake, or a client without duplicate(), gives a watch that never wakes', () => {
    const { client: fake, subscribers } = client();
    const wakeups = new RedisWakeups(fake);
    expect(wakeups.watch('c', '', () => {})).toBeTypeOf('function');
    expect(wakeups.watch('c', 1 as never, () => {})).toBeTypeOf('function');
    expect(wakeups.watch('c', 'k', 'wake' as never)).toBeTypeOf('function');
    expect(subscribers).toHaveLength(0);
    expect(new RedisWakeups({}).watch('c', 'k', () => {})).toBeTypeOf('function');
  });

  it('redisStores: .lock and .fence are created once each', () => {
    const stores = redisStores(client().client as never);
    expect(stores.lock).toBe(stores.lock);
    expect(stores.fence).toBe(stores.fence);
    expect(stores.lock.timeoutMs).toBe(100);
  });
});

describe('RedisWakeups: connections that are not ready, or lack a part', () => {
  /** A subscriber that stays `connecting` until the test says it is ready. */
  class SlowSubscriber extends FakeSubscriber {
    override connect(): Promise<void> {
      this.status = 'connecting';
      return Promise.resolve();
    }
  }

  it('channels watched while the connection is connecting are subscribed once each, when it is ready', async () => {
    const subscriber = new SlowSubscriber();
    const wakeups = new RedisWakeups({ duplicate: () => subscriber });
    wakeups.watch('a', 'k', () => {});
    wakeups.watch('b', 'k', () => {});
    await turns();
    expect(subscriber.subscribed).toEqual([]);
    subscriber.status = 'ready';
    subscriber.emit('ready');
    expect(subscriber.subscribed).toEqual(['a', 'b']);
  });

  it('dropping a channel is safe with a subscriber that cannot unsubscribe, or with no subscriber at all', () => {
    const bare = new FakeSubscriber();
    Object.assign(bare, { unsubscribe: undefined });
    const withoutUnsubscribe = new RedisWakeups({ duplicate: () => bare });
    withoutUnsubscribe.watch('a', 'k', () => {});
    withoutUnsubscribe.watch('b', 'k', () => {});
    expect(() => withoutUnsubscribe.drop('a')).not.toThrow();
    expect(bare.disconnected).toBe(false); // 'b' is still in use

    const noSubscriber = new RedisWakeups({}); // a client without duplicate(): waiters poll
    noSubscriber.watch('a', 'k', () => {});
    noSubscriber.watch('b', 'k', () => {});
    expect(() => noSubscriber.drop('a')).not.toThrow();
  });
});
