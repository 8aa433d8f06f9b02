/**
 * Real HTTP servers for adapter tests: listen on 127.0.0.1:0, close after the test, and know when
 * every response has closed (the adapters release slots on that event).
 */
import { once } from 'node:events';
import type { IncomingMessage, Server, ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach } from 'vitest';

const cleanups: (() => Promise<void>)[] = [];
afterEach(async () => {
  await Promise.all(cleanups.splice(0).map((c) => c()));
});

/** Starts `server` on an ephemeral port; it is closed (connections too) after the current test. */
export async function listen(server: Server): Promise<{ url: string; allClosed: () => Promise<unknown[]> }> {
  const closes: Promise<unknown>[] = [];
  server.on('request', (_req: IncomingMessage, res: ServerResponse) => closes.push(once(res, 'close')));
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  cleanups.push(
    () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  );
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    /** Resolves when every response seen so far has closed. */
    allClosed: () => Promise.all(closes),
  };
}

/** Registers extra cleanup (e.g. closing a Fastify app) to run after the current test. */
export function afterThisTest(cleanup: () => Promise<void>): void {
  cleanups.push(cleanup);
}
