/**
 * A redis-server of the test's own, on a free port, for tests that disturb the server (`SCRIPT
 * FLUSH`, restarts): the shared Redis on the standard port is never touched. It keeps nothing on
 * disk and is killed after the file.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { Redis } from 'ioredis';
import { afterAll } from 'vitest';
import { freePort } from './free-port.js';

/** A running private redis-server. */
export interface PrivateRedis {
  /** Its URL, `redis://127.0.0.1:<port>`. */
  readonly url: string;
  /** A new client of it (disconnected after the file). */
  client(): Redis;
}

/**
 * Starts `redis-server` on a free port (no persistence) and waits until it answers; stops it and
 * every client made with {@link PrivateRedis.client} after the file. Throws when `redis-server`
 * cannot be started or does not answer within 10 s.
 */
export async function startPrivateRedis(): Promise<PrivateRedis> {
  const port = await freePort();
  const child: ChildProcess = spawn(
    'redis-server',
    ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no'],
    { stdio: 'ignore' },
  );
  const clients: Redis[] = [];
  afterAll(async () => {
    for (const client of clients) client.disconnect();
    child.kill('SIGKILL');
  });
  const url = `redis://127.0.0.1:${port}`;
  const probe = new Redis(url, { lazyConnect: true, maxRetriesPerRequest: 0, retryStrategy: () => 50 });
  probe.on('error', () => {});
  clients.push(probe);
  const started = Date.now();
  for (;;) {
    if (child.exitCode !== null) throw new Error(`redis-server exited with ${child.exitCode}`);
    try {
      if (probe.status === 'wait') await probe.connect();
      if ((await probe.ping()) === 'PONG') break;
    } catch {
      // not up yet
    }
    if (Date.now() - started > 10_000) throw new Error(`redis-server on port ${port} did not answer in 10 s`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  return {
    url,
    client() {
      const client = new Redis(url);
      client.on('error', () => {});
      clients.push(client);
      return client;
    },
  };
}
