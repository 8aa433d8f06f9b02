/**
 * idempotencyMiddleware on node:http where the frameworks differ: the raw body the middleware
 * reads itself (bounded, handed on as `req.body`), clients that leave mid-request, user functions
 * that fail, and option errors (Fastify's registration too).
 */
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import { connect } from 'node:net';
import { Readable } from 'node:stream';
import Fastify from 'fastify';
import { describe, expect, it } from 'vitest';
import { startFastify } from '../../test/support/fastify-server.js';
import { listen } from '../../test/support/http-server.js';
import { forwardingStore } from '../../test/support/idempotency-stores.js';
import { until } from '../../test/support/until.js';
import { idempotency } from '../idempotency/idempotency.js';
import { memoryIdempotencyStore } from '../idempotency/memory-store.js';
import type { IdempotencyStore } from '../idempotency/store.js';
import { FakeClock } from '../testing/fake-clock.js';
import { idempotencyMiddleware } from './idempotency.js';
import { fastifyIdempotency } from './idempotency-fastify.js';

type Handler = (req: IncomingMessage & { body?: unknown }, res: ServerResponse) => void;

async function serve(mw: ReturnType<typeof idempotencyMiddleware>, handler: Handler) {
  const server = createServer((req, res) =>
    mw(req, res, (error?: unknown) => {
      if (error !== undefined) {
        res.writeHead(500, { 'x-error': String((error as Error).message).slice(0, 200) });
        res.end();
      } else handler(req, res);
    }),
  );
  return (await listen(server)).url;
}

const post = (url: string, key: string, body: BodyInit = '{}', init: RequestInit = {}) =>
  fetch(url, { method: 'POST', headers: { 'idempotency-key': key }, body, ...init });

/** Sends a POST over a raw socket and closes it once the server has the request (`seen`). */
async function postAndLeave(url: string, key: string, seen: () => boolean): Promise<void> {
  const { hostname, port } = new URL(url);
  const socket = connect(Number(port), hostname);
  socket.on('error', () => {});
  await new Promise<void>((resolve) => socket.once('connect', () => resolve()));
  socket.write(
    `POST /orders HTTP/1.1\r\nHost: ${hostname}\r\nIdempotency-Key: ${key}\r\nContent-Length: 2\r\n\r\n{}`,
  );
  await until(seen, 'the server runs the route');
  socket.destroy();
}

describe('idempotencyMiddleware: the body it reads', () => {
  it('hands the raw body on as req.body, the same bytes', async () => {
    let body: unknown;
    const url = await serve(idempotencyMiddleware({ idempotency: idempotency() }), (req, res) => {
      body = req.body;
      res.end('ok');
    });
    expect((await post(url, 'k', 'héllo')).status).toBe(200);
    expect(Buffer.isBuffer(body)).toBe(true);
    expect((body as Buffer).toString('utf8')).toBe('héllo');
  });

  it('answers 413 at once for a declared Content-Length over the default 1 MiB; nothing runs', async () => {
    let runs = 0;
    const url = await serve(idempotencyMiddleware({ idempotency: idempotency() }), (_req, res) => {
      runs += 1;
      res.end('ok');
    });
    const response = await post(url, 'big', new Uint8Array(1_048_577));
    expect(response.status).toBe(413);
    expect(response.headers.get('connection')).toBe('close');
    expect(await response.json()).toMatchObject({ status: 413, code: 'ERR_BODY_TOO_LARGE' });
    expect((await post(url, 'fits', new Uint8Array(1_048_576))).status).toBe(200);
    expect(runs).toBe(1);
  });

  it('answers 413 for a streamed (chunked) body the moment it passes maxBodyBytes', async () => {
    let runs = 0;
    const url = await serve(
      idempotencyMiddleware({ idempotency: idempotency(), maxBodyBytes: 1_000 }),
      (_req, res) => {
        runs += 1;
        res.end('ok');
      },
    );
    const chunks = (n: number) =>
      new ReadableStream<Uint8Array>({
        start(controller) {
          for (let i = 0; i < n; i++) controller.enqueue(new Uint8Array(400));
          controller.close();
        },
      });
    const init = { duplex: 'half' } as RequestInit;
    expect((await post(url, 'big', chunks(3), init)).status).toBe(413);
    expect(runs).toBe(0);
    expect((await post(url, 'small', chunks(2), init)).status).toBe(200);
    expect(runs).toBe(1);
  });
});

describe('idempotencyMiddleware: a client that leaves', () => {
  it('stores the response a route ends after its client left: the retry is a replay', async () => {
    let runs = 0;
    let held: ServerResponse | undefined;
    const url = await serve(idempotencyMiddleware({ idempotency: idempotency() }), (_req, res) => {
      runs += 1;
      held = res;
    });
    await postAndLeave(url, 'gone', () => runs === 1);
    await until(() => held?.closed === true, 'the server sees the close');
    held!.writeHead(201, { 'content-type': 'text/plain' });
    held!.end('charged once');
    const retry = await post(`${url}/orders`, 'gone');
    expect(retry.status).toBe(201);
    expect(retry.headers.get('idempotent-replayed')).toBe('true');
    expect(await retry.text()).toBe('charged once');
    expect(runs).toBe(1);
  });

  it('releases the key abandonAfterMs after the close when the route never ends its response', async () => {
    let runs = 0;
    const clock = new FakeClock();
    const mw = idempotencyMiddleware({
      idempotency: idempotency({ wait: false }),
      abandonAfterMs: 5_000,
      clock,
    });
    const url = await serve(mw, (_req, res) => {
      runs += 1;
      if (runs > 1) res.end('second run');
    });
    await postAndLeave(url, 'hung', () => runs === 1);
    await expect.poll(() => clock.pendingTimers).toBe(1); // the server saw the close
    expect((await post(`${url}/orders`, 'hung')).status).toBe(409); // still claimed within the grace
    await clock.advance(5_000);
    await expect.poll(async () => (await post(`${url}/orders`, 'hung')).status).toBe(200);
    expect(runs).toBe(2);
  });

  it('with abandonAfterMs: 0 releases the key as the connection closes', async () => {
    let runs = 0;
    const url = await serve(
      idempotencyMiddleware({ idempotency: idempotency(), abandonAfterMs: 0 }),
      (_req, res) => {
        runs += 1;
        if (runs > 1) res.end('second run');
      },
    );
    await postAndLeave(url, 'at-once', () => runs === 1);
    const retry = await post(`${url}/orders`, 'at-once');
    expect(await retry.text()).toBe('second run');
    expect(runs).toBe(2);
  });
});

describe('idempotencyMiddleware: a lost lease', () => {
  it('sends the route’s own response, stores nothing, and the retry runs again', async () => {
    const memory = memoryIdempotencyStore();
    const store: IdempotencyStore = forwardingStore(memory, {
      renew: () => Promise.resolve(false), // taken over: the first renewal is refused
    });
    let runs = 0;
    const url = await serve(
      idempotencyMiddleware({ idempotency: idempotency({ store, leaseMs: 30 }) }),
      (_req, res) => {
        runs += 1;
        setTimeout(() => res.writeHead(201).end(`run ${runs}`), 60);
      },
    );
    const first = await post(`${url}/orders`, 'lost');
    expect(first.status).toBe(201);
    expect(await first.text()).toBe('run 1');
    const retry = await post(`${url}/orders`, 'lost');
    expect(retry.headers.get('idempotent-replayed')).toBeNull();
    expect(await retry.text()).toBe('run 2');
  });
});

describe('idempotencyMiddleware: user functions and options', () => {
  it('fails the request (500) for a tenant that throws, rejects or gives no string; it never shares a scope', async () => {
    let runs = 0;
    const tenants: Record<string, () => unknown> = {
      '/throws': () => {
        throw new Error('tenant lookup failed');
      },
      '/rejects': () => Promise.reject(new Error('tenant lookup rejected')),
      '/undefined': () => undefined,
      '/empty': () => '',
    };
    const mw = idempotencyMiddleware({
      idempotency: idempotency(),
      tenant: (req) => tenants[req.url ?? '']!() as string,
    });
    const url = await serve(mw, (_req, res) => {
      runs += 1;
      res.end('ok');
    });
    for (const path of Object.keys(tenants)) {
      const response = await post(`${url}${path}`, 'k');
      expect(response.status, path).toBe(500);
    }
    expect(runs).toBe(0);
  });

  it('passes skipped requests through untouched', async () => {
    let runs = 0;
    const mw = idempotencyMiddleware({ idempotency: idempotency(), skip: (req) => req.url === '/internal' });
    const url = await serve(mw, (_req, res) => {
      runs += 1;
      res.end('ok');
    });
    expect((await fetch(`${url}/internal`, { method: 'POST', body: '{}' })).status).toBe(200);
    expect((await fetch(`${url}/orders`, { method: 'POST', body: '{}' })).status).toBe(400);
    expect(runs).toBe(1);
  });

  it.each([
    [
      'no options',
      undefined,
      /expected "idempotencyMiddleware options" to be an options object, got undefined/,
    ],
    [
      'no idempotency',
      {},
      /expected "idempotency" to be an idempotency\(\) instance \(with run\), got undefined/,
    ],
    [
      'an unknown key',
      { idempotency: idempotency(), method: ['POST'] },
      /unknown option "method".*did you mean "methods"/,
    ],
    [
      'no methods',
      { idempotency: idempotency(), methods: [] },
      /expected "methods" to be a non-empty array of strings/,
    ],
    [
      'a bad method',
      { idempotency: idempotency(), methods: ['PO ST'] },
      /expected "methods" to hold HTTP tokens/,
    ],
    [
      'set-cookie replayed',
      { idempotency: idempotency(), replayHeaders: ['Set-Cookie'] },
      /not to hold "set-cookie"/,
    ],
    [
      'maxBodyBytes 0',
      { idempotency: idempotency(), maxBodyBytes: 0 },
      /"maxBodyBytes" to be a positive integer/,
    ],
    [
      'abandonAfterMs -1',
      { idempotency: idempotency(), abandonAfterMs: -1 },
      /"abandonAfterMs" to be a non-negative integer/,
    ],
    ['required "yes"', { idempotency: idempotency(), required: 'yes' }, /"required" to be a boolean/],
  ])('refuses bad options at once: %s', (_what, options, message) => {
    expect(() => idempotencyMiddleware(options as never)).toThrow(message);
  });

  it('Fastify: records a streamed payload too, and shows the plugin as bulwark-idempotency', async () => {
    expect(
      (fastifyIdempotency as unknown as Record<symbol, unknown>)[Symbol.for('fastify.display-name')],
    ).toBe('bulwark-idempotency');
    let runs = 0;
    const app = Fastify({ forceCloseConnections: true });
    await app.register(fastifyIdempotency, { idempotency: idempotency() });
    app.post('/exports', async (_request, reply) => {
      runs += 1;
      reply.code(201).header('content-type', 'text/csv');
      return Readable.from(['id,amount\n', '1,100\n']);
    });
    const { url } = await startFastify(app);
    const first = await post(`${url}/exports`, 'csv', '{}', {
      headers: { 'idempotency-key': 'csv', 'content-type': 'application/json' },
    });
    expect(await first.text()).toBe('id,amount\n1,100\n');
    const replay = await post(`${url}/exports`, 'csv', '{}', {
      headers: { 'idempotency-key': 'csv', 'content-type': 'application/json' },
    });
    expect(replay.status).toBe(201);
    expect(replay.headers.get('idempotent-replayed')).toBe('true');
    expect(replay.headers.get('content-type')).toBe('text/csv');
    expect(await replay.text()).toBe('id,amount\n1,100\n');
    expect(runs).toBe(1);
  });

  it('fails a Fastify registration with a bad option', async () => {
    const app = Fastify();
    app.register(fastifyIdempotency, { idempotency: idempotency(), methods: 'POST' } as never);
    await expect(app.ready()).rejects.toThrow(/expected "methods" to be a non-empty array of strings/);
    await app.close();
  });
});
