/**
 * The outbox's Redis Streams publisher against the real Redis: a batch is one pipeline (one write on
 * the socket), every entry lands in order with all its fields, per-event refusals name exactly the
 * failed ids, and an aborted signal or a dead connection rejects instead of hanging. The "spy" only
 * records what a real client is asked to send; the commands still go to Redis.
 */
import { randomUUID } from 'node:crypto';
import { performance } from 'node:perf_hooks';
import type { Redis } from 'ioredis';
import { afterEach, beforeEach, expect, it, vi } from 'vitest';
import { isStoreUnavailableError } from '../../src/core/errors.js';
import { isOutboxPublishError, type OutboxPublishError } from '../../src/outbox/errors.js';
import type { OutboxMessage } from '../../src/outbox/store.js';
import { redisStreamPublisher } from '../../src/stores/redis/index.js';
import { type FaultProxy, startFaultProxy } from '../support/fault-proxy.js';
import { freePort } from '../support/free-port.js';
import { useRedis } from '../support/services.js';

const redis = await useRedis();
const open = { signal: new AbortController().signal };

/** `client` with its pipelines' XADD arguments and its other method calls recorded. */
function spied(
  client: Redis,
  isCluster = false,
): { client: Redis; pipelines: string[][][]; calls: string[] } {
  const pipelines: string[][][] = [];
  const calls: string[] = [];
  const proxy = new Proxy(client, {
    get(target, property, receiver) {
      if (property === 'isCluster') return isCluster;
      const value = Reflect.get(target, property, receiver);
      if (typeof value !== 'function') return value;
      return (...args: unknown[]) => {
        const result = value.apply(target, args);
        if (property !== 'pipeline') calls.push(String(property));
        else {
          const commands: string[][] = [];
          pipelines.push(commands);
          const xadd = result.xadd.bind(result);
          result.xadd = (...xaddArgs: string[]) => {
            commands.push(xaddArgs);
            return xadd(...xaddArgs);
          };
        }
        return result;
      };
    },
  });
  return { client: proxy, pipelines, calls };
}

function message(n: number, overrides: Partial<OutboxMessage> = {}): OutboxMessage {
  return {
    id: randomUUID(),
    topic: 'orders',
    key: n % 10 === 0 ? undefined : `order-${n % 7}`,
    payload: { n, items: [n, `x${n}`], nested: { ok: true } },
    headers: n % 2 === 0 ? { traceparent: `00-${n}` } : {},
    attempts: 0,
    createdAt: 1_700_000_000_000 + n,
    ...overrides,
  };
}

/** The fields an entry must carry for `m`, as XRANGE returns them. */
function fieldsOf(m: OutboxMessage): string[] {
  const fields = { id: m.id, topic: m.topic, key: m.key ?? '', payload: JSON.stringify(m.payload) };
  return Object.entries({ ...fields, headers: JSON.stringify(m.headers) }).flat();
}

async function entries(stream: string): Promise<string[][]> {
  return (await redis.admin().xrange(stream, '-', '+')).map(([, fields]) => fields);
}

async function failureOf(promise: Promise<unknown>): Promise<unknown> {
  return promise.then(
    () => expect.unreachable('the publish should have failed'),
    (error: unknown) => error,
  );
}

redis.describe('redisStreamPublisher', () => {
  it('appends a batch of 100 in one pipeline and one socket write, in order, with every field', async () => {
    const real = redis.client();
    await real.ping();
    const { client, pipelines, calls } = spied(real);
    const stream = redis.key('events');
    const publish = redisStreamPublisher(client, { stream });
    const batch = Array.from({ length: 100 }, (_, n) => message(n));
    const socket = real.stream;
    const write = socket.write;
    let writes = 0;
    socket.write = function (this: typeof socket, ...args: Parameters<typeof write>) {
      writes += 1;
      return write.apply(this, args);
    } as typeof write;
    try {
      await publish(batch, open);
    } finally {
      socket.write = write;
    }
    expect(pipelines.map((p) => p.length)).toEqual([100]);
    expect(calls).toEqual([]);
    expect(writes).toBe(1);
    expect(pipelines[0]![0]!.slice(0, 2)).toEqual([stream, '*']); // no MAXLEN, no NOMKSTREAM
    expect(await entries(stream)).toEqual(batch.map(fieldsOf));
  });

  it('sends one entry per stream given by the stream function, still in one pipeline', async () => {
    const { client, pipelines } = spied(redis.client());
    const publish = redisStreamPublisher(client, { stream: (m) => redis.key('events', m.topic) });
    const batch = Array.from({ length: 10 }, (_, n) =>
      message(n, { topic: n % 3 === 0 ? 'payments' : 'orders' }),
    );
    await publish(batch, open);
    expect(pipelines).toHaveLength(1);
    for (const topic of ['orders', 'payments']) {
      expect(await entries(redis.key('events', topic))).toEqual(
        batch.filter((m) => m.topic === topic).map(fieldsOf),
      );
    }
  });

  it('on a Cluster, sends one pipeline per stream (a pipeline keeps to one node)', async () => {
    const { client, pipelines } = spied(redis.client(), true);
    const publish = redisStreamPublisher(client, { stream: (m) => redis.key('events', m.topic) });
    const batch = Array.from({ length: 6 }, (_, n) => message(n, { topic: n % 2 === 0 ? 'a' : 'b' }));
    await publish(batch, open);
    expect(pipelines.map((p) => p.map((args) => args[0]))).toEqual([
      [redis.key('events', 'a'), redis.key('events', 'a'), redis.key('events', 'a')],
      [redis.key('events', 'b'), redis.key('events', 'b'), redis.key('events', 'b')],
    ]);
    expect(await entries(redis.key('events', 'b'))).toEqual(
      batch.filter((m) => m.topic === 'b').map(fieldsOf),
    );
  });

  it('trims each stream to about maxLen (MAXLEN ~): at least maxLen kept, at most a node more', async () => {
    const { client, pipelines } = spied(redis.client());
    const stream = redis.key('events');
    const publish = redisStreamPublisher(client, { stream, maxLen: 10 });
    let last: OutboxMessage | undefined;
    for (let b = 0; b < 10; b += 1) {
      const batch = Array.from({ length: 100 }, (_, n) => message(b * 100 + n));
      await publish(batch, open);
      last = batch.at(-1);
    }
    const [, nodeEntries] = (await redis.admin().config('GET', 'stream-node-max-entries')) as string[];
    const length = await redis.admin().xlen(stream);
    console.log(`1000 appended with maxLen 10: ${length} kept (node size ${nodeEntries})`);
    expect(pipelines[0]![0]!.slice(0, 5)).toEqual([stream, 'MAXLEN', '~', '10', '*']);
    expect(length).toBeGreaterThanOrEqual(10);
    expect(length).toBeLessThanOrEqual(10 + Number(nodeEntries));
    expect((await entries(stream)).at(-1)).toEqual(fieldsOf(last!));
  });

  it('an XADD that Redis refuses (WRONGTYPE) fails exactly its event; the others are appended', async () => {
    const publish = redisStreamPublisher(redis.client(), { stream: (m) => redis.key('events', m.topic) });
    await redis.admin().set(redis.key('events', 'broken'), 'a plain string');
    const batch = [message(1), message(2, { topic: 'broken' }), message(3)];
    const error = (await failureOf(publish(batch, open))) as OutboxPublishError;
    expect(isOutboxPublishError(error)).toBe(true);
    expect([...error.failures.keys()]).toEqual([batch[1]!.id]);
    expect(String(error.failures.get(batch[1]!.id))).toMatch(/WRONGTYPE/);
    expect(error.kind).toBe('transient');
    expect(await entries(redis.key('events', 'orders'))).toEqual([fieldsOf(batch[0]!), fieldsOf(batch[2]!)]);
    expect(await redis.admin().get(redis.key('events', 'broken'))).toBe('a plain string');
  });

  it('fails, without sending, an event whose stream function gives no name or whose payload is no JSON', async () => {
    const { client, pipelines } = spied(redis.client());
    const publish = redisStreamPublisher(client, {
      stream: (m) => (m.topic === 'nowhere' ? '' : redis.key('events')),
    });
    const batch = [
      message(1, { topic: 'nowhere' }),
      message(2, { payload: 10n }),
      message(3),
      message(4, { payload: undefined }),
    ];
    const error = (await failureOf(publish(batch, open))) as OutboxPublishError;
    expect([...error.failures.keys()]).toEqual([batch[0]!.id, batch[1]!.id, batch[3]!.id]);
    for (const failure of error.failures.values()) expect(failure).toBeInstanceOf(TypeError);
    expect(pipelines.map((p) => p.length)).toEqual([1]);
    expect(await entries(redis.key('events'))).toEqual([fieldsOf(batch[2]!)]);

    const none = (await failureOf(publish([batch[0]!], open))) as OutboxPublishError;
    expect([...none.failures.keys()]).toEqual([batch[0]!.id]);
    expect(pipelines).toHaveLength(1); // nothing left to send: no pipeline
  });

  it('resolves an empty batch without sending anything', async () => {
    const { client, pipelines, calls } = spied(redis.client());
    await redisStreamPublisher(client, { stream: redis.key('events') })([], open);
    expect(pipelines).toEqual([]);
    expect(calls).toEqual([]);
  });

  it('an already aborted signal rejects with its reason and sends nothing', async () => {
    const { client, pipelines } = spied(redis.client());
    const publish = redisStreamPublisher(client, { stream: redis.key('events') });
    const reason = new Error('relay stopping');
    await expect(publish([message(1)], { signal: AbortSignal.abort(reason) })).rejects.toBe(reason);
    expect(pipelines).toEqual([]);
    expect(await redis.keys()).toEqual([]);
  });

  it('refuses at once while the client is reconnecting (nothing waits in the offline queue)', async () => {
    const real = redis.client({ url: `redis://127.0.0.1:${await freePort()}`, retryStrategy: () => 50 });
    await vi.waitFor(() => expect(real.status).toBe('reconnecting'));
    const { client, pipelines } = spied(real);
    const error = await failureOf(redisStreamPublisher(client, { stream: 'events' })([message(1)], open));
    expect(isStoreUnavailableError(error)).toBe(true);
    expect((error as Error).message).toBe('Redis connection is reconnecting');
    expect(pipelines).toEqual([]);
  });

  it('rejects (not hangs) when the connection fails: a closed port with maxRetriesPerRequest 0', async () => {
    const client = redis.client({
      url: `redis://127.0.0.1:${await freePort()}`,
      lazyConnect: true,
      maxRetriesPerRequest: 0,
    });
    const error = await failureOf(redisStreamPublisher(client, { stream: 'events' })([message(1)], open));
    expect(isStoreUnavailableError(error)).toBe(true);
    expect((error as Error).cause).toHaveProperty('name', 'MaxRetriesPerRequestError');
  });

  redis.describe('through a black-holed connection', () => {
    let proxy: FaultProxy;
    beforeEach(async () => {
      proxy = await startFaultProxy({ target: redis.target });
    });
    afterEach(async () => {
      await proxy.close();
    });

    it("rejects after the client's commandTimeout, while Redis still has not answered", async () => {
      const client = redis.client({ url: proxy.url(redis.url), commandTimeout: 200 });
      await client.ping();
      proxy.pause();
      const publish = redisStreamPublisher(client, { stream: redis.key('events') });
      const start = performance.now();
      const error = await failureOf(publish([message(1), message(2)], open));
      const ms = performance.now() - start;
      console.log(`black-holed, commandTimeout 200 ms: rejected after ${ms.toFixed(1)} ms`);
      expect(isStoreUnavailableError(error)).toBe(true);
      expect(((error as Error).cause as Error).message).toBe('Command timed out');
      expect(ms).toBeGreaterThanOrEqual(195); // timers and performance.now() round differently
      expect(proxy.connections).toBe(1); // still paused: the client's own limit answered
    });

    it('rejects with the reason when aborted while waiting; the XADDs may still land (at least once)', async () => {
      const client = redis.client({ url: proxy.url(redis.url) });
      await client.ping();
      proxy.pause();
      const stream = redis.key('events');
      const controller = new AbortController();
      const reason = new Error('lease ended');
      const batch = [message(1), message(2), message(3)];
      const pending = redisStreamPublisher(client, { stream })(batch, { signal: controller.signal });
      setTimeout(() => controller.abort(reason), 50);
      await expect(pending).rejects.toBe(reason);
      expect(await redis.admin().exists(stream)).toBe(0);
      proxy.resume();
      await vi.waitFor(async () => expect(await entries(stream)).toEqual(batch.map(fieldsOf)));
    });
  });

  it.each([
    ['no options', undefined, /expected "stream" to be a non-empty string or a function, got undefined/],
    ['options that are no object', 5, /expected "redisStreamPublisher options" to be an options object/],
    ['no stream', {}, /expected "stream" to be a non-empty string or a function, got undefined/],
    ['an empty stream', { stream: '' }, /expected "stream" to be a non-empty string or a function, got ""/],
    ['a numeric stream', { stream: 5 }, /expected "stream" to be a non-empty string or a function, got 5/],
    ['maxLen 0', { stream: 's', maxLen: 0 }, /expected "maxLen" to be a positive integer, got 0/],
    ['a fractional maxLen', { stream: 's', maxLen: 1.5 }, /"maxLen"/],
    ['a misspelt option', { stream: 's', maxlen: 5 }, /unknown option "maxlen".*did you mean "maxLen"/],
  ])('refuses %s with a TypeError', (_, options, message) => {
    const make = () => redisStreamPublisher(redis.admin(), options as never);
    expect(make).toThrow(TypeError);
    expect(make).toThrow(message);
  });

  it.each([
    ['null', null],
    ['an object without pipeline', { xadd() {} }],
    ['a string', 'redis://127.0.0.1'],
  ])('refuses %s as the client with a TypeError', (_, client) => {
    expect(() => redisStreamPublisher(client as never, { stream: 's' })).toThrow(
      /expected "client" to be an ioredis Redis or Cluster client/,
    );
  });
});
