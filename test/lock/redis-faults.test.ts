/**
 * The lock on Redis when Redis misbehaves. The paused owner (Kleppmann's schedule) with its
 * renewals black-holed by the fault proxy: its signal aborts before its lease ends, a successor
 * acquires a higher fence and writes, and the owner's late write is refused. And a Redis of the
 * test's own restarted (killed, its data gone) mid-lease: the holder's signal aborts, the
 * successor's fence is still higher, and there are never two holders afterwards.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { setTimeout as sleep } from 'node:timers/promises';
import { Redis } from 'ioredis';
import { afterEach, beforeEach, expect, it, onTestFinished } from 'vitest';
import { isLockLostError, isStaleFenceError } from '../../src/lock/errors.js';
import { distributedLock } from '../../src/lock/lock.js';
import { redisStores } from '../../src/stores/redis/index.js';
import { type FaultProxy, startFaultProxy } from '../support/fault-proxy.js';
import { freePort } from '../support/free-port.js';
import { useRedis } from '../support/services.js';
import { until } from '../support/until.js';

const redis = await useRedis();

redis.describe('the lock on Redis under faults', () => {
  let proxy: FaultProxy;
  beforeEach(async () => {
    proxy = await startFaultProxy({ target: redis.target });
  });
  afterEach(async () => {
    await proxy.close();
  });

  it('renewals black-holed: the owner is aborted before its lease ends; its late write is refused', async () => {
    const proxied = redis.client({ url: proxy.url(redis.url) });
    await proxied.ping(); // connected before the 100 ms deadlines start to count
    const throughProxy = redisStores(proxied, { prefix: redis.prefix, timeoutMs: 100 });
    const direct = redisStores(redis.client(), { prefix: redis.prefix });
    const ttlMs = 1_000;
    let abortedAfterMs: number | undefined;
    let held: (() => void) | undefined;
    const resumed = new Promise<void>((resolve) => (held = resolve));
    let lateWrite: unknown;
    let ownerFence = 0;
    const owner = distributedLock({ store: throughProxy.lock })
      .withLock(
        'account',
        async ({ signal, fence }) => {
          ownerFence = fence;
          const acquiredAt = performance.now();
          signal.addEventListener('abort', () => (abortedAfterMs = performance.now() - acquiredAt));
          proxy.pause(); // the owner's connection stalls (a GC pause, a partition)
          await resumed;
          lateWrite = await throughProxy.fence.write('balance', fence, 'owner').catch((e: unknown) => e);
        },
        { ttlMs },
      )
      .catch((e: unknown) => e);
    let settled: unknown = 'pending';
    void owner.then((outcome) => (settled = outcome));
    await until(() => abortedAfterMs !== undefined || settled !== 'pending', 'the owner is aborted', 5_000);
    expect(settled).toBe('pending'); // aborted while it ran, not failed before
    console.log(`owner aborted ${abortedAfterMs!.toFixed(0)} ms into a ${ttlMs} ms lease`);
    expect(abortedAfterMs).toBeLessThan(ttlMs);
    await sleep(ttlMs + 100); // the lease has ended on the server
    const successorFence = await distributedLock({ store: direct.lock }).withLock(
      'account',
      async ({ fence }) => {
        await direct.fence.write('balance', fence, 'successor');
        return fence;
      },
      { waitMs: 0 },
    );
    expect(successorFence).toBeGreaterThan(ownerFence);
    proxy.resume();
    held!();
    expect(isLockLostError(await owner)).toBe(true);
    expect(isStaleFenceError(lateWrite)).toBe(true);
    expect((await direct.fence.read('balance'))?.value).toBe('successor');
    await throughProxy.close();
    await direct.close();
  });
});

/** A redis-server of this file's own that can be killed and started again on the same port. */
async function restartableRedis() {
  const port = await freePort();
  let child: ChildProcess | undefined;
  const start = async () => {
    child = spawn(
      'redis-server',
      ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no'],
      {
        stdio: 'ignore',
      },
    );
    const probe = new Redis(port, '127.0.0.1', {
      lazyConnect: true,
      maxRetriesPerRequest: 0,
      retryStrategy: () => 50,
    });
    probe.on('error', () => {});
    const started = performance.now();
    for (;;) {
      try {
        if (probe.status === 'wait') await probe.connect();
        if ((await probe.ping()) === 'PONG') break;
      } catch {
        // not up yet
      }
      if (performance.now() - started > 10_000) throw new Error(`redis-server on ${port} did not answer`);
      await sleep(20);
    }
    probe.disconnect();
  };
  await start();
  // Registered from inside the test, so it must be a test hook (an afterAll there never runs).
  onTestFinished(() => {
    child?.kill('SIGKILL');
  });
  return {
    port,
    restart: async () => {
      const old = child!;
      const exited = new Promise((resolve) => old.once('exit', resolve));
      old.kill('SIGKILL');
      await exited;
      await start();
    },
  };
}

redis.describe('the lock when its Redis restarts and loses everything', () => {
  it('the holder is aborted, the successor gets a higher fence, and never two holders', async () => {
    const own = await restartableRedis();
    const client = (): Redis => {
      const c = new Redis(own.port, '127.0.0.1', { maxRetriesPerRequest: 1, retryStrategy: () => 20 });
      c.on('error', () => {});
      return c;
    };
    const clients = [client(), client()];
    for (const c of clients) await c.ping(); // connected before the deadlines start to count
    const first = redisStores(clients[0]!, { timeoutMs: 200 });
    const second = redisStores(clients[1]!, { timeoutMs: 200 });
    let firstFence = 0;
    let firstAborted = false;
    let inside = 0;
    let overlaps = 0;
    const holder = distributedLock({ store: first.lock })
      .withLock(
        'job',
        async ({ signal, fence }) => {
          firstFence = fence;
          inside += 1;
          await new Promise<void>((resolve) =>
            signal.addEventListener('abort', () => {
              firstAborted = true;
              resolve();
            }),
          );
          inside -= 1;
        },
        { ttlMs: 1_500 },
      )
      .catch((e: unknown) => e);
    await until(() => firstFence > 0, 'the first holder runs');
    await own.restart(); // the lock key and the fence key are gone
    await until(() => firstAborted, "the first holder's renewal finds its lock gone", 5_000);
    const successor = await distributedLock({ store: second.lock }).withLock(
      'job',
      ({ fence }) => {
        if (inside > 0) overlaps += 1;
        return fence;
      },
      { waitMs: 5_000 },
    );
    expect(isLockLostError(await holder)).toBe(true);
    console.log(
      `after a Redis restart: first fence ${firstFence}, successor fence ${successor}, overlaps ${overlaps}`,
    );
    expect(successor).toBeGreaterThan(firstFence);
    expect(overlaps).toBe(0);
    await first.close();
    await second.close();
    for (const c of clients) c.disconnect();
  });
});
