/**
 * The idempotency adapters through real servers (127.0.0.1, ephemeral ports) and real `fetch`:
 * every answer of draft-ietf-httpapi-idempotency-key-header, the same suite on node:http (raw body
 * read by the middleware), Express (body parsers before it) and Fastify (the plugin).
 */
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import express from 'express';
import Fastify from 'fastify';
import { describe, expect, it } from 'vitest';
import { startFastify } from '../../test/support/fastify-server.js';
import { listen } from '../../test/support/http-server.js';
import { until } from '../../test/support/until.js';
import { StoreUnavailableError } from '../core/errors.js';
import { idempotency } from '../idempotency/idempotency.js';
import type { IdempotencyStore } from '../idempotency/store.js';
import type { FastifyRequestLike } from './fastify-types.js';
import { idempotencyMiddleware } from './idempotency.js';
import { fastifyIdempotency } from './idempotency-fastify.js';
import type { IdempotencyHttpOptions } from './idempotency-options.js';

/** What a test route answers. */
interface Answer {
  readonly status: number;
  readonly headers?: Record<string, string> | undefined;
  readonly body: string | Uint8Array;
}

/** A route: sees the path and the body as its framework gives it, answers; counted per run. */
type Route = (request: { readonly path: string; readonly body: unknown }) => Answer | Promise<Answer>;

type Options = Omit<IdempotencyHttpOptions<IncomingMessage>, 'tenant'> & {
  readonly tenant?: ((request: { headers: IncomingMessage['headers'] }) => string) | undefined;
};

/** Starts a server whose every path goes through the adapter to `route`; returns its URL. */
type Start = (options: Options, route: Route) => Promise<string>;

function writeNode(res: ServerResponse, answer: Answer): void {
  res.writeHead(answer.status, answer.headers);
  res.end(answer.body);
}

const startNode: Start = async (options, route) => {
  const mw = idempotencyMiddleware(options);
  const server = createServer((req, res) =>
    mw(req, res, (error?: unknown) => {
      if (error !== undefined) {
        res.writeHead(500, { 'x-error': String((error as Error).message).slice(0, 200) });
        res.end();
        return;
      }
      const path = (req.url ?? '/').split('?')[0]!;
      Promise.resolve(route({ path, body: (req as { body?: unknown }).body })).then((a) => writeNode(res, a));
    }),
  );
  return (await listen(server)).url;
};

const startExpress: Start = async (options, route) => {
  const app = express();
  app.use(express.json());
  app.use(express.raw({ type: 'application/octet-stream' }));
  app.use(idempotencyMiddleware(options));
  app.use(async (req, res) => {
    const answer = await route({ path: req.path, body: req.body });
    res.status(answer.status).set(answer.headers ?? {});
    res.send(typeof answer.body === 'string' ? answer.body : Buffer.from(answer.body));
  });
  return (await listen(createServer(app))).url;
};

const startFastifyApp: Start = async (options, route) => {
  const app = Fastify({ forceCloseConnections: true });
  app.addContentTypeParser('application/octet-stream', { parseAs: 'buffer' }, (_req, body, done) =>
    done(null, body),
  );
  await app.register(fastifyIdempotency, options as IdempotencyHttpOptions<FastifyRequestLike>);
  app.all('/*', async (request, reply) => {
    const answer = await route({ path: request.url.split('?')[0]!, body: request.body });
    reply.code(answer.status).headers(answer.headers ?? {});
    return typeof answer.body === 'string' ? answer.body : Buffer.from(answer.body);
  });
  return (await startFastify(app)).url;
};

const frameworks: [string, Start][] = [
  ['node:http', startNode],
  ['Express', startExpress],
  ['Fastify', startFastifyApp],
];

/** A route counting its runs, answering `answer` (or the next of `answers` each run). */
function counted(...answers: Answer[]) {
  let runs = 0;
  const route: Route = () => answers[Math.min(runs++, answers.length - 1)]!;
  return { route, runs: () => runs };
}

const created: Answer = {
  status: 201,
  headers: { 'content-type': 'application/json', location: '/orders/1', 'x-trace': 'abc' },
  body: '{"id":1}',
};

/** POSTs JSON `body` with `key` (none when undefined) and extra headers. */
function post(url: string, key: string | undefined, body: unknown = { amount: 1 }, headers = {}) {
  return fetch(url, {
    method: 'POST',
    headers: {
      'content-type': 'application/json',
      ...(key === undefined ? {} : { 'idempotency-key': key }),
      ...headers,
    },
    body: JSON.stringify(body),
  });
}

/**
 * The problem assertion of test/support/problem-assertions.ts, except that the content type may
 * carry a charset (Fastify adds one to every string it sends) and `retryAfter` may be a pattern.
 */
async function expectProblem(
  response: Response,
  expected: { status: number; retryAfter: string | RegExp | null; body?: Record<string, unknown> },
): Promise<Record<string, unknown>> {
  expect(response.status).toBe(expected.status);
  expect(response.headers.get('content-type')).toMatch(/^application\/problem\+json(; charset=utf-8)?$/);
  const retryAfter = response.headers.get('retry-after');
  if (expected.retryAfter instanceof RegExp) expect(retryAfter).toMatch(expected.retryAfter);
  else expect(retryAfter).toBe(expected.retryAfter);
  const body = (await response.json()) as Record<string, unknown>;
  expect(body).toMatchObject({ status: expected.status, ...expected.body });
  return body;
}

/** An idempotency store whose every call fails as a remote store's does when it is down. */
const downStore: IdempotencyStore = {
  claim: () => Promise.reject(new StoreUnavailableError('idempotency store: connect ECONNREFUSED')),
  complete: () => Promise.reject(new StoreUnavailableError('down')),
  release: () => Promise.reject(new StoreUnavailableError('down')),
  renew: () => Promise.reject(new StoreUnavailableError('down')),
};

describe.each(frameworks)('idempotency adapter on %s', (_name, start) => {
  it('runs the route once; the replay has the same status, allow-listed headers and body, marked replayed', async () => {
    const { route, runs } = counted(created);
    const url = await start({ idempotency: idempotency() }, route);
    const first = await post(`${url}/orders`, 'k-1');
    expect(first.status).toBe(201);
    expect(first.headers.get('idempotent-replayed')).toBeNull();
    expect(first.headers.get('x-trace')).toBe('abc');
    expect(await first.text()).toBe('{"id":1}');
    const again = await post(`${url}/orders`, 'k-1');
    expect(again.status).toBe(201);
    expect(again.headers.get('idempotent-replayed')).toBe('true');
    expect(again.headers.get('content-type')).toBe(first.headers.get('content-type'));
    expect(again.headers.get('content-type')).toMatch(/^application\/json/);
    expect(again.headers.get('location')).toBe('/orders/1');
    expect(again.headers.get('x-trace')).toBeNull(); // not allow-listed
    expect(await again.text()).toBe('{"id":1}');
    expect(runs()).toBe(1);
  });

  it('answers 400 for a missing key where required, and passes it through with required: false', async () => {
    const { route, runs } = counted(created);
    const url = await start({ idempotency: idempotency() }, route);
    await expectProblem(await post(`${url}/orders`, undefined), {
      status: 400,
      retryAfter: null,
      body: { code: 'ERR_IDEMPOTENCY_KEY_MISSING', instance: '/orders' },
    });
    expect(runs()).toBe(0);
    const optional = await start({ idempotency: idempotency(), required: false }, route);
    expect((await post(`${optional}/orders`, undefined)).status).toBe(201);
    expect((await post(`${optional}/orders`, undefined)).headers.get('idempotent-replayed')).toBeNull();
    expect(runs()).toBe(2);
  });

  it.each([
    ['empty', ''],
    ['over 255 characters', 'k'.repeat(256)],
    ['an sf-string over 255 characters', `"${'k'.repeat(256)}"`],
    ['a control character (tab)', 'ab\tc'],
    ['an empty sf-string', '""'],
    ['an unterminated sf-string', '"abc'],
  ])('answers 400 for a malformed key: %s', async (_what, key) => {
    const { route, runs } = counted(created);
    const url = await start({ idempotency: idempotency() }, route);
    const body = await expectProblem(await post(`${url}/orders`, key), {
      status: 400,
      retryAfter: null,
      body: { code: 'ERR_IDEMPOTENCY_KEY_INVALID' },
    });
    expect(String(body.detail)).toMatch(/^the Idempotency-Key/);
    expect(runs()).toBe(0);
  });

  it('accepts a 255-character key, and the sf-string and bare token of the same key as one key', async () => {
    const { route, runs } = counted(created);
    const url = await start({ idempotency: idempotency() }, route);
    expect((await post(`${url}/orders`, 'k'.repeat(255))).status).toBe(201);
    expect((await post(`${url}/orders`, '"abc-1"')).headers.get('idempotent-replayed')).toBeNull();
    expect((await post(`${url}/orders`, 'abc-1')).headers.get('idempotent-replayed')).toBe('true');
    expect((await post(`${url}/orders`, 'a\\b')).headers.get('idempotent-replayed')).toBeNull();
    expect((await post(`${url}/orders`, '"a\\\\b"')).headers.get('idempotent-replayed')).toBe('true');
    expect(runs()).toBe(3);
  });

  it('answers 413 for a body over maxBodyBytes before the route runs', async () => {
    const { route, runs } = counted(created);
    const url = await start({ idempotency: idempotency(), maxBodyBytes: 64 }, route);
    await expectProblem(await post(`${url}/orders`, 'big', { pad: 'x'.repeat(100) }), {
      status: 413,
      retryAfter: null,
      body: { code: 'ERR_BODY_TOO_LARGE' },
    });
    expect(runs()).toBe(0);
    expect((await post(`${url}/orders`, 'small', { pad: 'x' })).status).toBe(201);
    expect(runs()).toBe(1);
  });

  it('answers 409 with Retry-After while the key is in flight (wait: false)', async () => {
    let release!: () => void;
    const gate = new Promise<void>((resolve) => {
      release = resolve;
    });
    let runs = 0;
    const url = await start({ idempotency: idempotency({ wait: false, leaseMs: 4_500 }) }, async () => {
      runs += 1;
      await gate;
      return created;
    });
    const first = post(`${url}/orders`, 'slow');
    first.catch(() => {}); // awaited below; a failed assertion before must not leave it unhandled
    await until(() => runs === 1, 'the first request runs');
    const body = await expectProblem(await post(`${url}/orders`, 'slow'), {
      status: 409,
      retryAfter: '5',
      body: { code: 'ERR_IDEMPOTENCY_IN_PROGRESS', retryAfterMs: 5_000 },
    });
    expect(body.detail).toBe('a request with this idempotency key is still in progress');
    release();
    expect((await first).status).toBe(201);
    expect(runs).toBe(1);
  });

  it('answers 422 when the key is reused with another body', async () => {
    const { route, runs } = counted(created);
    const url = await start({ idempotency: idempotency() }, route);
    expect((await post(`${url}/orders`, 'k', { amount: 1 })).status).toBe(201);
    await expectProblem(await post(`${url}/orders`, 'k', { amount: 2 }), {
      status: 422,
      retryAfter: null,
      body: { code: 'ERR_IDEMPOTENCY_CONFLICT', kind: 'conflict' },
    });
    expect(runs()).toBe(1);
  });

  it('stores a 404: the retry is a replay', async () => {
    const { route, runs } = counted({ status: 404, body: 'no such order' }, created);
    const url = await start({ idempotency: idempotency() }, route);
    expect((await post(`${url}/orders`, 'k')).status).toBe(404);
    const again = await post(`${url}/orders`, 'k');
    expect(again.status).toBe(404);
    expect(again.headers.get('idempotent-replayed')).toBe('true');
    expect(await again.text()).toBe('no such order');
    expect(runs()).toBe(1);
  });

  it.each([500, 503, 429, 409, 408, 425])(
    'never stores a %i: the retry runs the route again',
    async (status) => {
      const { route, runs } = counted({ status, body: 'not now' }, created);
      const url = await start({ idempotency: idempotency() }, route);
      expect((await post(`${url}/orders`, 'k')).status).toBe(status);
      const retry = await post(`${url}/orders`, 'k');
      expect(retry.status).toBe(201);
      expect(retry.headers.get('idempotent-replayed')).toBeNull();
      expect(runs()).toBe(2);
    },
  );

  it('answers 503 with Retry-After when the store is down; the route never runs', async () => {
    const { route, runs } = counted(created);
    const url = await start({ idempotency: idempotency({ store: downStore }) }, route);
    const body = await expectProblem(await post(`${url}/orders`, 'k'), {
      status: 503,
      retryAfter: /^[12]$/,
      body: { code: 'ERR_STORE_UNAVAILABLE' },
    });
    expect(JSON.stringify(body)).not.toContain('ECONNREFUSED');
    expect(runs()).toBe(0);
  });

  it('scopes keys by tenant and by route: the same key never shares a result across them', async () => {
    const { route, runs } = counted(created);
    const tenant = (request: { headers: IncomingMessage['headers'] }) => String(request.headers['x-tenant']);
    const url = await start({ idempotency: idempotency(), tenant }, route);
    expect((await post(`${url}/orders`, 'k', {}, { 'x-tenant': 'a' })).status).toBe(201);
    const b = await post(`${url}/orders`, 'k', {}, { 'x-tenant': 'b' });
    expect(b.headers.get('idempotent-replayed')).toBeNull();
    const other = await post(`${url}/refunds`, 'k', {}, { 'x-tenant': 'a' });
    expect(other.headers.get('idempotent-replayed')).toBeNull();
    const replay = await post(`${url}/orders?page=2`, 'k', {}, { 'x-tenant': 'a' });
    expect(replay.headers.get('idempotent-replayed')).toBe('true'); // the query is not the route
    expect(runs()).toBe(3);
  });

  it('passes methods not listed straight through, key or not', async () => {
    const { route, runs } = counted({ status: 200, body: 'listed' });
    const url = await start({ idempotency: idempotency(), methods: ['PUT'] }, route);
    expect((await fetch(`${url}/orders`)).status).toBe(200);
    expect((await post(`${url}/orders`, undefined)).status).toBe(200);
    expect((await fetch(`${url}/orders`, { method: 'PATCH', body: '{}' })).status).toBe(200);
    expect(runs()).toBe(3);
    expect((await fetch(`${url}/orders`, { method: 'PUT', body: '{}' })).status).toBe(400);
  });

  it('replays a binary response byte for byte, and fingerprints a binary body as bytes', async () => {
    const bytes = new Uint8Array(256).map((_, i) => 255 - i);
    let seen: unknown;
    let runs = 0;
    const url = await start({ idempotency: idempotency() }, ({ body }) => {
      runs += 1;
      seen = body;
      return { status: 200, headers: { 'content-type': 'application/octet-stream' }, body: bytes };
    });
    const send = (payload: Uint8Array<ArrayBuffer>) =>
      fetch(`${url}/blobs`, {
        method: 'POST',
        headers: { 'content-type': 'application/octet-stream', 'idempotency-key': 'bin' },
        body: payload,
      });
    const request = new Uint8Array([0, 1, 2, 254, 255, 0]);
    expect(new Uint8Array(await (await send(request)).arrayBuffer())).toEqual(bytes);
    expect(new Uint8Array(seen as Buffer)).toEqual(request);
    const replay = await send(request);
    expect(replay.headers.get('idempotent-replayed')).toBe('true');
    expect(replay.headers.get('content-type')).toBe('application/octet-stream');
    expect(new Uint8Array(await replay.arrayBuffer())).toEqual(bytes);
    expect((await send(new Uint8Array([0, 1, 2, 254, 255, 1]))).status).toBe(422);
    expect(runs).toBe(1);
  });
});
