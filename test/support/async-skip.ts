/**
 * The async `skip(req)` scenario every `bulwark/http` adapter's tests run, so each adapter is held
 * to the same rule: a promise from `skip` is waited for, `true` exempts, `false` sends the request
 * through the adapter, a rejection fails the request.
 */
import Fastify, { type FastifyInstance } from 'fastify';
import { expect } from 'vitest';
import { startFastify } from './fastify-server.js';

/** An async `skip`: exempts `/internal`, sends every other path through, rejects for `/reject`. */
export async function asyncSkip(request: { readonly url?: string | undefined }): Promise<boolean> {
  if (request.url === '/reject') throw new Error('skip lookup failed');
  return request.url === '/internal';
}

/**
 * A Fastify app with the adapter `register` adds and the scenario's routes (`/internal`, `/orders`,
 * `/reject`, and any `extra` adds); started, closed after the test.
 */
export async function fastifyWithSkipRoutes(
  register: (app: FastifyInstance) => PromiseLike<unknown>,
  extra?: (app: FastifyInstance) => void,
): Promise<{ url: string; allClosed: () => Promise<unknown[]> }> {
  const app = Fastify({ forceCloseConnections: true });
  await register(app);
  app.get('/internal', async () => 'internal');
  app.get('/orders', async () => 'orders');
  app.get('/reject', async () => 'never');
  extra?.(app);
  return startFastify(app);
}

/**
 * Asserts the scenario on a server whose adapter uses {@link asyncSkip}: `/internal` reaches its
 * handler three times with no `RateLimit` header (nothing counted); then `/orders` is admitted
 * `admitted` times and refused with `refusedStatus`; `/reject` fails with a 500.
 */
export async function expectAsyncSkipHonoured(
  url: string,
  refusedStatus: number,
  admitted = 0,
): Promise<void> {
  for (let i = 0; i < 3; i++) {
    const internal = await fetch(`${url}/internal`);
    expect(await internal.text()).toBe('internal');
    expect(internal.headers.get('ratelimit')).toBeNull();
  }
  for (let i = 0; i < admitted; i++) expect((await fetch(`${url}/orders`)).status).toBe(200);
  expect((await fetch(`${url}/orders`)).status).toBe(refusedStatus);
  expect((await fetch(`${url}/reject`)).status).toBe(500);
}
