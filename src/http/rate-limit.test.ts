import { createServer, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { connect, type Socket } from 'node:net';
import express from 'express';
import Fastify, { type FastifyInstance } from 'fastify';
import { afterEach, describe, expect, it } from 'vitest';
import { asyncSkip, expectAsyncSkipHonoured, fastifyWithSkipRoutes } from '../../test/support/async-skip.js';
import { until } from '../../test/support/until.js';
import { memoryRateLimitStore } from '../rate-limit/memory-store.js';
import { rateLimiter } from '../rate-limit/rate-limiter.js';
import type { RateLimitResult, RateLimitRule, RateLimitStore } from '../rate-limit/store.js';
import { FakeClock } from '../testing/fake-clock.js';
import { fastifyRateLimit, rateLimitMiddleware } from './rate-limit.js';
import { rateLimitHeaders } from './rate-limit-headers.js';

const servers: Server[] = [];
const apps: FastifyInstance[] = [];
afterEach(async () => {
  await Promise.all(servers.splice(0).map((s) => new Promise((resolve) => s.close(resolve))));
  await Promise.all(apps.splice(0).map((a) => a.close()));
});

async function listen(server: Server): Promise<string> {
  servers.push(server);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
}

/** Resolves once `socket` has closed (not on its `error`, which a reset emits first). */
function closed(socket: Socket): Promise<void> {
  return socket.closed ? Promise.resolve() : new Promise((resolve) => socket.once('close', () => resolve()));
}

/**
 * Opens `n` raw connections to `url`, sends a GET on each, waits until the server has called its key
 * function for all of them (`keysSeen`), then resets every socket (TCP RST): clients that hang up
 * while the key is being computed.
 */
async function resetMidRequest(url: string, n: number, keysSeen: () => number): Promise<void> {
  const { hostname, port, pathname } = new URL(url);
  const before = keysSeen();
  const sockets = await Promise.all(
    Array.from(
      { length: n },
      () =>
        new Promise<ReturnType<typeof connect>>((resolve) => {
          const socket = connect(Number(port), hostname, () => {
            socket.write(`GET ${pathname} HTTP/1.1\r\nHost: ${hostname}\r\n\r\n`);
            resolve(socket);
          });
          socket.on('error', () => {});
        }),
    ),
  );
  await until(() => keysSeen() - before === n, 'the server computes every key');
  for (const socket of sockets) socket.resetAndDestroy();
}

/** An in-process asynchronous store that can be switched off, standing for a remote store. */
function switchableStore(clock: FakeClock) {
  const inner = memoryRateLimitStore({ clock });
  const state = { down: false };
  const store: RateLimitStore = {
    take: (key: string, cost: number, rule: RateLimitRule): Promise<RateLimitResult> =>
      state.down ? Promise.reject(new Error('ECONNREFUSED')) : inner.take(key, cost, rule),
    peek: (key: string, rule: RateLimitRule) => inner.peek(key, rule),
    reset: (key: string, rule: RateLimitRule) => inner.reset(key, rule),
  };
  return { store, state };
}

const byHeader = (req: IncomingMessage) => {
  const user = req.headers['x-user'];
  return typeof user === 'string' ? user : undefined;
};

/** A plain node:http server: the middleware, then a handler that answers "ok". */
function nodeServer(middleware: ReturnType<typeof rateLimitMiddleware>): Server {
  return createServer((req, res) => {
    middleware(req, res, (error?: unknown) => {
      if (error !== undefined) {
        res.writeHead(500, { 'content-type': 'text/plain' });
        res.end(`error: ${(error as Error).message}`);
        return;
      }
      res.end('ok');
    });
  });
}

describe('rateLimitHeaders', () => {
  it('follows the IETF draft: RateLimit-Policy "name";q;w and RateLimit "name";r;t', async () => {
    const limiter = rateLimiter({ name: 'api', limit: 100, periodMs: 60_000, clock: new FakeClock() });
    const result = await limiter.take('k');
    expect(rateLimitHeaders(limiter.rule, result)).toEqual({
      'ratelimit-policy': '"api";q=100;w=60',
      ratelimit: '"api";r=99;t=1',
    });
  });

  it('states a period that is not whole seconds as the same rate over whole seconds', () => {
    const rule = rateLimiter({ limit: 10, periodMs: 500 }).rule;
    const empty = { allowed: true, remaining: 1, retryAfterMs: 0, resetMs: 0, limit: 10 };
    expect(rateLimitHeaders(rule, empty)['ratelimit-policy']).toBe('"default";q=20;w=1');
    const slow = rateLimiter({ limit: 1, periodMs: 1_400 }).rule;
    expect(rateLimitHeaders(slow, empty)['ratelimit-policy']).toBe('"default";q=1;w=2');
  });

  it('states a whole-second period as the rule’s own limit, however large', () => {
    const empty = { allowed: true, remaining: 1, retryAfterMs: 0, resetMs: 0, limit: 1 };
    const huge = rateLimiter({
      algorithm: 'token-bucket',
      limit: 123_456_789_012_345,
      burst: 1,
      periodMs: 1_000,
    }).rule;
    expect(rateLimitHeaders(huge, empty)['ratelimit-policy']).toBe('"default";q=123456789012345;w=1');
  });

  it('says nothing about the quota for a fail-open decision', () => {
    const rule = rateLimiter({ limit: 10, periodMs: 1_000 }).rule;
    const headers = rateLimitHeaders(rule, {
      allowed: true,
      remaining: 10,
      retryAfterMs: 0,
      resetMs: 0,
      limit: 10,
      fallback: 'fail-open',
    });
    expect(headers).toEqual({ 'ratelimit-policy': '"default";q=10;w=1' });
  });
});

describe('rateLimitMiddleware on node:http', () => {
  it('lets allowed requests through with headers; refuses with 429, Retry-After and problem+json', async () => {
    const limiter = rateLimiter({ name: 'api', limit: 2, periodMs: 10_000, clock: new FakeClock() });
    const url = await listen(nodeServer(rateLimitMiddleware({ limiter, key: byHeader })));
    const first = await fetch(`${url}/orders`, { headers: { 'x-user': 'alice' } });
    expect(first.status).toBe(200);
    expect(await first.text()).toBe('ok');
    expect(first.headers.get('ratelimit-policy')).toBe('"api";q=2;w=10');
    expect(first.headers.get('ratelimit')).toBe('"api";r=1;t=5');
    await fetch(`${url}/orders`, { headers: { 'x-user': 'alice' } });
    const refused = await fetch(`${url}/orders?page=2`, { headers: { 'x-user': 'alice' } });
    expect(refused.status).toBe(429);
    expect(refused.headers.get('retry-after')).toBe('5');
    expect(refused.headers.get('content-type')).toBe('application/problem+json');
    expect(refused.headers.get('ratelimit')).toBe('"api";r=0;t=10');
    expect(refused.headers.get('ratelimit-policy')).toBe('"api";q=2;w=10');
    const body = await refused.json();
    expect(body).toMatchObject({
      type: 'urn:bulwark:problem:rate_limited',
      status: 429,
      code: 'ERR_RATE_LIMITED',
      kind: 'rate_limited',
      retryAfterMs: 5_000,
      instance: '/orders?page=2',
    });
    expect(JSON.stringify(body)).not.toContain('alice');
    // Another key is untouched.
    expect((await fetch(url, { headers: { 'x-user': 'bob' } })).status).toBe(200);
  });

  it('a key of undefined is an error (500 via next), never an exemption', async () => {
    const limiter = rateLimiter({ limit: 1, periodMs: 10_000, clock: new FakeClock() });
    const url = await listen(nodeServer(rateLimitMiddleware({ limiter, key: byHeader })));
    for (let i = 0; i < 3; i++) {
      const res = await fetch(`${url}/orders`);
      expect(res.status).toBe(500);
      expect(await res.text()).toMatch(/returned undefined.*use "skip"/);
    }
    const async = await listen(nodeServer(rateLimitMiddleware({ limiter, key: async () => undefined })));
    expect((await fetch(async)).status).toBe(500);
  });

  it('skip(req), sync or async, exempts a request: no headers, no quota used', async () => {
    const limiter = rateLimiter({ limit: 1, periodMs: 10_000, clock: new FakeClock() });
    const skipped: string[] = [];
    const sync = await listen(
      nodeServer(
        rateLimitMiddleware({
          limiter,
          key: () => 'shared',
          skip: (req) => {
            skipped.push(req.url ?? '');
            return req.url === '/health';
          },
        }),
      ),
    );
    for (let i = 0; i < 3; i++) {
      const res = await fetch(`${sync}/health`);
      expect(res.status).toBe(200);
      expect(res.headers.get('ratelimit')).toBeNull();
    }
    expect((await fetch(`${sync}/orders`)).status).toBe(200);
    expect((await fetch(`${sync}/orders`)).status).toBe(429);
    expect(skipped).toHaveLength(5);
    const asyncSkip = await listen(
      nodeServer(
        rateLimitMiddleware({ limiter, key: () => 'shared', skip: async (req) => req.url === '/internal' }),
      ),
    );
    expect((await fetch(`${asyncSkip}/internal`)).status).toBe(200);
    expect((await fetch(`${asyncSkip}/orders`)).status).toBe(429);
  });

  it('a skip that throws, rejects or returns a non-boolean goes to next(error)', async () => {
    const limiter = rateLimiter({ limit: 5, periodMs: 1_000, clock: new FakeClock() });
    const serve = (skip: (req: IncomingMessage) => boolean | Promise<boolean>) =>
      listen(nodeServer(rateLimitMiddleware({ limiter, key: () => 'k', skip })));
    const throwing = await serve(() => {
      throw new Error('skip bug');
    });
    expect(await (await fetch(throwing)).text()).toBe('error: skip bug');
    const rejecting = await serve(() => Promise.reject(new Error('skip lookup failed')));
    expect(await (await fetch(rejecting)).text()).toBe('error: skip lookup failed');
    const wrong = await serve(() => 'yes' as never);
    const res = await fetch(wrong);
    expect(res.status).toBe(500);
    expect(await res.text()).toMatch(/"skip" function to return a boolean, got "yes"/);
    expect(() => rateLimitMiddleware({ limiter, key: () => 'k', skip: true as never })).toThrow(
      /"skip" to be a function/,
    );
  });

  it('a client that resets its socket mid-request (async key on remoteAddress) never reaches the handler', async () => {
    const limiter = rateLimiter({ limit: 2, periodMs: 60_000, clock: new FakeClock() });
    const seen = { keys: 0, handled: 0, errors: 0 };
    const middleware = rateLimitMiddleware({
      limiter,
      key: async (req) => {
        seen.keys++;
        await closed(req.socket);
        return req.socket.remoteAddress; // undefined once the client has hung up
      },
    });
    const server = createServer((req, res) =>
      middleware(req, res, (error?: unknown) => {
        if (error === undefined) seen.handled++;
        else seen.errors++;
        res.destroy();
      }),
    );
    const url = await listen(server);
    await resetMidRequest(url, 20, () => seen.keys);
    await until(() => seen.handled + seen.errors === 20, 'every request was decided');
    expect(seen).toEqual({ keys: 20, handled: 0, errors: 20 });
  });

  it('takes an async key function and a cost per request; headers can be turned off', async () => {
    const limiter = rateLimiter({ limit: 10, periodMs: 10_000, clock: new FakeClock() });
    const middleware = rateLimitMiddleware({
      limiter,
      key: async (req) => `tenant:${req.headers['x-tenant']}`,
      cost: (req) => (req.url?.startsWith('/bulk') ? 5 : 1),
      headers: false,
    });
    const url = await listen(nodeServer(middleware));
    const init = { headers: { 'x-tenant': 't1' } };
    expect((await fetch(`${url}/bulk`, init)).status).toBe(200);
    const second = await fetch(`${url}/bulk`, init);
    expect(second.status).toBe(200);
    expect(second.headers.get('ratelimit')).toBeNull();
    expect((await fetch(`${url}/one`, init)).status).toBe(429);
  });

  it('store down with fail-closed: 503 problem+json, not 429; fail-open lets requests through', async () => {
    const clock = new FakeClock();
    const { store, state } = switchableStore(clock);
    const closed = rateLimiter({ limit: 5, periodMs: 1_000, store, clock });
    const open = rateLimiter({
      name: 'open',
      limit: 5,
      periodMs: 1_000,
      store,
      clock,
      storeFailure: 'fail-open',
    });
    const closedUrl = await listen(nodeServer(rateLimitMiddleware({ limiter: closed, key: () => 'k' })));
    const openUrl = await listen(nodeServer(rateLimitMiddleware({ limiter: open, key: () => 'k' })));
    state.down = true;
    const unavailable = await fetch(closedUrl);
    expect(unavailable.status).toBe(503);
    expect(unavailable.headers.get('content-type')).toBe('application/problem+json');
    expect(unavailable.headers.get('ratelimit')).toBeNull();
    // Like every 503 we send: a Retry-After (1 s, jittered up to 2 s), the body agreeing.
    const retryAfter = unavailable.headers.get('retry-after');
    expect(retryAfter).toMatch(/^[12]$/);
    const problem = await unavailable.json();
    expect(problem).toMatchObject({
      status: 503,
      kind: 'unavailable',
      code: 'ERR_STORE_UNAVAILABLE',
      retryAfterMs: Number(retryAfter) * 1000,
    });
    expect(JSON.stringify(problem)).not.toContain('ECONNREFUSED');
    const admitted = await fetch(openUrl);
    expect(admitted.status).toBe(200);
    expect(admitted.headers.get('ratelimit')).toBeNull();
    expect(admitted.headers.get('ratelimit-policy')).toBe('"open";q=5;w=1');
    state.down = false;
    expect((await fetch(closedUrl)).status).toBe(200);
  });

  it('a throwing or bad key function goes to next(error)', async () => {
    const limiter = rateLimiter({ limit: 5, periodMs: 1_000, clock: new FakeClock() });
    const throwing = await listen(
      nodeServer(
        rateLimitMiddleware({
          limiter,
          key: () => {
            throw new Error('no key');
          },
        }),
      ),
    );
    expect(await (await fetch(throwing)).text()).toBe('error: no key');
    const empty = await listen(nodeServer(rateLimitMiddleware({ limiter, key: () => '' })));
    const res = await fetch(empty);
    expect(res.status).toBe(500);
    expect(await res.text()).toMatch(/non-empty string, got ""/);
  });

  it('rejects bad options with a TypeError', () => {
    const limiter = rateLimiter({ limit: 5, periodMs: 1_000 });
    expect(() => rateLimitMiddleware({ limiter: {} as never, key: () => 'k' })).toThrow(/"limiter"/);
    expect(() => rateLimitMiddleware({ limiter, key: 'ip' as never })).toThrow(/"key" to be a function/);
    expect(() => rateLimitMiddleware({ limiter, key: () => 'k', cost: 2 as never })).toThrow(/"cost"/);
    expect(() => rateLimitMiddleware({ limiter, key: () => 'k', headers: 'yes' as never })).toThrow(
      /"headers"/,
    );
    expect(() => rateLimitMiddleware(undefined as never)).toThrow(
      /"rateLimitMiddleware options" to be an options object, got undefined/,
    );
  });
});

describe('rateLimitMiddleware on Express', () => {
  it('limits per key, answers 429 with problem+json, and passes key errors to the error handler', async () => {
    const limiter = rateLimiter({ limit: 1, periodMs: 30_000, clock: new FakeClock() });
    const app = express();
    app.use(
      rateLimitMiddleware({
        limiter,
        key: (req) => {
          if (req.headers['x-broken'] !== undefined) throw new Error('broken key');
          return byHeader(req);
        },
      }),
    );
    app.get('/', (_req, res) => {
      res.send('hello');
    });
    app.use((error: Error, _req: express.Request, res: express.Response, _next: express.NextFunction) => {
      res.status(500).send(`handled: ${error.message}`);
    });
    const url = await listen(createServer(app));
    const ok = await fetch(url, { headers: { 'x-user': 'u1' } });
    expect(ok.status).toBe(200);
    expect(await ok.text()).toBe('hello');
    expect(ok.headers.get('ratelimit')).toBe('"default";r=0;t=30');
    const refused = await fetch(url, { headers: { 'x-user': 'u1' } });
    expect(refused.status).toBe(429);
    expect(refused.headers.get('retry-after')).toBe('30');
    expect(await refused.json()).toMatchObject({ code: 'ERR_RATE_LIMITED' });
    const broken = await fetch(url, { headers: { 'x-broken': '1' } });
    expect(await broken.text()).toBe('handled: broken key');
  });
});

describe('fastifyRateLimit', () => {
  async function start(app: FastifyInstance): Promise<string> {
    apps.push(app);
    return app.listen({ port: 0, host: '127.0.0.1' });
  }

  it('names its options in the TypeError for an option it does not know', async () => {
    const app = Fastify();
    const limiter = rateLimiter({ limit: 1, periodMs: 1_000, clock: new FakeClock() });
    app.register(fastifyRateLimit, { limiter, key: () => 'k', skp: 1 } as never);
    await expect(app.ready()).rejects.toThrow(/unknown option "skp" in fastifyRateLimit options/);
    await app.close();
  });

  it('limits every route of the instance it is registered on', async () => {
    const limiter = rateLimiter({ name: 'f', limit: 2, periodMs: 4_000, clock: new FakeClock() });
    const app = Fastify();
    await app.register(fastifyRateLimit, { limiter, key: (request) => request.headers['x-user'] as string });
    app.get('/a', async () => 'a');
    app.get('/b', async () => ({ b: true }));
    const url = await start(app);
    const init = { headers: { 'x-user': 'carol' } };
    const a = await fetch(`${url}/a`, init);
    expect(a.status).toBe(200);
    expect(a.headers.get('ratelimit-policy')).toBe('"f";q=2;w=4');
    expect(a.headers.get('ratelimit')).toBe('"f";r=1;t=2');
    expect((await fetch(`${url}/b`, init)).status).toBe(200);
    const refused = await fetch(`${url}/a`, init);
    expect(refused.status).toBe(429);
    expect(refused.headers.get('retry-after')).toBe('2');
    expect(refused.headers.get('content-type')).toMatch(/^application\/problem\+json(;|$)/);
    expect(refused.headers.get('ratelimit')).toBe('"f";r=0;t=4');
    expect(await refused.json()).toMatchObject({ status: 429, code: 'ERR_RATE_LIMITED', instance: '/a' });
  });

  it('registered in a scope, limits only that scope', async () => {
    const limiter = rateLimiter({ limit: 1, periodMs: 60_000, clock: new FakeClock() });
    const app = Fastify();
    app.get('/open', async () => 'open');
    await app.register(async (scope) => {
      await scope.register(fastifyRateLimit, { limiter, key: () => 'all' });
      scope.get('/limited', async () => 'limited');
    });
    const url = await start(app);
    expect((await fetch(`${url}/limited`)).status).toBe(200);
    expect((await fetch(`${url}/limited`)).status).toBe(429);
    for (let i = 0; i < 3; i++) expect((await fetch(`${url}/open`)).status).toBe(200);
  });

  it('store down with fail-closed: 503; a throwing key fails the request through Fastify', async () => {
    const clock = new FakeClock();
    const { store, state } = switchableStore(clock);
    const limiter = rateLimiter({ limit: 5, periodMs: 1_000, store, clock });
    const app = Fastify();
    await app.register(fastifyRateLimit, {
      limiter,
      key: (request) => {
        if (request.url === '/boom') throw new Error('key failed');
        return 'k';
      },
    });
    app.get('/', async () => 'ok');
    app.get('/boom', async () => 'never');
    const url = await start(app);
    state.down = true;
    const down = await fetch(url);
    expect(down.status).toBe(503);
    expect(down.headers.get('retry-after')).toMatch(/^[12]$/);
    expect(await down.json()).toMatchObject({ kind: 'unavailable', code: 'ERR_STORE_UNAVAILABLE' });
    state.down = false;
    expect((await fetch(url)).status).toBe(200);
    expect((await fetch(`${url}/boom`)).status).toBe(500);
  });

  it('an undefined key is the error reply; skip exempts; a reset client never reaches the route', async () => {
    const limiter = rateLimiter({ limit: 2, periodMs: 60_000, clock: new FakeClock() });
    const seen = { keys: 0, handled: 0, errors: 0 };
    const app = Fastify();
    app.setErrorHandler((error, _request, reply) => {
      seen.errors++;
      void reply.code(500).send({ message: (error as Error).message });
    });
    await app.register(fastifyRateLimit, {
      limiter,
      skip: (request) => request.url === '/health',
      key: async (request) => {
        if (request.url === '/anonymous') return undefined;
        seen.keys++;
        await closed(request.raw.socket);
        return request.ip; // undefined once the client has hung up
      },
    });
    app.get('/health', async () => 'up');
    app.get('/anonymous', async () => 'never');
    app.get('/work', async () => {
      seen.handled++;
      return 'done';
    });
    const url = await start(app);
    for (let i = 0; i < 3; i++) {
      const health = await fetch(`${url}/health`);
      expect(health.status).toBe(200);
      expect(health.headers.get('ratelimit')).toBeNull();
    }
    const anonymous = await fetch(`${url}/anonymous`);
    expect(anonymous.status).toBe(500);
    expect((await anonymous.json()).message).toMatch(/returned undefined/);
    seen.errors = 0;
    await resetMidRequest(`${url}/work`, 20, () => seen.keys);
    await until(() => seen.errors === 20, 'every reset request was failed');
    expect(seen).toEqual({ keys: 20, handled: 0, errors: 20 });
  });

  it('an async skip is waited for: true exempts (no quota, no headers), false limits, a rejection fails', async () => {
    const limiter = rateLimiter({ limit: 1, periodMs: 60_000, clock: new FakeClock() });
    const { url } = await fastifyWithSkipRoutes((app) =>
      app.register(fastifyRateLimit, { limiter, key: () => 'shared', skip: asyncSkip }),
    );
    await expectAsyncSkipHonoured(url, 429, 1);
  });

  it('fails registration on bad options', async () => {
    const app = Fastify();
    apps.push(app);
    await expect(app.register(fastifyRateLimit, { limiter: null as never, key: () => 'k' })).rejects.toThrow(
      /"limiter"/,
    );
  });
});
