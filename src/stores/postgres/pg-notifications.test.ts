/**
 * PgNotifications against scripted fake connections: one LISTEN connection however many
 * subscribe, notifications dispatched to each listener of their channel, and the reconnect after a
 * drop (a second later, on the store's clock, while anyone still listens), on a client of our own
 * (`new pool.Client`) and on one lent by a pool without that class. The real server is in
 * test/postgres/notifications.test.ts.
 */
import { EventEmitter } from 'node:events';
import { describe, expect, it } from 'vitest';
import { deferred } from '../../../test/support/deferred.js';
import type { Clock } from '../../core/clock.js';
import { FakeClock } from '../../testing/fake-clock.js';
import type { PgPoolLike } from './database.js';
import { PgNotifications } from './pg-notifications.js';

/** How one connection attempt goes: it connects, fails, or waits for the test. */
type Outcome = 'ok' | Error | Promise<void>;

/** A LISTEN connection: records its statements, and can be sent notifications and dropped. */
class FakeConnection extends EventEmitter {
  readonly statements: string[] = [];
  /** `end()` calls (a client of ours) or `release(…)` arguments (a lent one). */
  readonly closes: unknown[] = [];
  connection: { stream?: { unref?: () => void } } | undefined = { stream: { unref: () => this.unrefs++ } };
  unrefs = 0;
  /** Makes the next statement fail. */
  failNext: Error | undefined;

  constructor(
    readonly options: Record<string, unknown>,
    private readonly outcome: Outcome,
  ) {
    super();
  }

  connect(): Promise<void> {
    if (this.outcome === 'ok') return Promise.resolve();
    if (this.outcome instanceof Error) return Promise.reject(this.outcome);
    return this.outcome;
  }

  query(text: string): Promise<{ rows: unknown[] }> {
    this.statements.push(text);
    const failure = this.failNext;
    this.failNext = undefined;
    return failure === undefined ? Promise.resolve({ rows: [] }) : Promise.reject(failure);
  }

  end(): Promise<void> {
    this.closes.push('end');
    return Promise.resolve();
  }

  release(error?: unknown): void {
    this.closes.push(error);
  }

  send(channel: string, payload?: string): void {
    this.emit('notification', payload === undefined ? { channel } : { channel, payload });
  }
}

/**
 * A pool whose `Client` builds {@link FakeConnection}s (each attempt taking the next of
 * `outcomes`, then 'ok'); with `lend`, a pool without that class, lending them from `connect()`.
 */
function fakePool(
  outcomes: Outcome[] = [],
  options: { lend?: boolean; shape?: (c: FakeConnection) => void } = {},
) {
  const connections: FakeConnection[] = [];
  const make = (config: Record<string, unknown>): FakeConnection => {
    const connection = new FakeConnection(config, outcomes.shift() ?? 'ok');
    options.shape?.(connection);
    connections.push(connection);
    return connection;
  };
  const pool: PgPoolLike & { options: Record<string, unknown>; Client?: unknown } = {
    options: { host: 'db.example', application_name: 'shop' },
    totalCount: 0,
    connect: () => {
      const lent = make({});
      return lent.connect().then(() => lent);
    },
    query: () => Promise.reject(new Error('pool.query is not used')),
  };
  if (options.lend !== true) {
    pool.Client = function Client(config: Record<string, unknown>) {
      return make(config);
    };
  }
  return { pool, connections };
}

function setup(
  outcomes: Outcome[] = [],
  options: Parameters<typeof fakePool>[1] = {},
  clock: Clock = new FakeClock(),
) {
  const { pool, connections } = fakePool(outcomes, options);
  return { notifications: new PgNotifications(pool, clock), connections, clock: clock as FakeClock };
}

/** Lets the promise callbacks queued so far run. */
const settle = () => new Promise<void>((resolve) => setImmediate(resolve));

function recorder() {
  const seen: string[] = [];
  return { seen, listener: (payload: string) => void seen.push(payload) };
}

/** The number of channels the listener remembers (a private field: checks a leak). */
const channelCount = (n: PgNotifications) =>
  (n as unknown as { channels: Map<string, unknown> }).channels.size;

describe('PgNotifications', () => {
  it('opens one connection of its own on the first subscription, LISTENs there and delivers each payload', async () => {
    const { notifications, connections } = setup();
    const a = recorder();
    notifications.subscribe('done:k', a.listener);
    await settle();
    expect(connections).toHaveLength(1);
    const connection = connections[0]!;
    // Built as pg-pool builds its clients: the pool's options, copied.
    expect(connection.options).toEqual({ host: 'db.example', application_name: 'shop' });
    expect(connection.statements).toEqual(['LISTEN "done:k"']);
    // Its socket never keeps the process alive.
    expect(connection.unrefs).toBe(1);
    connection.send('done:k', 'r1');
    connection.send('done:k');
    expect(a.seen).toEqual(['r1', '']);
    await notifications.close();
  });

  it('listeners of one channel share one LISTEN; a new channel is LISTENed on the open connection', async () => {
    const { notifications, connections } = setup();
    const a = recorder();
    const b = recorder();
    const c = recorder();
    notifications.subscribe('one', a.listener);
    await settle();
    notifications.subscribe('one', b.listener);
    notifications.subscribe('two', c.listener);
    await settle();
    expect(connections).toHaveLength(1);
    const connection = connections[0]!;
    expect(connection.statements).toEqual(['LISTEN "one"', 'LISTEN "two"']);
    connection.send('one', 'x');
    connection.send('two', 'y');
    expect(a.seen).toEqual(['x']);
    expect(b.seen).toEqual(['x']);
    expect(c.seen).toEqual(['y']);
    await notifications.close();
  });

  it('channels subscribed while the connection opens are LISTENed together, on that one connection', async () => {
    const up = deferred<void>();
    const { notifications, connections } = setup([up.promise]);
    notifications.subscribe('a', () => {});
    notifications.subscribe('b"c', () => {});
    notifications.subscribe('a', () => {});
    await settle();
    expect(connections).toHaveLength(1);
    up.resolve();
    await settle();
    expect(connections).toHaveLength(1);
    expect(connections[0]!.statements).toEqual(['LISTEN "a"; LISTEN "b""c"']);
    await notifications.close();
  });

  it('an unsubscribed listener hears nothing more; a throwing one does not stop the others', async () => {
    const { notifications, connections } = setup();
    const a = recorder();
    const b = recorder();
    const unsubscribe = notifications.subscribe('ch', a.listener);
    notifications.subscribe('ch', () => {
      throw new Error('a listener bug');
    });
    notifications.subscribe('ch', b.listener);
    await settle();
    const connection = connections[0]!;
    connection.send('ch', '1');
    unsubscribe();
    connection.send('ch', '2');
    // A notification for a channel nobody here subscribed to (another LISTEN on that session).
    expect(() => connection.send('elsewhere', '3')).not.toThrow();
    expect(a.seen).toEqual(['1']);
    expect(b.seen).toEqual(['1', '2']);
    await notifications.close();
  });

  it('close() ends the connection; afterwards a subscription opens nothing and is remembered nowhere', async () => {
    const { notifications, connections } = setup();
    notifications.subscribe('ch', () => {});
    await settle();
    await notifications.close();
    expect(connections[0]!.closes).toEqual(['end']);
    const unsubscribe = notifications.subscribe('later', () => {});
    unsubscribe();
    await settle();
    expect(connections).toHaveLength(1);
    expect(channelCount(notifications)).toBe(1);
    // Closing again, or a notifications object never used, is fine.
    await notifications.close();
    await expect(setup().notifications.close()).resolves.toBeUndefined();
  });

  it('closed while connecting: the connection, once up, is ended and never LISTENs', async () => {
    const up = deferred<void>();
    const { notifications, connections, clock } = setup([up.promise]);
    notifications.subscribe('ch', () => {});
    await notifications.close();
    up.resolve();
    await settle();
    expect(connections).toHaveLength(1);
    expect(connections[0]!.statements).toEqual([]);
    expect(connections[0]!.closes).toEqual(['end']);
    await clock.advance(5_000);
    expect(connections).toHaveLength(1);
  });

  it('closed while connecting, and the connect fails: no retry is scheduled', async () => {
    const up = deferred<void>();
    const { notifications, connections, clock } = setup([up.promise]);
    notifications.subscribe('ch', () => {});
    await notifications.close();
    up.reject(new Error('connect ECONNREFUSED'));
    await settle();
    expect(clock.pendingTimers).toBe(0);
    await clock.advance(5_000);
    expect(connections).toHaveLength(1);
  });

  it.each(['error', 'end'])(
    "a connection that emits '%s' is closed and reopened a second later, every channel LISTENed again",
    async (event) => {
      const { notifications, connections, clock } = setup();
      const a = recorder();
      const b = recorder();
      notifications.subscribe('a', a.listener);
      notifications.subscribe('b', b.listener);
      await settle();
      const first = connections[0]!;
      first.emit(event, new Error('Connection terminated unexpectedly'));
      expect(first.closes).toEqual(['end']);
      // The wait for the reopen does not keep the process alive.
      expect(clock.pendingTimers).toBe(1);
      expect(clock.aliveTimers).toBe(0);
      await clock.advance(999);
      expect(connections).toHaveLength(1);
      await clock.advance(1);
      await settle();
      expect(connections).toHaveLength(2);
      const second = connections[1]!;
      expect(second.statements).toEqual(['LISTEN "a"; LISTEN "b"']);
      second.send('a', 'after');
      second.send('b', 'after');
      expect(a.seen).toEqual(['after']);
      expect(b.seen).toEqual(['after']);
      // The old connection's late events change nothing: the new one stays.
      first.emit('end');
      await clock.advance(5_000);
      expect(connections).toHaveLength(2);
      expect(second.closes).toEqual([]);
      second.send('a', 'still');
      expect(a.seen).toEqual(['after', 'still']);
      await notifications.close();
      expect(second.closes).toEqual(['end']);
    },
  );

  it('tells the subscribers that asked each time listening (re)starts, after the LISTEN; a failed LISTEN tells nobody', async () => {
    const { notifications, connections, clock } = setup();
    let told = 0;
    const unsubscribe = notifications.subscribe(
      'a',
      () => {},
      () => {
        told++;
      },
    );
    notifications.subscribe('b', () => {});
    await settle();
    expect(told).toBe(1);
    connections[0]!.emit('error', new Error('terminated'));
    await clock.advance(1_000);
    await settle();
    expect([connections.length, told]).toEqual([2, 2]);
    connections[1]!.failNext = new Error('LISTEN refused');
    notifications.subscribe('c', () => {});
    await settle();
    expect(told).toBe(2);
    unsubscribe();
    await clock.advance(1_000);
    await settle();
    expect([connections.length, told]).toEqual([3, 2]);
    await notifications.close();
  });

  it("tells only the subscribers of the channels a LISTEN was for; a reopening tells every channel's", async () => {
    const { notifications, connections, clock } = setup();
    const told: string[] = [];
    notifications.subscribe(
      'a',
      () => {},
      () => told.push('a'),
    );
    await settle();
    expect(told).toEqual(['a']);
    notifications.subscribe(
      'b',
      () => {},
      () => told.push('b'),
    ); // a LISTEN of its own, on the open connection
    await settle();
    expect(connections[0]!.statements).toEqual(['LISTEN "a"', 'LISTEN "b"']);
    expect(told).toEqual(['a', 'b']);
    notifications.subscribe(
      'b',
      () => {},
      () => told.push('b again'),
    ); // 'b' listens already
    await settle();
    expect(told).toEqual(['a', 'b']);
    connections[0]!.emit('error', new Error('terminated'));
    await clock.advance(1_000);
    await settle();
    expect(told.slice(2).sort()).toEqual(['a', 'b', 'b again']);
    await notifications.close();
  });

  it('a failed connect is retried a second later until it works', async () => {
    const { notifications, connections, clock } = setup([
      new Error('ECONNREFUSED'),
      new Error('ECONNREFUSED'),
    ]);
    const a = recorder();
    notifications.subscribe('ch', a.listener);
    await settle();
    expect(connections).toHaveLength(1);
    await clock.advance(1_000);
    await settle();
    expect(connections).toHaveLength(2);
    await clock.advance(1_000);
    await settle();
    expect(connections).toHaveLength(3);
    expect(connections[2]!.statements).toEqual(['LISTEN "ch"']);
    connections[2]!.send('ch', 'up');
    expect(a.seen).toEqual(['up']);
    await notifications.close();
  });

  it('a failed LISTEN drops the connection; it is reopened and LISTENs again', async () => {
    let made = 0;
    const { notifications, connections, clock } = setup([], {
      shape: (c) => {
        if (made++ === 0) c.failNext = new Error('too many notifications');
      },
    });
    notifications.subscribe('ch', () => {});
    await settle();
    expect(connections[0]!.closes).toEqual(['end']);
    await clock.advance(1_000);
    await settle();
    expect(connections).toHaveLength(2);
    expect(connections[1]!.statements).toEqual(['LISTEN "ch"']);
    expect(connections[1]!.closes).toEqual([]);
    await notifications.close();
  });

  it('a subscription during the wait reconnects at once; the timer then opens no second connection', async () => {
    const { notifications, connections, clock } = setup();
    const a = recorder();
    const b = recorder();
    notifications.subscribe('a', a.listener);
    await settle();
    connections[0]!.emit('error', new Error('terminated'));
    notifications.subscribe('b', b.listener);
    await settle();
    expect(connections).toHaveLength(2);
    expect(connections[1]!.statements).toEqual(['LISTEN "a"; LISTEN "b"']);
    await clock.advance(1_000);
    await settle();
    expect(connections).toHaveLength(2);
    connections[1]!.send('a', 'once');
    expect(a.seen).toEqual(['once']);
    await notifications.close();
  });

  it('one reopen timer at a time, cleared by close()', async () => {
    const { notifications, connections, clock } = setup(['ok', new Error('ECONNREFUSED')]);
    notifications.subscribe('a', () => {});
    await settle();
    connections[0]!.emit('error', new Error('terminated'));
    // A subscription during the wait tries at once and fails: still the one timer.
    notifications.subscribe('b', () => {});
    await settle();
    expect(connections).toHaveLength(2);
    expect(clock.pendingTimers).toBe(1);
    await notifications.close();
    expect(clock.pendingTimers).toBe(0);
    await clock.advance(5_000);
    expect(connections).toHaveLength(2);
  });

  it('close() with no reopen pending hands the clock no handle it did not give out', async () => {
    const fake = new FakeClock();
    const cleared: unknown[] = [];
    const strict: Clock = {
      now: () => fake.now(),
      sleep: (ms, signal) => fake.sleep(ms, signal),
      setTimer: (callback, ms) => fake.setTimer(callback, ms),
      clearTimer: (handle) => {
        cleared.push(handle);
        fake.clearTimer(handle);
      },
    };
    const { notifications } = setup([], {}, strict);
    notifications.subscribe('a', () => {});
    await settle();
    await notifications.close();
    expect(cleared).toEqual([]);
  });

  it('nobody listening any more: a dropped connection is not reopened', async () => {
    const { notifications, connections, clock } = setup();
    const stopA = notifications.subscribe('a', () => {});
    const stopB = notifications.subscribe('b', () => {});
    await settle();
    stopA();
    stopB();
    connections[0]!.emit('error', new Error('terminated'));
    expect(clock.pendingTimers).toBe(0);
    await clock.advance(5_000);
    expect(connections).toHaveLength(1);
  });

  it('someone still listening on one channel of several: it is reopened', async () => {
    const { notifications, connections, clock } = setup();
    const stopA = notifications.subscribe('a', () => {});
    notifications.subscribe('b', () => {});
    await settle();
    stopA();
    connections[0]!.emit('end');
    await clock.advance(1_000);
    await settle();
    expect(connections).toHaveLength(2);
    await notifications.close();
  });

  it('on a clock without keepAlive the reopen works the same', async () => {
    const fake = new FakeClock();
    const bare: Clock = {
      now: () => fake.now(),
      sleep: (ms, signal) => fake.sleep(ms, signal),
      setTimer: (callback, ms) => fake.setTimer(callback, ms),
      clearTimer: (handle) => fake.clearTimer(handle),
    };
    const { notifications, connections } = setup([], {}, bare);
    notifications.subscribe('a', () => {});
    await settle();
    expect(() => connections[0]!.emit('error', new Error('terminated'))).not.toThrow();
    await fake.advance(1_000);
    await settle();
    expect(connections).toHaveLength(2);
    await notifications.close();
  });

  it.each([
    ['no connection', (c: FakeConnection) => (c.connection = undefined)],
    ['a connection without a stream', (c: FakeConnection) => (c.connection = {})],
    ['a stream without unref (a custom stream)', (c: FakeConnection) => (c.connection = { stream: {} })],
  ])('a client with %s still listens', async (_, shape) => {
    const { notifications, connections } = setup([], { shape });
    const a = recorder();
    notifications.subscribe('ch', a.listener);
    await settle();
    expect(connections).toHaveLength(1);
    expect(connections[0]!.statements).toEqual(['LISTEN "ch"']);
    connections[0]!.send('ch', 'p');
    expect(a.seen).toEqual(['p']);
    await notifications.close();
  });

  describe('on a pool without a Client class', () => {
    it('listens on one client lent by the pool, and destroys it at close()', async () => {
      const { notifications, connections } = setup([], { lend: true });
      const a = recorder();
      notifications.subscribe('ch', a.listener);
      notifications.subscribe('other', () => {});
      await settle();
      expect(connections).toHaveLength(1);
      const lent = connections[0]!;
      expect(lent.statements).toEqual(['LISTEN "ch"; LISTEN "other"']);
      lent.send('ch', 'p');
      expect(a.seen).toEqual(['p']);
      await notifications.close();
      // Released with `true`: pg-pool destroys it rather than hand a LISTENing session to someone else.
      expect(lent.closes).toEqual([true]);
    });

    it.each(['error', 'end'])(
      "a lent client that emits '%s' is destroyed and another is lent a second later",
      async (event) => {
        const { notifications, connections, clock } = setup([], { lend: true });
        const a = recorder();
        notifications.subscribe('ch', a.listener);
        await settle();
        connections[0]!.emit(event, new Error('terminated'));
        expect(connections[0]!.closes).toEqual([true]);
        await clock.advance(1_000);
        await settle();
        expect(connections).toHaveLength(2);
        expect(connections[1]!.statements).toEqual(['LISTEN "ch"']);
        connections[1]!.send('ch', 'again');
        expect(a.seen).toEqual(['again']);
        await notifications.close();
      },
    );
  });
});
