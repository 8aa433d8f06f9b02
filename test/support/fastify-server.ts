/**
 * A real Fastify app for adapter tests: listens on 127.0.0.1:0, closes after the test, and knows
 * when every response has closed (the adapters release slots on that event).
 */
import { once } from 'node:events';
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { FastifyInstance } from 'fastify';
import { afterThisTest } from './http-server.js';

/** Starts `app` on an ephemeral port; it is closed after the current test. */
export async function startFastify(
  app: FastifyInstance,
): Promise<{ url: string; allClosed: () => Promise<unknown[]> }> {
  afterThisTest(() => app.close());
  const url = await app.listen({ port: 0, host: '127.0.0.1' });
  const closes: Promise<unknown>[] = [];
  app.server.on('request', (_req: IncomingMessage, res: ServerResponse) => closes.push(once(res, 'close')));
  /** `allClosed` resolves when every response seen so far has closed. */
  return { url, allClosed: () => Promise.all(closes) };
}
