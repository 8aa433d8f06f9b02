/**
 * What express-rate-limit users expect of a refusal and of the headers, on real servers: a custom
 * `handler` (node:http, Express, Fastify) that runs after the rate-limit headers are set and whose
 * errors fail the request, and the legacy `X-RateLimit-*` headers.
 */
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import express, { type NextFunction, type Request, type Response } from 'express';
import Fastify from 'fastify';
import { describe, expect, it } from 'vitest';
import { startFastify } from '../../test/support/fastify-server.js';
import { listen } from '../../test/support/http-server.js';
import { StoreUnavailableError } from '../core/errors.js';
import { rateLimiter } from '../rate-limit/rate-limiter.js';
import type { RateLimitResult, RateLimitStore } from '../rate-limit/store.js';
import { FakeClock } from '../testing/fake-clock.js';
import { fastifyRateLimit, rateLimitMiddleware } from './rate-limit.js';
import { legacyRateLimitHeaders } from './rate-limit-headers.js';
import type { RateLimitHandler, RateLimitRefusal } from './rate-limit-refusal.js';

/** 2024-01-01T00:00:00.250Z: the legacy reset is stated on this wall clock. */
const NOW = 1_704_067_200_250;
const oneEach = (clock = new FakeClock(NOW)) =>
  rateLimiter({ name: 'api', limit: 1, periodMs: 10_000, clock });

/** A node:http server behind `middleware`: "ok" on next(), 500 with the message on next(error). */
async function nodeServer(middleware: ReturnType<typeof rateLimitMiddleware>): Promise<string> {
  const server = createServer((req, res) =>
    middleware(req, res, (error?: unknown) => {
      if (error === undefined) res.end('ok');
      else res.writeHead(500).end(`error: ${(error as Error).message}`);
    }),
  );
  return (await listen(server)).url;
}

/** Fetches twice, following no redirect: the admitted response, then the refused one. */
async function admitThenRefuse(url: string): Promise<[globalThis.Response, globalThis.Response]> {
  const admitted = await fetch(url, { redirect: 'manual' });
  return [admitted, await fetch(url, { redirect: 'manual' })];
}

describe('handler: what fails', () => {
  it.each([
    [{ handler: 'reply' }, /expected "handler" to be a function/],
    [{ legacyHeaders: 'yes' }, /expected "legacyHeaders" to be a boolean, got "yes"/],
    [{ clock: {} }, /"clock"/],
    [{ legacyHeader: true }, /unknown option "legacyHeader" .*did you mean "legacyHeaders"/],
    [{ onRefused: () => {} }, /unknown option "onRefused"/],
  ])('the option %o is refused at creation', (extra, message) => {
    expect(() => rateLimitMiddleware({ limiter: oneEach(), key: () => 'k', ...(extra as object) })).toThrow(
      message,
    );
  });

  it('a handler that throws or rejects fails the request through next(error)', async () => {
    const throwing = await nodeServer(
      rateLimitMiddleware({
        limiter: oneEach(),
        key: () => 'k',
        handler: () => {
          throw new Error('handler bug');
        },
      }),
    );
    const [, thrown] = await admitThenRefuse(throwing);
    expect([thrown.status, await thrown.text()]).toEqual([500, 'error: handler bug']);
    const rejecting = await nodeServer(
      rateLimitMiddleware({
        limiter: oneEach(),
        key: () => 'k',
        handler: async () => Promise.reject(new Error('template missing')),
      }),
    );
    const [, rejected] = await admitThenRefuse(rejecting);
    expect([rejected.status, await rejected.text()]).toEqual([500, 'error: template missing']);
  });

  it('Fastify: a throwing handler is the error reply', async () => {
    const app = Fastify();
    await app.register(fastifyRateLimit, {
      limiter: oneEach(),
      key: () => 'k',
      handler: () => {
        throw new Error('handler bug');
      },
    });
    app.get('/', async () => 'ok');
    const [, refused] = await admitThenRefuse((await startFastify(app)).url);
    expect(refused.status).toBe(500);
    expect(await refused.json()).toMatchObject({ message: 'handler bug' });
  });

  it('a store outage is not a refusal: 503 problem reply, the handler is not called', async () => {
    const down: RateLimitStore = {
      take: () => Promise.reject(new StoreUnavailableError('rate-limit store failed')),
      peek: () => Promise.reject(new Error('unused')),
      reset: () => Promise.reject(new Error('unused')),
    };
    const calls: unknown[] = [];
    const url = await nodeServer(
      rateLimitMiddleware({
        limiter: rateLimiter({ limit: 1, periodMs: 1_000, store: down }),
        key: () => 'k',
        handler: (_req, res) => {
          calls.push(res);
          res.end();
        },
      }),
    );
    const res = await fetch(url);
    expect(res.status).toBe(503);
    expect(await res.json()).toMatchObject({ code: 'ERR_STORE_UNAVAILABLE' });
    expect(calls).toEqual([]);
  });
});

describe('handler: answering a refusal', () => {
  it('node:http: runs after the headers and Retry-After are set, is told the refusal, answers as it likes', async () => {
    const seen: { refusal?: RateLimitRefusal; headers?: Record<string, unknown> } = {};
    const handler: RateLimitHandler<IncomingMessage, ServerResponse> = (_req, res, refusal) => {
      seen.refusal = refusal;
      seen.headers = { ...res.getHeaders() };
      res.removeHeader('x-ratelimit-reset');
      res.writeHead(303, { location: '/slow-down' }).end();
    };
    const url = await nodeServer(
      rateLimitMiddleware({
        limiter: oneEach(),
        key: () => 'alice',
        legacyHeaders: true,
        clock: new FakeClock(NOW),
        handler,
      }),
    );
    const [admitted, refused] = await admitThenRefuse(url);
    expect(await admitted.text()).toBe('ok'); // an admitted request never reaches the handler
    expect(refused.status).toBe(303);
    expect(refused.headers.get('location')).toBe('/slow-down');
    expect(refused.headers.get('content-type')).toBeNull(); // no problem+json: the handler's answer
    expect(refused.headers.get('retry-after')).toBe('10');
    expect(refused.headers.get('ratelimit')).toBe('"api";r=0;t=10');
    expect(refused.headers.get('x-ratelimit-reset')).toBeNull(); // removed by the handler
    expect(seen.headers).toEqual({
      'ratelimit-policy': '"api";q=1;w=10',
      ratelimit: '"api";r=0;t=10',
      'x-ratelimit-limit': '1',
      'x-ratelimit-remaining': '0',
      'x-ratelimit-reset': '1704067211',
      'retry-after': '10',
    });
    const { error, result } = seen.refusal!;
    expect(error).toMatchObject({
      code: 'ERR_RATE_LIMITED',
      kind: 'rate_limited',
      key: 'alice',
      retryAfterMs: 10_000,
    });
    expect(error.message).not.toContain('alice');
    expect(result).toMatchObject({ allowed: false, remaining: 0, limit: 1, retryAfterMs: 10_000 });
  });

  it('Express: the handler gets Express’s response and can answer in the API’s own shape', async () => {
    const app = express();
    app.use(
      rateLimitMiddleware({
        limiter: oneEach(),
        key: (req: Request) => req.path,
        handler: (req: Request, res: Response, { error }) => {
          res.status(429).json({
            message: `slow down on ${req.path}`,
            retryAfterMs: error.retryAfterMs,
            hasRateLimit: res.get('ratelimit') !== undefined,
          });
        },
      }),
    );
    app.get('/orders', (_req, res) => {
      res.send('orders');
    });
    app.use((error: Error, _req: Request, res: Response, _next: NextFunction) => {
      res.status(500).send(error.message);
    });
    const [admitted, refused] = await admitThenRefuse(`${(await listen(createServer(app))).url}/orders`);
    expect(await admitted.text()).toBe('orders');
    expect(refused.status).toBe(429);
    expect(refused.headers.get('retry-after')).toBe('10');
    expect(await refused.json()).toEqual({
      message: 'slow down on /orders',
      retryAfterMs: 10_000,
      hasRateLimit: true,
    });
  });

  it('Fastify: the handler answers through the reply, which already holds the headers', async () => {
    const app = Fastify();
    await app.register(fastifyRateLimit, {
      limiter: oneEach(),
      key: () => 'k',
      handler: (request, reply, { result }) => {
        const header = (reply as unknown as { getHeader(name: string): unknown }).getHeader('ratelimit');
        reply.code(429).send({ url: request.url, remaining: result.remaining, header });
      },
    });
    app.get('/a', async () => 'a');
    const [admitted, refused] = await admitThenRefuse(`${(await startFastify(app)).url}/a`);
    expect(await admitted.text()).toBe('a');
    expect(refused.status).toBe(429);
    expect(refused.headers.get('retry-after')).toBe('10');
    expect(await refused.json()).toEqual({ url: '/a', remaining: 0, header: '"api";r=0;t=10' });
  });
});

describe('legacyHeaders', () => {
  it('legacyRateLimitHeaders: the capacity, what is left, and the full-again time in epoch seconds rounded up', () => {
    const result: RateLimitResult = {
      allowed: true,
      remaining: 3,
      retryAfterMs: 0,
      resetMs: 1_500,
      limit: 5,
    };
    expect(legacyRateLimitHeaders(result, 1_000_000)).toEqual({
      'x-ratelimit-limit': '5',
      'x-ratelimit-remaining': '3',
      'x-ratelimit-reset': '1002',
    });
    expect(legacyRateLimitHeaders({ ...result, resetMs: 0 }, 1_000_000)['x-ratelimit-reset']).toBe('1000');
    expect(legacyRateLimitHeaders({ ...result, fallback: 'fail-open' }, 1_000_000)).toEqual({
      'x-ratelimit-limit': '5',
    });
  });

  it('are off by default; on, they come beside the standard headers on admitted and refused responses', async () => {
    const plain = await nodeServer(rateLimitMiddleware({ limiter: oneEach(), key: () => 'k' }));
    const [admittedPlain] = await admitThenRefuse(plain);
    expect(admittedPlain.headers.get('x-ratelimit-limit')).toBeNull();
    const clock = new FakeClock(NOW);
    const url = await nodeServer(
      rateLimitMiddleware({ limiter: oneEach(clock), key: () => 'k', legacyHeaders: true, clock }),
    );
    const [admitted, refused] = await admitThenRefuse(url);
    for (const res of [admitted, refused]) {
      expect(res.headers.get('ratelimit-policy')).toBe('"api";q=1;w=10');
      expect(res.headers.get('x-ratelimit-limit')).toBe('1');
      expect(res.headers.get('x-ratelimit-remaining')).toBe('0');
      expect(res.headers.get('x-ratelimit-reset')).toBe('1704067211'); // 00:00:10.250, rounded up
    }
    expect(refused.status).toBe(429);
    expect(refused.headers.get('content-type')).toBe('application/problem+json');
  });

  it('with headers: false, only the legacy ones (Fastify)', async () => {
    const clock = new FakeClock(NOW);
    const app = Fastify();
    await app.register(fastifyRateLimit, {
      limiter: oneEach(clock),
      key: () => 'k',
      headers: false,
      legacyHeaders: true,
      clock,
    });
    app.get('/', async () => 'ok');
    const [admitted, refused] = await admitThenRefuse((await startFastify(app)).url);
    for (const res of [admitted, refused]) {
      expect(res.headers.get('ratelimit')).toBeNull();
      expect(res.headers.get('ratelimit-policy')).toBeNull();
      expect(res.headers.get('x-ratelimit-reset')).toBe('1704067211');
    }
    expect(refused.status).toBe(429);
    expect(refused.headers.get('x-ratelimit-remaining')).toBe('0');
  });
});
