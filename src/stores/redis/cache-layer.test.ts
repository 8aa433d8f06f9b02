/**
 * The Redis cache layer against a scripted fake client: what it sends for each operation (keys,
 * arguments, which script or command), how it decodes replies, malformed replies and bad input.
 * The Lua itself runs on real Redis in test/cache/.
 */
import { describe, expect, it } from 'vitest';
import { FakeSubscriber } from '../../../test/support/redis-doubles.js';
import { systemClock } from '../../core/clock.js';
import { isStoreUnavailableError } from '../../core/errors.js';
import { type CacheRedisClient, RedisCacheLayer } from './cache-layer.js';
import { bumpScript, deleteScript, getScript, releaseLoadScript, setScript } from './cache-scripts.js';
import { StoreDeadline } from './deadline.js';
import { redisStores } from './index.js';

/** One call the fake client saw: a script (by source) or a command, with its keys and arguments. */
interface Sent {
  readonly call: string;
  readonly args: unknown[];
}

const scriptNames = new Map([
  [getScript, 'get'],
  [setScript, 'set'],
  [deleteScript, 'delete'],
  [bumpScript, 'bumpVersion'],
  [releaseLoadScript, 'releaseLoad'],
]);

/** A layer whose client replies `replies` in turn and records every call. */
function fake(...replies: unknown[]) {
  const sent: Sent[] = [];
  const answer = (call: string, args: unknown[]) => {
    sent.push({ call, args });
    return Promise.resolve(replies.shift());
  };
  const script = (source: string, numKeys: number, ...keysAndArgs: unknown[]) => {
    expect(numKeys).toBe(1);
    return answer(`script ${scriptNames.get(source) ?? 'unknown'}`, keysAndArgs);
  };
  const client: CacheRedisClient = {
    eval: script,
    evalsha: () => Promise.reject(new Error('not reached: eval is used once per script and client')),
    get: (key) => answer('GET', [key]),
    set: (...args) => answer('SET', args),
  };
  // Each call on a fresh client, so that the fake sees EVAL (with the source) every time.
  const layer = () => new RedisCacheLayer({ ...client }, 'p:', new StoreDeadline(systemClock, 1_000));
  return { layer, sent };
}

describe('RedisCacheLayer sends one script or command per operation, on its own keys', () => {
  it('each operation: the keys, the arguments, the script or command', async () => {
    const { layer, sent } = fake(null, 1, 1, 1, 1, null, 3, 4, 'OK', 1);
    await layer().get('a}b{c');
    await layer().set('k', 'payload: 😀', 1_000, 500);
    await layer().set('k', 'v', 1, 0, 'set k');
    await layer().delete('k');
    await layer().delete('k', 'delete k');
    await layer().version('ns');
    await layer().bumpVersion('ns');
    await layer().bumpVersion('ns', 'ns bumped');
    await layer().claimLoad('k', 'owner-1', 2_000);
    await layer().releaseLoad('k', 'owner-1');
    expect(sent).toEqual([
      { call: 'script get', args: ['p:cache:{a}b{c}'] },
      { call: 'script set', args: ['p:cache:{k}', '500:payload: 😀', 1_500] },
      { call: 'script set', args: ['p:cache:{k}', '0:v', 1, 'p:cache:bus', 'set k'] },
      { call: 'script delete', args: ['p:cache:{k}'] },
      { call: 'script delete', args: ['p:cache:{k}', 'p:cache:bus', 'delete k'] },
      { call: 'GET', args: ['p:cache-version:{ns}'] },
      { call: 'script bumpVersion', args: ['p:cache-version:{ns}'] },
      { call: 'script bumpVersion', args: ['p:cache-version:{ns}', 'p:cache:bus', 'ns bumped'] },
      { call: 'SET', args: ['p:cache-load:{k}', 'owner-1', 'PX', 2_000, 'NX'] },
      { call: 'script releaseLoad', args: ['p:cache-load:{k}', 'owner-1'] },
    ]);
  });

  it("the empty key and namespace are keys like any other: '{}' as the hash tag", async () => {
    const { layer, sent } = fake(null, 1, null, 'OK');
    await layer().get('');
    await layer().set('', '', 1, 0, '');
    await layer().version('');
    await layer().claimLoad('', 'o', 1);
    expect(sent.map((s) => s.args)).toEqual([
      ['p:cache:{}'],
      ['p:cache:{}', '0:', 1, 'p:cache:bus', ''],
      ['p:cache-version:{}'],
      ['p:cache-load:{}', 'o', 'PX', 1, 'NX'],
    ]);
    const one = layer();
    expect([one.keyOf(''), one.versionKeyOf(''), one.claimKeyOf('')]).toEqual([
      'p:cache:{}',
      'p:cache-version:{}',
      'p:cache-load:{}',
    ]);
  });

  it('the largest safe lifetime is sent as is', async () => {
    const { layer, sent } = fake(1, 1);
    await layer().set('k', 'v', Number.MAX_SAFE_INTEGER, 0);
    await layer().set('k', 'v', 1, Number.MAX_SAFE_INTEGER - 1);
    expect(sent.map((s) => s.args[2])).toEqual([Number.MAX_SAFE_INTEGER, Number.MAX_SAFE_INTEGER]);
  });

  it('kind, timeoutMs (the store set’s deadline) and channel', () => {
    const layer = new RedisCacheLayer({} as CacheRedisClient, 'shop:', new StoreDeadline(systemClock, 250));
    expect([layer.kind, layer.timeoutMs, layer.channel]).toEqual(['remote', 250, 'shop:cache:bus']);
  });
});

describe('RedisCacheLayer decodes replies strictly', () => {
  it("get: nil is absent; '<remainingMs>:<graceMs>:<payload>' (a Buffer too) an entry, the payload byte for byte", async () => {
    const { layer } = fake(
      null,
      '1500:500:v',
      Buffer.from('1:0:a:b:c 😀\u0000'),
      '9007199254740991:9007199254740991:',
    );
    expect(await layer().get('k')).toBeUndefined();
    expect(await layer().get('k')).toEqual({ payload: 'v', graceMs: 500, remainingMs: 1_500 });
    expect(await layer().get('k')).toEqual({ payload: 'a:b:c 😀\u0000', graceMs: 0, remainingMs: 1 });
    expect(await layer().get('k')).toEqual({
      payload: '',
      graceMs: Number.MAX_SAFE_INTEGER,
      remainingMs: Number.MAX_SAFE_INTEGER,
    });
  });

  it.each([
    [undefined],
    [0],
    [1],
    [''],
    ['v'],
    ['1500'],
    ['1500:500'],
    ['-1:0:v'], // a key without TTL: not ours
    ['0:0:v'],
    [':0:v'],
    ['1::v'],
    ['1:-5:v'],
    ['1:0.5:v'],
    ['1.5:0:v'],
    ['1e3:0:v'],
    ['9007199254740992:0:v'],
    ['1:9007199254740992:v'],
    [' 1:0:v'],
    [['1', '0', 'v']],
  ])(
    'a malformed get reply %j is a StoreUnavailableError naming the script, never a hit or a miss',
    async (reply) => {
      const error = (await fake(reply)
        .layer()
        .get('k')
        .catch((e: unknown) => e)) as Error;
      expect(isStoreUnavailableError(error)).toBe(true);
      expect((error.cause as Error).message).toMatch(/^unexpected get script reply: /);
    },
  );

  it('version: nil is 0, a decimal string the version; anything else a StoreUnavailableError', async () => {
    const { layer } = fake(null, '0', '42', Buffer.from('9007199254740991'));
    expect(await layer().version('ns')).toBe(0);
    expect(await layer().version('ns')).toBe(0);
    expect(await layer().version('ns')).toBe(42);
    expect(await layer().version('ns')).toBe(Number.MAX_SAFE_INTEGER);
    for (const reply of ['x', '-1', '1.5', '9007199254740992', '', 7, undefined]) {
      const error = (await fake(reply)
        .layer()
        .version('ns')
        .catch((e: unknown) => e)) as Error;
      expect(isStoreUnavailableError(error), String(reply)).toBe(true);
      expect((error.cause as Error).message).toMatch(/^unexpected version reply: /);
    }
  });

  it('bumpVersion: the new version, an integer ≥ 1; anything else a StoreUnavailableError', async () => {
    const { layer } = fake(1, Number.MAX_SAFE_INTEGER);
    expect(await layer().bumpVersion('ns')).toBe(1);
    expect(await layer().bumpVersion('ns', 'm')).toBe(Number.MAX_SAFE_INTEGER);
    for (const reply of [0, -1, 1.5, 2 ** 53, '2', null]) {
      const error = (await fake(reply)
        .layer()
        .bumpVersion('ns')
        .catch((e: unknown) => e)) as Error;
      expect(isStoreUnavailableError(error), String(reply)).toBe(true);
      expect((error.cause as Error).message).toMatch(/^unexpected bumpVersion script reply: /);
    }
  });

  it("claimLoad: 'OK' is won, nil is held; anything else a StoreUnavailableError", async () => {
    const { layer } = fake('OK', null);
    expect(await layer().claimLoad('k', 'a', 1_000)).toBe(true);
    expect(await layer().claimLoad('k', 'a', 1_000)).toBe(false);
    for (const reply of [1, 0, 'ok', '', undefined]) {
      const error = (await fake(reply)
        .layer()
        .claimLoad('k', 'a', 1_000)
        .catch((e: unknown) => e)) as Error;
      expect(isStoreUnavailableError(error), String(reply)).toBe(true);
      expect((error.cause as Error).message).toMatch(/^unexpected claimLoad reply: /);
    }
  });

  it('set, delete and releaseLoad: 1 (and 0 for a release of another owner’s claim); anything else a StoreUnavailableError', async () => {
    const { layer } = fake(1, 1, 1, 0);
    await expect(layer().set('k', 'v', 1, 0)).resolves.toBeUndefined();
    await expect(layer().delete('k')).resolves.toBeUndefined();
    await expect(layer().releaseLoad('k', 'a')).resolves.toBeUndefined();
    await expect(layer().releaseLoad('k', 'a')).resolves.toBeUndefined();
    const calls: [string, (l: RedisCacheLayer) => Promise<unknown>][] = [
      ['set', (l) => l.set('k', 'v', 1, 0)],
      ['delete', (l) => l.delete('k', 'm')],
      ['releaseLoad', (l) => l.releaseLoad('k', 'a')],
    ];
    for (const [what, call] of calls) {
      for (const reply of [null, 2, '1', 'OK']) {
        const error = (await call(fake(reply).layer()).catch((e: unknown) => e)) as Error;
        expect(isStoreUnavailableError(error), `${what} ${String(reply)}`).toBe(true);
        expect((error.cause as Error).message).toBe(
          `unexpected ${what} script reply: ${typeof reply === 'string' ? JSON.stringify(reply) : reply}`,
        );
      }
    }
  });

  it('a command that fails or rejects is a StoreUnavailableError with the cause', async () => {
    const boom = new Error('WRONGTYPE Operation against a key holding the wrong kind of value');
    const client: CacheRedisClient = {
      eval: () => Promise.reject(boom),
      evalsha: () => Promise.reject(boom),
      get: () => Promise.reject(boom),
      set: () => {
        throw boom;
      },
    };
    const layer = new RedisCacheLayer(client, 'p:', new StoreDeadline(systemClock, 1_000));
    for (const call of [
      () => layer.get('k'),
      () => layer.version('ns'),
      () => layer.claimLoad('k', 'a', 1_000),
      () => layer.bumpVersion('ns', 'm'),
    ]) {
      const error = (await call().catch((e: unknown) => e)) as Error;
      expect(isStoreUnavailableError(error)).toBe(true);
      expect(error.cause).toBe(boom);
    }
  });

  it('a client that is reconnecting fails every call at once, nothing sent', async () => {
    const { sent } = fake();
    const client = {
      eval: () => Promise.resolve(1),
      get: () => Promise.resolve(null),
      status: 'reconnecting',
    };
    const layer = new RedisCacheLayer(client as never, 'p:', new StoreDeadline(systemClock, 1_000));
    await expect(layer.get('k')).rejects.toSatisfy(isStoreUnavailableError);
    await expect(layer.version('ns')).rejects.toSatisfy(isStoreUnavailableError);
    expect(sent).toEqual([]);
  });
});

describe('RedisCacheLayer: bumpVersion publishes its message as given', () => {
  const argsOf = async (...message: [] | [string]) => {
    const { layer, sent } = fake(7);
    expect(await layer().bumpVersion('ns', ...message)).toBe(7);
    return sent[0]!.args;
  };

  it('a message is sent as is, beside the channel; without one only the version key is sent', async () => {
    expect(await argsOf('clear ns')).toEqual(['p:cache-version:{ns}', 'p:cache:bus', 'clear ns']);
    expect(await argsOf('')).toEqual(['p:cache-version:{ns}', 'p:cache:bus', '']);
    expect(await argsOf('v 42 😀\u0000')).toEqual(['p:cache-version:{ns}', 'p:cache:bus', 'v 42 😀\u0000']);
    expect(await argsOf()).toEqual(['p:cache-version:{ns}']);
  });
});

describe('RedisCacheLayer input errors name the argument, and nothing is sent', () => {
  const bad: [string, (l: RedisCacheLayer) => Promise<unknown>, RegExp][] = [
    ['a lone surrogate key', (l) => l.get('\uD800'), /"key" to be well-formed/],
    ['a non-string key', (l) => l.get(1 as never), /"key" to be a string/],
    ['a set of a lone surrogate key', (l) => l.set('a\uDC00', 'v', 1, 0), /"key"/],
    ['a lone surrogate payload', (l) => l.set('k', '\uDC00', 1, 0), /"payload" to be well-formed/],
    ['a non-string payload', (l) => l.set('k', 5 as never, 1, 0), /"payload" to be a string/],
    ['a zero ttlMs', (l) => l.set('k', 'v', 0, 0), /"ttlMs" to be a positive integer, got 0/],
    ['a fractional ttlMs', (l) => l.set('k', 'v', 1.5, 0), /"ttlMs"/],
    ['a ttlMs past 2^53', (l) => l.set('k', 'v', 2 ** 53, 0), /"ttlMs"/],
    ['a NaN ttlMs', (l) => l.set('k', 'v', Number.NaN, 0), /"ttlMs"/],
    [
      'a negative graceMs',
      (l) => l.set('k', 'v', 1, -1),
      /"graceMs" to be a non-negative safe integer, got -1/,
    ],
    ['a fractional graceMs', (l) => l.set('k', 'v', 1, 0.5), /"graceMs"/],
    ['an infinite graceMs', (l) => l.set('k', 'v', 1, Infinity), /"graceMs"/],
    ['a string graceMs', (l) => l.set('k', 'v', 1, '0' as never), /"graceMs"/],
    [
      'a lifetime past 2^53',
      (l) => l.set('k', 'v', Number.MAX_SAFE_INTEGER, 1),
      /"ttlMs" \+ "graceMs" to be at most 9007199254740991/,
    ],
    ['a lone surrogate message', (l) => l.set('k', 'v', 1, 0, '\uD800'), /"message" to be well-formed/],
    ['a non-string message', (l) => l.set('k', 'v', 1, 0, null as never), /"message" to be a string/],
    ['a delete of a lone surrogate key', (l) => l.delete('\uDBFF'), /"key"/],
    ['a delete with a bad message', (l) => l.delete('k', 1 as never), /"message"/],
    ['a lone surrogate namespace', (l) => l.version('\uD800'), /"namespace" to be well-formed/],
    ['a bump of a bad namespace', (l) => l.bumpVersion(0 as never), /"namespace"/],
    [
      'a bump with a lone surrogate message',
      (l) => l.bumpVersion('ns', 'v\uD800'),
      /"message" to be well-formed/,
    ],
    ['a bump with a non-string message', (l) => l.bumpVersion('ns', 7 as never), /"message" to be a string/],
    [
      'a bump with a message function',
      (l) => l.bumpVersion('ns', String as never),
      /"message" to be a string/,
    ],
    ['a claim of a lone surrogate key', (l) => l.claimLoad('\uD800', 'a', 1), /"key"/],
    ['an empty owner', (l) => l.claimLoad('k', '', 1), /"owner" to be a non-empty string/],
    ['a lone surrogate owner', (l) => l.claimLoad('k', 'a\uD800', 1), /"owner" to be well-formed/],
    ['a zero claim ttlMs', (l) => l.claimLoad('k', 'a', 0), /"ttlMs" to be a positive integer/],
    ['a claim ttlMs past 2^53', (l) => l.claimLoad('k', 'a', 2 ** 53), /"ttlMs"/],
    ['a release by an empty owner', (l) => l.releaseLoad('k', ''), /"owner"/],
    ['a release of a lone surrogate key', (l) => l.releaseLoad('\uD800', 'a'), /"key"/],
  ];

  it.each(bad)('%s is a TypeError', async (_, call, message) => {
    const { layer, sent } = fake(1);
    const error = await call(layer()).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(TypeError);
    expect((error as Error).message).toMatch(message);
    expect(sent).toEqual([]);
  });

  it('key helpers throw the same TypeError', () => {
    const { layer } = fake();
    expect(() => layer().keyOf('\uD800')).toThrow(TypeError);
    expect(() => layer().versionKeyOf('\uDC00')).toThrow(/"namespace"/);
    expect(() => layer().claimKeyOf(null as never)).toThrow(/"key"/);
  });
});

describe('RedisCacheLayer subscriptions use the store set’s one subscriber', () => {
  function stores() {
    const subscribers: FakeSubscriber[] = [];
    const client = {
      eval: () => Promise.resolve(1),
      evalsha: () => Promise.resolve(1),
      duplicate: () => {
        const subscriber = new FakeSubscriber();
        subscribers.push(subscriber);
        return subscriber;
      },
    };
    return { stores: redisStores(client as never, { prefix: 'p:' }), subscribers };
  }
  const turns = async (): Promise<void> => {
    for (let i = 0; i < 3; i++) await Promise.resolve();
  };

  it('subscribe listens on <prefix>cache:bus beside the lock’s watch, on one connection', async () => {
    const { stores: set, subscribers } = stores();
    expect(set.cacheLayer).toBe(set.cacheLayer);
    const heard: string[] = [];
    let resets = 0;
    set.cacheLayer.subscribe(
      (message) => heard.push(message),
      () => resets++,
    );
    set.lock.watch('k', () => heard.push('lock woken'));
    expect(subscribers).toHaveLength(1);
    await turns();
    const subscriber = subscribers[0]!;
    expect([...new Set(subscriber.subscribed)].sort()).toEqual(['p:cache:bus', 'p:lock:wake']);
    expect(new Set(heard)).toEqual(new Set(['lock woken'])); // subscribed: the watcher looks
    expect(resets).toBeGreaterThanOrEqual(1); // and the layer's subscriber is told
    heard.length = 0;
    resets = 0;
    subscriber.emit('message', 'p:cache:bus', 'set k');
    subscriber.emit('message', 'p:lock:wake', 'p:lock:{k}');
    expect(heard).toEqual(['set k', 'lock woken']);
    subscriber.emit('ready'); // a reconnect
    await turns();
    expect(resets).toBe(1);
    await set.close();
    expect(subscriber.disconnected).toBe(true);
  });

  it('close() drops the layer’s subscriptions only; later ones are never called', async () => {
    const { stores: set, subscribers } = stores();
    const heard: string[] = [];
    set.cacheLayer.subscribe(
      (message) => heard.push(message),
      () => {},
    );
    set.idempotency.watch('k', () => heard.push('idem woken'));
    await turns();
    heard.length = 0; // subscribed: the watcher looked
    const subscriber = subscribers[0]!;
    set.cacheLayer.close();
    set.cacheLayer.close(); // idempotent
    expect(subscriber.unsubscribed).toEqual(['p:cache:bus']);
    expect(subscriber.disconnected).toBe(false);
    set.cacheLayer.subscribe(
      (message) => heard.push(`late ${message}`),
      () => {},
    );
    subscriber.emit('message', 'p:cache:bus', 'set k');
    subscriber.emit('message', 'p:idem:wake', 'k');
    expect(heard).toEqual(['idem woken']);
    set.idempotency.close();
    expect(subscriber.disconnected).toBe(true);
  });
});
