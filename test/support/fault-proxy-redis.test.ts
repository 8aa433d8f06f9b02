import { once } from 'node:events';
import { performance } from 'node:perf_hooks';
import type { Redis } from 'ioredis';
import { afterEach, beforeEach, expect, it } from 'vitest';
import { type FaultProxy, faultProxy } from '../../src/testing/fault-proxy.js';
import { useRedis } from './services.js';

const redis = await useRedis();

/** Resolves with 'deadline' if `promise` has not settled within `ms`. */
function raceDeadline<T>(promise: Promise<T>, ms: number): Promise<T | 'deadline'> {
  let timer: NodeJS.Timeout | undefined;
  const deadline = new Promise<'deadline'>((resolve) => {
    timer = setTimeout(resolve, ms, 'deadline');
  });
  return Promise.race([promise, deadline]).finally(() => clearTimeout(timer));
}

async function roundTripMs(client: Redis): Promise<number> {
  const start = performance.now();
  await client.ping();
  return performance.now() - start;
}

redis.describe('fault proxy in front of real Redis (ioredis)', () => {
  let proxy: FaultProxy;

  beforeEach(async () => {
    proxy = await faultProxy({ target: redis.target });
  });
  afterEach(async () => {
    await proxy.close();
    expect(proxy.connections).toBe(0);
  });

  it('forwards commands unchanged', async () => {
    const client = redis.client({ url: proxy.url(redis.url) });
    await client.set(redis.key('greeting'), 'hello');
    expect(await client.get(redis.key('greeting'))).toBe('hello');
    expect(await redis.admin().get(redis.key('greeting'))).toBe('hello');
    expect(proxy.connections).toBe(1);
  });

  it('adds latency in both directions (lower bound only)', async () => {
    const client = redis.client({ url: proxy.url(redis.url) });
    await client.ping();
    proxy.setLatency(100);
    const rtt = await roundTripMs(client);
    console.log(`PING through proxy with 100 ms latency each way: ${rtt.toFixed(1)} ms`);
    expect(rtt).toBeGreaterThanOrEqual(200);

    proxy.setLatency(100, 'downstream');
    proxy.setLatency(0, 'upstream');
    expect(await roundTripMs(client)).toBeGreaterThanOrEqual(100);
  });

  it('pause black-holes a command past its deadline; resume lets it complete', async () => {
    const client = redis.client({ url: proxy.url(redis.url) });
    await client.ping();
    proxy.pause();
    const reply = client.ping('held');
    expect(await raceDeadline(reply, 150)).toBe('deadline');
    expect(client.status).toBe('ready');
    expect(proxy.connections).toBe(1);
    proxy.resume();
    expect(await reply).toBe('held');
  });

  it('pause makes ioredis commandTimeout fire; the connection works again after resume', async () => {
    const client = redis.client({ url: proxy.url(redis.url), commandTimeout: 150 });
    await client.ping();
    proxy.pause();
    await expect(client.ping()).rejects.toThrow(/timed out/i);
    proxy.resume();
    expect(await client.ping()).toBe('PONG');
  });

  it('pausing only downstream lets the server execute a command whose reply is lost', async () => {
    const client = redis.client({ url: proxy.url(redis.url), commandTimeout: 150 });
    await client.ping();
    proxy.pause('downstream');
    await expect(client.set(redis.key('applied'), 'yes')).rejects.toThrow(/timed out/i);
    await expect.poll(() => redis.admin().get(redis.key('applied'))).toBe('yes');
    proxy.resume();
  });

  it('a new connection during pause gets no reply until resume', async () => {
    proxy.pause();
    const client = redis.client({ url: proxy.url(redis.url), lazyConnect: true });
    const connecting = client.connect().then(() => client.ping());
    expect(await raceDeadline(connecting, 150)).toBe('deadline');
    expect(proxy.connections).toBe(1);
    proxy.resume();
    expect(await connecting).toBe('PONG');
  });

  it('cut drops the connection; ioredis reconnects and a later command succeeds', async () => {
    const client = redis.client({ url: proxy.url(redis.url) });
    const events: string[] = [];
    for (const event of ['close', 'reconnecting', 'ready'] as const)
      client.on(event, () => events.push(event));
    await once(client, 'ready');
    expect(proxy.accepted).toBe(1);

    const readyAgain = once(client, 'ready');
    proxy.cut();
    expect(proxy.connections).toBe(0);
    await readyAgain;

    expect(events).toEqual(['ready', 'close', 'reconnecting', 'ready']);
    expect(proxy.accepted).toBe(2);
    expect(await client.ping()).toBe('PONG');
  });

  it('cut with reset gives ECONNRESET; refuse keeps new connections out until lifted', async () => {
    const client = redis.client({ url: proxy.url(redis.url), retryStrategy: () => 20 });
    const errors: string[] = [];
    client.on('error', (error: NodeJS.ErrnoException) => errors.push(error.code ?? error.message));
    await once(client, 'ready');

    proxy.refuse(true);
    proxy.cut({ reset: true });
    await expect.poll(() => errors.includes('ECONNRESET')).toBe(true);
    expect(proxy.accepted).toBe(1);
    expect(client.status).not.toBe('ready');

    const readyAgain = once(client, 'ready');
    proxy.refuse(false);
    await readyAgain;
    expect(await client.ping()).toBe('PONG');
    expect(proxy.accepted).toBe(2);
  });
});
