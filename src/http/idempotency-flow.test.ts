/**
 * The idempotency adapters' flow (idempotency-flow.ts) where the answer is not the route's:
 * what the call fails with (seen by a `run` that wraps `idempotency().run`, as a logging one
 * would), clients that leave before, while and after the route runs (with the `abandonAfterMs`
 * timer on a `FakeClock`), values in the store that are not stored responses, and errors that are
 * not refusals (they go to `next(error)`, never to the client as a refusal).
 */
import { once } from 'node:events';
import { createServer, request as httpRequest, type IncomingMessage, ServerResponse } from 'node:http';
import { connect } from 'node:net';
import { Readable } from 'node:stream';
import Fastify from 'fastify';
import { describe, expect, it } from 'vitest';
import { listen } from '../../test/support/http-server.js';
import { forwardingStore } from '../../test/support/idempotency-stores.js';
import { until } from '../../test/support/until.js';
import type { Clock } from '../core/clock.js';
import { RejectedError } from '../core/errors.js';
import { type Idempotency, idempotency } from '../idempotency/idempotency.js';
import { memoryIdempotencyStore } from '../idempotency/memory-store.js';
import { FakeClock } from '../testing/fake-clock.js';
import { idempotencyMiddleware } from './idempotency.js';
import { fastifyIdempotency } from './idempotency-fastify.js';
import { ResponseNotStoredError } from './idempotency-flow.js';

type Req = IncomingMessage & { body?: unknown };
type Handler = (req: Req, res: ServerResponse) => void;
type Run = Idempotency['run'];

/**
 * A node:http server: `before` (if any) sees each request first, then the middleware, then
 * `handler`. Every error handed to `next(error)` is kept in `errors` (and answered 500), every
 * response in `responses`.
 */
async function serve(
  mw: ReturnType<typeof idempotencyMiddleware>,
  handler: Handler,
  before?: (req: Req, res: ServerResponse) => void,
) {
  const errors: unknown[] = [];
  const responses: ServerResponse[] = [];
  const server = createServer((req: Req, res) => {
    responses.push(res);
    before?.(req, res);
    mw(req, res, (error?: unknown) => {
      if (error === undefined) {
        handler(req, res);
        return;
      }
      errors.push(error);
      if (res.headersSent) res.end();
      else res.writeHead(500).end();
    });
  });
  return { url: (await listen(server)).url, errors, responses };
}

/**
 * `idempotency().run`, recording how each call settled: the error it rejected with, or `replayed`.
 * The adapter sees the same promise.
 */
function watched(real: Pick<Idempotency, 'run'> = idempotency()) {
  const failures: unknown[] = [];
  const outcomes: boolean[] = [];
  const run: Run = (key, request, handler, options) =>
    real.run(key, request, handler, options).then(
      (outcome) => {
        outcomes.push(outcome.replayed);
        return outcome;
      },
      (error: unknown) => {
        failures.push(error);
        throw error;
      },
    );
  return { idempotency: { run }, failures, outcomes };
}

const post = (url: string, key: string, body: string | null = null) =>
  fetch(url, { method: 'POST', headers: { 'idempotency-key': key }, body });

/** Opens a raw connection and sends `head` (and `body`); the caller closes it with `destroy()`. */
async function rawPost(url: string, key: string, headers = 'Content-Length: 0\r\n', body = '') {
  const { hostname, port } = new URL(url);
  const socket = connect(Number(port), hostname);
  socket.on('error', () => {});
  await once(socket, 'connect');
  socket.write(
    `POST /orders HTTP/1.1\r\nHost: ${hostname}\r\nIdempotency-Key: ${key}\r\n${headers}\r\n${body}`,
  );
  return socket;
}

/** Lets every callback queued by the events so far run (one turn of the event loop). */
const turn = () => new Promise((resolve) => setImmediate(resolve));

describe('idempotency adapter: what the call fails with', () => {
  it('a response that is not stored fails the call with ERR_RESPONSE_NOT_STORED, naming its status', async () => {
    const { idempotency: idem, failures } = watched();
    const { url, errors } = await serve(idempotencyMiddleware({ idempotency: idem }), (_req, res) => {
      res.writeHead(503).end('try later');
    });
    const response = await post(`${url}/orders`, 'k');
    expect(response.status).toBe(503);
    expect(await response.text()).toBe('try later');
    await until(() => failures.length === 1, 'the call settles');
    const failure = failures[0] as ResponseNotStoredError;
    expect(failure).toBeInstanceOf(ResponseNotStoredError);
    expect(failure).toMatchObject({
      status: 503,
      code: 'ERR_RESPONSE_NOT_STORED',
      kind: 'internal',
      message: 'a 503 response is not stored: the key is released for a retry',
    });
    expect(errors).toEqual([]); // the route answered: nothing more is said to the client
  });

  it('a client that leaves while its request waits for the key fails the call with ERR_CLIENT_GONE; the route never runs for it', async () => {
    const { idempotency: idem, failures, outcomes } = watched();
    let runs = 0;
    let first: ServerResponse | undefined;
    const { url, errors, responses } = await serve(
      idempotencyMiddleware({ idempotency: idem }),
      (_req, res) => {
        runs += 1;
        first = res;
      },
    );
    const holding = post(`${url}/orders`, 'held');
    await until(() => runs === 1, 'the first request runs');
    const waiting = await rawPost(url, 'held');
    await until(() => responses.length === 2, 'the second request arrives');
    waiting.destroy();
    await until(() => failures.length === 1, 'the waiting call is aborted');
    expect(failures[0]).toMatchObject({
      code: 'ERR_CLIENT_GONE',
      kind: 'canceled',
      message: 'the client closed the connection before the response ended',
    });
    first!.writeHead(201).end('done');
    expect(await (await holding).text()).toBe('done');
    await until(() => outcomes.length === 1, 'the first call is stored');
    const replay = await post(`${url}/orders`, 'held');
    expect(replay.headers.get('idempotent-replayed')).toBe('true');
    expect(runs).toBe(1);
    expect(errors).toEqual([]);
  });

  it('a run that throws at once fails the request with its error (next(error))', async () => {
    const thrown = new TypeError('run exploded');
    const run: Run = () => {
      throw thrown;
    };
    let runs = 0;
    const { url, errors } = await serve(idempotencyMiddleware({ idempotency: { run } }), (_req, res) => {
      runs += 1;
      res.end();
    });
    expect((await post(`${url}/orders`, 'k')).status).toBe(500);
    expect(errors).toEqual([thrown]);
    expect(runs).toBe(0);
  });

  it('a rejection that is not a refusal fails the request with it (next(error)), not as a refusal', async () => {
    const bug = new Error('store adapter bug');
    const run: Run = () => Promise.reject(bug);
    const { url, errors } = await serve(idempotencyMiddleware({ idempotency: { run } }), (_req, res) => {
      res.end();
    });
    const response = await post(`${url}/orders`, 'k');
    expect(response.status).toBe(500);
    expect(response.headers.get('content-type')).toBeNull(); // the test's error handler, not a problem answer
    expect(errors).toEqual([bug]);
  });

  it('answers a refusal of a wrapping run with its kind’s status and Retry-After', async () => {
    const run: Run = () =>
      Promise.reject(
        new RejectedError('too many payments for this account', {
          code: 'ERR_ACCOUNT_LIMIT',
          kind: 'rate_limited',
          retryAfterMs: 2_500,
          expose: true,
        }),
      );
    const { url, errors } = await serve(idempotencyMiddleware({ idempotency: { run } }), (_req, res) => {
      res.end();
    });
    const response = await post(`${url}/orders`, 'k');
    expect(response.status).toBe(429);
    expect(response.headers.get('content-type')).toBe('application/problem+json');
    expect(response.headers.get('retry-after')).toBe('3');
    expect(await response.json()).toMatchObject({
      status: 429,
      code: 'ERR_ACCOUNT_LIMIT',
      detail: 'too many payments for this account',
      instance: '/orders',
    });
    expect(errors).toEqual([]);
  });

  it('never starts the route for a handler whose signal is already aborted', async () => {
    const reason = new Error('the lease was lost before the handler started');
    const run: Run = async (_key, _request, handler) => {
      const controller = new AbortController();
      controller.abort(reason);
      return { value: await handler({ signal: controller.signal, tx: undefined }), replayed: false };
    };
    let runs = 0;
    const { url, errors } = await serve(idempotencyMiddleware({ idempotency: { run } }), (_req, res) => {
      runs += 1;
      res.end();
    });
    expect((await post(`${url}/orders`, 'k')).status).toBe(500);
    expect(errors).toEqual([reason]);
    expect(runs).toBe(0);
  });
});

describe('idempotency adapter: a value in the store that is not a stored response', () => {
  // What another use of the same idempotency() instance may have stored under the adapter's scope
  // ([tenant, method, path, key]) for a body-less POST /orders.
  const scope = (key: string) => JSON.stringify([null, 'POST', '/orders', key]);
  const request = { method: 'POST', path: '/orders', body: undefined };
  const bytes = new TextEncoder().encode('stored body');

  it('replays a stored response written by another use of the instance', async () => {
    const idem = idempotency();
    await idem.run(scope('seeded'), request, () => ({
      status: 202,
      headers: { 'content-type': 'text/plain' },
      body: bytes,
    }));
    let runs = 0;
    const { url } = await serve(idempotencyMiddleware({ idempotency: idem }), (_req, res) => {
      runs += 1;
      res.end();
    });
    const replay = await fetch(`${url}/orders`, { method: 'POST', headers: { 'idempotency-key': 'seeded' } });
    expect(replay.status).toBe(202);
    expect(replay.headers.get('idempotent-replayed')).toBe('true');
    expect(replay.headers.get('content-type')).toBe('text/plain');
    expect(await replay.text()).toBe('stored body');
    expect(runs).toBe(0);
  });

  it.each([
    ['no value', undefined, 'undefined'],
    ['null', null, 'null'],
    ['a string', 'text', '"text"'],
    ['no status', { headers: {}, body: bytes }, 'an object'],
    ['a status that is not an integer', { status: 200.5, headers: {}, body: bytes }, 'an object'],
    ['a body that is not bytes', { status: 200, headers: {}, body: 'text' }, 'an object'],
    ['no body', { status: 200, headers: {} }, 'an object'],
    ['headers that are a string', { status: 200, headers: 'x', body: bytes }, 'an object'],
    ['null headers', { status: 200, headers: null, body: bytes }, 'an object'],
    ['no headers', { status: 200, body: bytes }, 'an object'],
  ])('fails the request (500) for %s, naming what it got', async (_what, value, shown) => {
    const idem = idempotency();
    await idem.run(scope('seeded'), request, () => value);
    let runs = 0;
    const { url, errors } = await serve(idempotencyMiddleware({ idempotency: idem }), (_req, res) => {
      runs += 1;
      res.end();
    });
    const response = await fetch(`${url}/orders`, {
      method: 'POST',
      headers: { 'idempotency-key': 'seeded' },
    });
    expect(response.status).toBe(500);
    expect(errors).toHaveLength(1);
    expect(errors[0]).toBeInstanceOf(TypeError);
    expect((errors[0] as Error).message).toBe(
      `expected the replayed value to be a stored response, got ${shown}`,
    );
    expect(runs).toBe(0);
  });

  it('answers a failure another use of the instance kept (storeErrors) with its kind’s status', async () => {
    const idem = idempotency({ storeErrors: () => true });
    const declined = new RejectedError('the card was declined', {
      code: 'ERR_CARD_DECLINED',
      kind: 'invalid',
      expose: true,
    });
    await expect(
      idem.run(scope('declined'), request, () => {
        throw declined;
      }),
    ).rejects.toBe(declined);
    let runs = 0;
    const { url, errors } = await serve(idempotencyMiddleware({ idempotency: idem }), (_req, res) => {
      runs += 1;
      res.end();
    });
    const response = await fetch(`${url}/orders`, {
      method: 'POST',
      headers: { 'idempotency-key': 'declined' },
    });
    expect(response.status).toBe(400);
    expect(response.headers.get('content-type')).toBe('application/problem+json');
    expect(await response.json()).toMatchObject({
      status: 400,
      code: 'ERR_CARD_DECLINED',
      detail: 'the card was declined',
      instance: '/orders',
    });
    expect(runs).toBe(0);
    expect(errors).toEqual([]);
  });
});

describe('idempotency adapter: clients that leave', () => {
  it('never claims the key for a client that left before its tenant was known', async () => {
    let release!: (tenant: string) => void;
    const tenant = new Promise<string>((resolve) => {
      release = resolve;
    });
    let calls = 0;
    const real = idempotency();
    const run: Run = (...args) => {
      calls += 1;
      return real.run(...args);
    };
    let runs = 0;
    const { url, responses } = await serve(
      idempotencyMiddleware({ idempotency: { run }, tenant: () => tenant }),
      (_req, res) => {
        runs += 1;
        res.end();
      },
    );
    const socket = await rawPost(url, 'gone-early');
    await until(() => responses.length === 1, 'the request arrives');
    socket.destroy();
    await until(() => responses[0]!.closed, 'the server sees the close');
    release('acme');
    await tenant;
    await turn();
    expect(calls).toBe(0);
    expect(runs).toBe(0);
  });

  it('keeps no abandon timer, and does not keep the process alive, once the route’s response is stored', async () => {
    const clock = new FakeClock();
    const { idempotency: idem, outcomes } = watched();
    let held: ServerResponse | undefined;
    const { url } = await serve(
      idempotencyMiddleware({ idempotency: idem, abandonAfterMs: 5_000, clock }),
      (_req, res) => {
        held = res;
      },
    );
    const socket = await rawPost(url, 'late');
    await until(() => held !== undefined, 'the route runs');
    socket.destroy();
    await until(() => held!.closed, 'the server sees the close');
    expect(clock.pendingTimers).toBe(1); // the grace for the route to end its response
    expect(clock.aliveTimers).toBe(0);
    held!.writeHead(201).end('charged');
    await until(() => outcomes.length === 1, 'the response is stored');
    expect(clock.pendingTimers).toBe(0);
    const retry = await post(`${url}/orders`, 'late');
    expect(retry.headers.get('idempotent-replayed')).toBe('true');
    expect(await retry.text()).toBe('charged');
  });

  it('starts no abandon timer for a response that ended before its client left', async () => {
    const clock = new FakeClock();
    let complete!: () => void;
    const completing = new Promise<void>((resolve) => {
      complete = resolve;
    });
    const memory = memoryIdempotencyStore();
    const store = forwardingStore(memory, {
      complete: async (...args) => {
        await completing; // the store is slow to confirm
        return memory.complete(...args);
      },
    });
    const { idempotency: idem, outcomes } = watched(idempotency({ store }));
    const { url, responses } = await serve(
      idempotencyMiddleware({ idempotency: idem, abandonAfterMs: 5_000, clock }),
      (_req, res) => {
        res.writeHead(201).end('charged');
      },
    );
    expect(await (await post(`${url}/orders`, 'quick')).text()).toBe('charged');
    await until(() => responses[0]!.closed, 'the response closes');
    expect(clock.pendingTimers).toBe(0);
    complete();
    await until(() => outcomes.length === 1, 'the response is stored');
    const retry = await post(`${url}/orders`, 'quick');
    expect(retry.headers.get('idempotent-replayed')).toBe('true');
  });

  it('with abandonAfterMs: 0 releases the key as the connection closes, without a timer', async () => {
    const clock = new FakeClock();
    const { idempotency: idem, failures } = watched(idempotency({ wait: false }));
    let runs = 0;
    const { url } = await serve(
      idempotencyMiddleware({ idempotency: idem, abandonAfterMs: 0, clock }),
      (_req, res) => {
        runs += 1;
        if (runs > 1) res.end('second run');
      },
    );
    const socket = await rawPost(url, 'at-once');
    await until(() => runs === 1, 'the route runs');
    socket.destroy();
    await until(() => failures.length === 1, 'the call is aborted');
    expect(failures[0]).toMatchObject({ code: 'ERR_CLIENT_GONE' });
    expect(clock.pendingTimers).toBe(0);
    expect(await (await post(`${url}/orders`, 'at-once')).text()).toBe('second run');
  });

  it('works with a clock that has no keepAlive and takes only its own timers', async () => {
    const fake = new FakeClock();
    const clock: Clock = {
      now: () => fake.now(),
      sleep: (ms, signal) => fake.sleep(ms, signal),
      setTimer: (callback, ms) => fake.setTimer(callback, ms),
      clearTimer: (handle) => {
        if (handle === undefined) throw new TypeError('not a timer');
        fake.clearTimer(handle);
      },
    };
    const { idempotency: idem, failures, outcomes } = watched(idempotency({ wait: false }));
    let runs = 0;
    const { url } = await serve(
      idempotencyMiddleware({ idempotency: idem, abandonAfterMs: 5_000, clock }),
      (req, res) => {
        if (req.url === '/quick') {
          res.end('quick');
          return;
        }
        runs += 1;
        if (runs > 1) res.end('second run');
      },
    );
    expect(await (await post(`${url}/quick`, 'quick')).text()).toBe('quick'); // settles with no timer
    await until(() => outcomes.length === 1, 'the quick call settles');
    const socket = await rawPost(url, 'hung');
    await until(() => runs === 1, 'the route runs');
    socket.destroy();
    await until(() => fake.pendingTimers === 1, 'the server sees the close');
    await fake.advance(5_000);
    await until(() => failures.length === 1, 'the call is abandoned');
    expect(await (await post(`${url}/orders`, 'hung')).text()).toBe('second run');
  });

  it('starts no abandon timer when the client leaves a request whose lease was already lost', async () => {
    const leaseClock = new FakeClock();
    const clock = new FakeClock();
    const store = forwardingStore(memoryIdempotencyStore(), { renew: () => Promise.resolve(false) });
    const { idempotency: idem, failures } = watched(
      idempotency({ store, leaseMs: 3_000, clock: leaseClock }),
    );
    let held: ServerResponse | undefined;
    const { url } = await serve(
      idempotencyMiddleware({ idempotency: idem, abandonAfterMs: 5_000, clock }),
      (_req, res) => {
        held = res;
      },
    );
    const socket = await rawPost(url, 'taken-over');
    await until(() => held !== undefined, 'the route runs');
    await leaseClock.advance(1_000); // the renewal is refused: the call fails while the route runs
    await until(() => failures.length === 1, 'the call fails');
    expect(failures[0]).toMatchObject({ code: 'ERR_LEASE_LOST' });
    socket.destroy();
    await until(() => held!.closed, 'the server sees the close');
    await turn();
    expect(clock.pendingTimers).toBe(0);
  });

  it('says nothing more when the client leaves in the middle of the body', async () => {
    let runs = 0;
    const { url, errors, responses } = await serve(
      idempotencyMiddleware({ idempotency: idempotency() }),
      (_req, res) => {
        runs += 1;
        res.end();
      },
    );
    const socket = await rawPost(url, 'half', 'Content-Length: 10\r\n', '01234');
    await until(() => responses.length === 1, 'the request arrives');
    socket.destroy();
    await until(() => responses[0]!.closed, 'the server sees the close');
    await turn();
    await turn();
    expect(errors).toEqual([]);
    expect(runs).toBe(0);
  });

  it('fails the request with the body stream’s error while the response is still open', async () => {
    const mw = idempotencyMiddleware({ idempotency: idempotency() });
    const req = Object.assign(new Readable({ read() {} }), {
      method: 'POST',
      url: '/orders',
      headers: { 'idempotency-key': 'k', 'content-length': '10' },
      headersDistinct: { 'idempotency-key': ['k'], 'content-length': ['10'] },
    }) as unknown as IncomingMessage;
    const res = new ServerResponse(req);
    const failed = new Promise<unknown>((resolve) => mw(req, res, resolve));
    req.destroy(new Error('bad chunk encoding'));
    expect(await failed).toMatchObject({ message: 'bad chunk encoding' });
  });

  it('fails the request with the error of a body getter that throws', async () => {
    const broken = new Error('body parser failed');
    const { url, errors } = await serve(
      idempotencyMiddleware({ idempotency: idempotency() }),
      (_req, res) => {
        res.end();
      },
      (req) => {
        Object.defineProperty(req, 'body', {
          get() {
            throw broken;
          },
        });
      },
    );
    expect((await post(`${url}/orders`, 'k', '{}')).status).toBe(500);
    expect(errors).toEqual([broken]);
  });
});

describe('idempotency adapter: replaying', () => {
  it('ends a replay whose headers an earlier handler already sent, rather than throwing', async () => {
    let runs = 0;
    const { url, errors } = await serve(
      idempotencyMiddleware({ idempotency: idempotency() }),
      (_req, res) => {
        runs += 1;
        res.end('streamed');
      },
      (_req, res) => res.flushHeaders(),
    );
    expect(await (await post(`${url}/orders`, 'k')).text()).toBe('streamed');
    const replay = await post(`${url}/orders`, 'k');
    expect(replay.status).toBe(200);
    expect(await replay.text()).toBe('');
    expect(runs).toBe(1);
    expect(errors).toEqual([]);
  });

  it('reads the key where the request has no headersDistinct (Fastify inject)', async () => {
    const app = Fastify();
    let runs = 0;
    await app.register(fastifyIdempotency, { idempotency: idempotency() });
    app.post('/orders', async (_request, reply) => {
      runs += 1;
      return reply.code(201).send({ id: runs });
    });
    const send = () =>
      app.inject({ method: 'POST', url: '/orders', headers: { 'idempotency-key': 'k' }, payload: {} });
    const first = await send();
    expect(first.statusCode).toBe(201);
    const replay = await send();
    expect(replay.statusCode).toBe(201);
    expect(replay.headers['idempotent-replayed']).toBe('true');
    expect(replay.json()).toEqual({ id: 1 });
    expect((await app.inject({ method: 'POST', url: '/orders', payload: {} })).statusCode).toBe(400);
    expect(runs).toBe(1);
    await app.close();
  });

  it('Fastify: sends nothing over the route’s own response (no "already sent" warning)', async () => {
    const logs: string[] = [];
    const app = Fastify({ logger: { level: 'warn', stream: { write: (line: string) => logs.push(line) } } });
    await app.register(fastifyIdempotency, { idempotency: idempotency() });
    app.post('/orders', async (_request, reply) => reply.code(201).send({ id: 1 }));
    const send = () =>
      app.inject({ method: 'POST', url: '/orders', headers: { 'idempotency-key': 'k' }, payload: {} });
    expect((await send()).statusCode).toBe(201);
    expect((await send()).headers['idempotent-replayed']).toBe('true');
    await app.close();
    expect(logs).toEqual([]);
  });

  it('refuses the Idempotency-Key header sent twice (which key would count?)', async () => {
    let runs = 0;
    const { url } = await serve(idempotencyMiddleware({ idempotency: idempotency() }), (_req, res) => {
      runs += 1;
      res.end();
    });
    const { hostname, port } = new URL(url);
    const answer = await new Promise<{ status: number; body: string }>((resolve, reject) => {
      const req = httpRequest(
        { hostname, port, method: 'POST', path: '/orders', headers: { 'idempotency-key': ['a', 'b'] } },
        (res) => {
          let body = '';
          res.setEncoding('utf8');
          res.on('data', (chunk: string) => {
            body += chunk;
          });
          res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
        },
      );
      req.on('error', reject);
      req.end();
    });
    expect(answer.status).toBe(400);
    expect(JSON.parse(answer.body)).toMatchObject({
      code: 'ERR_IDEMPOTENCY_KEY_INVALID',
      detail: 'the Idempotency-Key header was sent more than once',
      instance: '/orders',
    });
    expect(runs).toBe(0);
  });

  it('fails the request for a tenant that is not a string, naming the tenant option', async () => {
    const { url, errors } = await serve(
      idempotencyMiddleware({ idempotency: idempotency(), tenant: () => 42 as unknown as string }),
      (_req, res) => {
        res.end();
      },
    );
    expect((await post(`${url}/orders`, 'k')).status).toBe(500);
    expect(errors).toHaveLength(1);
    expect((errors[0] as Error).message).toBe(
      'expected the "tenant" function to return a non-empty string, got 42',
    );
  });
});
