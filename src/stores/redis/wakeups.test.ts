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
    expect(subscriber.subscribed).toEqual(['p:lock:wake', 'p:idem:wake']);
    expect(woken.sort()).toEqual(['idem k', 'lock k', 'lock other']); // subscribed: each looks once
    woken.length = 0;
    subscriber.emit('message', 'p:lock:wake', 'p:lock:{k}'); // the lock publishes its Redis key
    expect(woken).toEqual(['lock k']);
    subscriber.emit('message', 'p:idem:wake', 'k');
    subscriber.emit('message', 'p:elsewhere', 'k');
    expect(woken).toEqual(['lock k', 'idem k']);
    await stores.close();
    expect(subscriber.disconnected).toBe(true);
  });

  it('a channel’s watchers are woken once it is subscribed, and after each resubscription (what was published before was lost)', async () => {
    const subscriber = new FakeSubscriber();
    const pending: (() => void)[] = [];
    subscriber.subscribe = (channel: string) => {
      subscriber.subscribed.push(channel);
      return new Promise((resolve) => pending.push(() => resolve(1)));
    };
    const wakeups = new RedisWakeups({ duplicate: () => subscriber });
    const woken: string[] = [];
    wakeups.watch('a', 'k', () => woken.push('a k'));
    wakeups.watch('a', 'j', () => woken.push('a j'));
    await turns();
    expect(woken).toEqual([]); // not before the subscription took hold
    for (const resolve of pending.splice(0)) resolve();
    await turns();
    expect([...new Set(woken)].sort()).toEqual(['a j', 'a k']);
    woken.length = 0;
    wakeups.watch('b', 'k', () => woken.push('b k')); // a channel added once ready
    for (const resolve of pending.splice(0)) resolve();
    await turns();
    expect(woken).toEqual(['b k']); // only that channel's watchers
    woken.length = 0;
    subscriber.emit('ready'); // a reconnect
    for (const resolve of pending.splice(0)) resolve();
    await turns();
    expect(woken.sort()).toEqual(['a j', 'a k', 'b k']);
    woken.length = 0;
    subscriber.subscribe = () => Promise.reject(new Error('Connection is closed.'));
    subscriber.emit('ready'); // a resubscription that fails wakes nobody
    await turns();
    expect(woken).toEqual([]);
    wakeups.close();
  });

  it("a channel added between the status turning ready and the 'ready' event is subscribed once, by the event; after a close, by the next ready", async () => {
    const subscriber = new FakeSubscriber(); // connect() sets the status at once, emits 'ready' later
    const wakeups = new RedisWakeups({ duplicate: () => subscriber });
    wakeups.watch('a', 'k', () => {});
    expect(subscriber.status).toBe('ready');
    wakeups.watch('b', 'k', () => {});
    expect(subscriber.subscribed).toEqual([]);
    await turns();
    expect(subscriber.subscribed).toEqual(['a', 'b']);
    subscriber.emit('close'); // the connection dropped: ioredis reconnects
    wakeups.watch('c', 'k', () => {});
    expect(subscriber.subscribed).toEqual(['a', 'b']);
    subscriber.emit('ready');
    expect(subscriber.subscribed).toEqual(['a', 'b', 'a', 'b', 'c']);
    wakeups.watch('d', 'k', () => {}); // live again: at once
    expect(subscriber.subscribed.at(-1)).toBe('d');
  });

  it("a successor subscriber is not live before its own 'ready'; a dropped one's late 'close' does not hold it back", async () => {
    const { client: fake, subscribers } = client();
    const wakeups = new RedisWakeups(fake);
    wakeups.watch('a', 'k', () => {});
    await turns();
    wakeups.drop('a'); // the last channel: disconnected
    wakeups.watch('b', 'k', () => {});
    wakeups.watch('c', 'k', () => {}); // before the successor's 'ready': its event subscribes it
    await turns();
    expect(subscribers).toHaveLength(2);
    expect(subscribers[1]!.subscribed).toEqual(['b', 'c']);
    subscribers[0]!.emit('close'); // late, from the first
    wakeups.watch('d', 'k', () => {});
    expect(subscribers[1]!.subscribed).toEqual(['b', 'c', 'd']);
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
    lockWoken = 0; // woken once subscribed
    idemWoken = 0;
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

describe('RedisWakeups.listen: every message of a channel, and a reset after each reconnect', () => {
  /** Wake-ups on a fake client, and a recorder of what a listener hears. */
  function listening() {
    const { client: fake, subscribers } = client();
    const wakeups = new RedisWakeups(fake);
    const heard: string[] = [];
    const listener = (name: string) =>
      [(message: string) => heard.push(`${name}: ${message}`), () => heard.push(`${name}: reset`)] as const;
    return { wakeups, subscribers, heard, listener };
  }

  it('hears every message of its channel, whatever it holds, and nothing of other channels', async () => {
    const { wakeups, subscribers, heard, listener } = listening();
    wakeups.listen('bus', ...listener('a'));
    await turns();
    const subscriber = subscribers[0]!;
    expect(subscriber.subscribed).toEqual(['bus']);
    expect(heard).toEqual(['a: reset']); // subscribed: what was published before was not heard
    heard.length = 0;
    subscriber.emit('message', 'bus', 'set k');
    subscriber.emit('message', 'bus', '');
    subscriber.emit('message', 'elsewhere', 'set k');
    expect(heard).toEqual(['a: set k', 'a: ']);
  });

  it('watchers and listeners share one channel on one connection: a message wakes its key’s watchers and every listener', async () => {
    const { wakeups, subscribers, heard, listener } = listening();
    wakeups.watch('ch', 'k', () => heard.push('watcher k'));
    wakeups.listen('ch', ...listener('a'));
    wakeups.listen('other', ...listener('b'));
    wakeups.watch('other', 'j', () => heard.push('watcher j'));
    expect(subscribers).toHaveLength(1);
    await turns();
    const subscriber = subscribers[0]!;
    expect([...new Set(subscriber.subscribed)].sort()).toEqual(['ch', 'other']);
    heard.length = 0; // the watchers woken once subscribed
    subscriber.emit('message', 'ch', 'k');
    subscriber.emit('message', 'ch', 'j');
    subscriber.emit('message', 'other', 'j');
    expect(heard).toEqual(['watcher k', 'a: k', 'a: j', 'watcher j', 'b: j']);
    expect(wakeups.watching('ch', 'k')).toBe(true);
    expect(wakeups.watching('ch', 'j')).toBe(false);
  });

  it('a channel first listened to once the connection is ready is subscribed at once, and only once', async () => {
    const { wakeups, subscribers, heard, listener } = listening();
    wakeups.watch('a', 'k', () => {});
    await turns();
    const subscriber = subscribers[0]!;
    wakeups.listen('a', ...listener('1')); // already subscribed for the watcher
    wakeups.listen('b', ...listener('2'));
    wakeups.listen('b', ...listener('3'));
    expect(subscriber.subscribed).toEqual(['a', 'b']);
    await turns();
    // Listeners of the new channel are reset once it is subscribed; one joining a subscribed
    // channel missed nothing, and is not.
    expect(heard).toEqual(['2: reset', '3: reset']);
  });

  it('every ready subscribes the channels of both kinds; each channel’s listeners are reset once it is subscribed (again)', async () => {
    const { wakeups, subscribers, heard, listener } = listening();
    wakeups.listen('bus', ...listener('a'));
    wakeups.listen('bus', ...listener('b'));
    wakeups.watch('wake', 'k', () => {});
    await turns();
    const subscriber = subscribers[0]!;
    expect(heard).toEqual(['a: reset', 'b: reset']); // the first subscription: nothing before was heard
    heard.length = 0;
    const pending = new Map<string, () => void>();
    subscriber.subscribe = (channel: string) => {
      subscriber.subscribed.push(channel);
      return new Promise((resolve) => pending.set(channel, () => resolve(1)));
    };
    const before = subscriber.subscribed.length;
    subscriber.emit('ready'); // a reconnect
    expect(subscriber.subscribed.slice(before)).toEqual(['bus', 'wake']);
    await turns();
    expect(heard).toEqual([]); // not before the channel is subscribed again
    pending.get('wake')!(); // another channel back: not this one's listeners
    await turns();
    expect(heard).toEqual([]);
    pending.get('bus')!();
    await turns();
    expect(heard).toEqual(['a: reset', 'b: reset']);
  });

  it('a failed resubscription resets nobody; neither does a reset after close() or drop()', async () => {
    const { wakeups, subscribers, heard, listener } = listening();
    wakeups.listen('bus', ...listener('a'));
    await turns();
    heard.length = 0; // the first subscription's reset
    const subscriber = subscribers[0]!;
    subscriber.subscribe = () => Promise.reject(new Error('Connection is closed.'));
    subscriber.emit('ready');
    await turns();
    expect(heard).toEqual([]);

    const later = listening();
    later.wakeups.listen('bus', ...later.listener('a'));
    await turns();
    later.heard.length = 0;
    later.subscribers[0]!.emit('ready');
    later.wakeups.drop('bus');
    await turns();
    expect(later.heard).toEqual([]);

    // A channel dropped while another keeps the connection, its resubscription still in flight.
    const kept = listening();
    kept.wakeups.listen('bus', ...kept.listener('a'));
    kept.wakeups.listen('other', ...kept.listener('b'));
    await turns();
    kept.heard.length = 0;
    const keptSubscriber = kept.subscribers[0]!;
    const resolvers: (() => void)[] = [];
    keptSubscriber.subscribe = () => new Promise((resolve) => resolvers.push(() => resolve(1)));
    keptSubscriber.emit('ready');
    kept.wakeups.drop('bus');
    for (const resolve of resolvers) resolve();
    await turns();
    expect(kept.heard).toEqual(['b: reset']);

    const closed = listening();
    closed.wakeups.listen('bus', ...closed.listener('a'));
    await turns();
    closed.heard.length = 0;
    closed.subscribers[0]!.emit('ready');
    closed.wakeups.close();
    await turns();
    expect(closed.heard).toEqual([]);
  });

  it('a throwing listener is ignored: the others still hear, and the watchers still wake', async () => {
    const { wakeups, subscribers, heard, listener } = listening();
    const boom = () => {
      throw new Error('boom');
    };
    wakeups.listen('bus', boom, boom);
    wakeups.listen('bus', ...listener('a'));
    wakeups.watch('bus', 'm', () => heard.push('watcher m'));
    await turns();
    expect(heard).toEqual(['watcher m', 'a: reset']); // subscribed: the watcher looks, listeners reset
    const subscriber = subscribers[0]!;
    expect(() => subscriber.emit('message', 'bus', 'm')).not.toThrow();
    subscriber.emit('ready');
    await turns();
    expect(heard).toEqual(['watcher m', 'a: reset', 'watcher m', 'a: m', 'watcher m', 'a: reset']);
  });

  it('unsubscribing is idempotent and removes only its own registration; the channel stays subscribed', async () => {
    const { wakeups, subscribers, heard, listener } = listening();
    const [onMessage, onReset] = listener('a');
    const first = wakeups.listen('bus', onMessage, onReset);
    wakeups.listen('bus', onMessage, onReset); // the same functions again: a registration of its own
    await turns();
    expect(heard).toEqual(['a: reset', 'a: reset']);
    heard.length = 0;
    const subscriber = subscribers[0]!;
    subscriber.emit('message', 'bus', 'one');
    first();
    first();
    subscriber.emit('message', 'bus', 'two');
    expect(heard).toEqual(['a: one', 'a: one', 'a: two']);
    expect(subscriber.unsubscribed).toEqual([]);
    expect(subscriber.disconnected).toBe(false);
  });

  it('a listener added during a message is not called for it; one removed during it is not either', async () => {
    const { wakeups, subscribers, heard } = listening();
    let second: (() => void) | undefined;
    wakeups.listen(
      'bus',
      (message) => {
        heard.push(`first: ${message}`);
        second?.();
        wakeups.listen('bus', (m) => heard.push(`added: ${m}`), noop);
      },
      noop,
    );
    second = wakeups.listen('bus', (message) => heard.push(`second: ${message}`), noop);
    await turns();
    subscribers[0]!.emit('message', 'bus', 'm');
    // Called from a copy: the second was in the copy, the added one was not.
    expect(heard).toEqual(['first: m', 'second: m']);
  });

  it('drop() forgets a channel’s listeners and watchers; the last channel in use disconnects', async () => {
    const { wakeups, subscribers, heard, listener } = listening();
    wakeups.listen('bus', ...listener('a'));
    wakeups.listen('other', ...listener('b'));
    await turns();
    heard.length = 0; // the first subscription's resets
    const subscriber = subscribers[0]!;
    wakeups.drop('bus');
    expect(subscriber.unsubscribed).toEqual(['bus']);
    expect(wakeups.listen('bus', ...listener('late'))).toBeTypeOf('function');
    subscriber.emit('message', 'bus', 'm');
    subscriber.emit('message', 'other', 'm');
    expect(heard).toEqual(['b: m']);
    wakeups.drop('other');
    expect(subscriber.disconnected).toBe(true);
  });

  it('bad listeners, a client without duplicate(), or closed wake-ups give a registration never called', () => {
    const { wakeups, subscribers } = listening();
    expect(wakeups.listen('bus', 'x' as never, noop)).toBeTypeOf('function');
    expect(wakeups.listen('bus', noop, null as never)).toBeTypeOf('function');
    expect(subscribers).toHaveLength(0);
    expect(new RedisWakeups({}).listen('bus', noop, noop)).toBeTypeOf('function');
    const throwing = new RedisWakeups({
      duplicate: () => {
        throw new Error('no');
      },
    });
    expect(() => throwing.listen('bus', noop, noop)()).not.toThrow();
    wakeups.close();
    wakeups.listen('bus', noop, noop);
    expect(subscribers).toHaveLength(0);
  });
});

const noop = (): void => {};
