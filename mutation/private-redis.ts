/**
 * A redis-server of the mutation run's own. A mutant that builds a key wrongly (a key head
 * mutated to `""`) makes the real-Redis tests write outside their fixture's prefix, where its
 * clean-up never looks; on the shared Redis those keys would stay. So every mutation run points
 * `REDIS_URL` at a server of its own, on a free port, with nothing on disk, killed on exit.
 */
import { spawn } from 'node:child_process';
import { Redis } from 'ioredis';
import { freePort } from '../test/support/free-port.js';

/**
 * Starts the server, waits (≤ 10 s) until it answers, and sets `process.env.REDIS_URL` to it for
 * the processes this one spawns. Throws when it does not answer.
 */
export async function usePrivateRedis(): Promise<string> {
  const port = await freePort();
  const child = spawn(
    'redis-server',
    ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no'],
    { stdio: 'ignore' },
  );
  // Unref'd: the run ends when its own work does (with `process.exitCode` set, as check.ts and
  // static.ts do), and the exit hook kills the server. A ref'd child kept them running forever.
  child.unref();
  process.on('exit', () => child.kill('SIGKILL'));
  // A run stopped with Ctrl-C or kill ends without 'exit' handlers: stop the server then too.
  for (const signal of ['SIGINT', 'SIGTERM'] as const)
    process.once(signal, () => {
      child.kill('SIGKILL');
      process.exit(1);
    });
  const url = `redis://127.0.0.1:${port}`;
  const client = new Redis(url, { lazyConnect: true, maxRetriesPerRequest: 0, retryStrategy: () => null });
  client.on('error', () => {});
  const until = Date.now() + 10_000;
  for (;;) {
    try {
      await client.connect();
      await client.ping();
      break;
    } catch (error) {
      client.disconnect();
      if (Date.now() > until)
        throw new Error(`the mutation run's redis-server did not answer on ${url}`, { cause: error });
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
  }
  client.disconnect();
  process.env.REDIS_URL = url;
  return url;
}
