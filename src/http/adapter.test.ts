/**
 * The HTTP kit, tested through a small adapter written the way every adapter is (and the
 * idempotency adapter to come will be): one request handler built from validated options, turned
 * into a connect-style middleware and a Fastify plugin by the kit.
 */
import { createServer, type IncomingMessage } from 'node:http';
import Fastify from 'fastify';
import { describe, expect, expectTypeOf, it } from 'vitest';
import { afterThisTest, listen } from '../../test/support/http-server.js';
import { ResilienceError } from '../core/errors.js';
import { required, type Schema } from '../core/read-options.js';
import { connectMiddleware, fastifyPlugin, type Middleware, type RequestHandler } from './adapter.js';
import { readAdapterOptions } from './adapter-options.js';
import { bulkheadMiddleware } from './bulkhead.js';
import type { Edge } from './edge.js';
import type { FastifyPluginLike, FastifyRequestLike } from './fastify-types.js';
import { loadSheddingMiddleware } from './load-shedding.js';
import { problemReply } from './problem-response.js';
import { rateLimitMiddleware } from './rate-limit.js';
import { isHealthCheck, type Skip, skipField, skipping } from './skip.js';

interface GateOptions<Req> {
  /** The token a request must send in `x-token`. */
  readonly token: string;
  readonly skip?: Skip<Req> | undefined;
}

/** A toy adapter: lets through requests that carry the token, answers the rest 401. */
function gate<
  Req extends { readonly url?: string | undefined; readonly headers: IncomingMessage['headers'] },
>(options: GateOptions<Req> | undefined, what: string): RequestHandler<Req> {
  const schema = {
    token: required((name, value) => {
      if (typeof value !== 'string') throw new TypeError(`expected "${name}" to be a string`);
      return value;
    }),
    skip: skipField<Req>(isHealthCheck),
  } satisfies Schema<GateOptions<Req>>;
  const { token, skip } = readAdapterOptions(what, options, schema);
  return skipping(skip, (request, reply, next, edge) => {
    const given = request.headers['x-token'];
    if (given === 'boom') edge.fail(next, new Error('gate bug'));
    else if (given === 'thrown-string') edge.fail(next, 'not an Error');
    else if (given === token) edge.proceed(reply, next, { 'x-gate': 'open' });
    else {
      const refusal = new ResilienceError('no token', {
        code: 'ERR_NO_TOKEN',
        kind: 'unauthorized',
        expose: true,
      });
      edge.answer(reply, problemReply(refusal, request.url === undefined ? {} : { instance: request.url }));
    }
  });
}

const gateMiddleware = <Req extends IncomingMessage = IncomingMessage>(options: GateOptions<Req>) =>
  connectMiddleware(gate(options, 'gateMiddleware options'));
const fastifyGate: FastifyPluginLike<GateOptions<FastifyRequestLike>> = fastifyPlugin('fastifyGate', gate);

function nodeServer(mw: Middleware) {
  return listen(
    createServer((req, res) =>
      mw(req, res, (error) => {
        if (error !== undefined) {
          res.writeHead(500, { 'x-error': (error as Error).message });
          res.end();
          return;
        }
        res.end('handled');
      }),
    ),
  );
}

async function fastifyServer(register: (app: ReturnType<typeof Fastify>) => Promise<unknown>) {
  const app = Fastify({ forceCloseConnections: true });
  afterThisTest(() => app.close());
  await register(app);
  app.get('/orders', async () => 'handled');
  app.get('/healthz', async () => 'handled');
  return app.listen({ port: 0, host: '127.0.0.1' });
}

const withToken = (token: string) => ({ headers: { 'x-token': token } });

describe('an adapter built on the kit', () => {
  it('as middleware: proceeds with its headers, answers a refusal, hands a bug to next(error), skips health checks', async () => {
    const { url } = await nodeServer(gateMiddleware({ token: 't' }));
    const passed = await fetch(`${url}/orders`, withToken('t'));
    expect(passed.status).toBe(200);
    expect(passed.headers.get('x-gate')).toBe('open');
    expect(await passed.text()).toBe('handled');
    const refused = await fetch(`${url}/orders`, withToken('wrong'));
    expect(refused.status).toBe(401);
    expect(refused.headers.get('content-type')).toBe('application/problem+json');
    expect(await refused.json()).toMatchObject({ code: 'ERR_NO_TOKEN', instance: '/orders' });
    const failed = await fetch(`${url}/orders`, withToken('boom'));
    expect(failed.status).toBe(500);
    expect(failed.headers.get('x-error')).toBe('gate bug');
    const health = await fetch(`${url}/healthz`);
    expect(health.status).toBe(200);
    expect(health.headers.get('x-gate')).toBeNull();
  });

  it('as a Fastify plugin: the same answers, on every route of the registering instance', async () => {
    const url = await fastifyServer((app) => app.register(fastifyGate, { token: 't' }));
    const passed = await fetch(`${url}/orders`, withToken('t'));
    expect(passed.status).toBe(200);
    expect(passed.headers.get('x-gate')).toBe('open');
    const refused = await fetch(`${url}/orders`, withToken('wrong'));
    expect(refused.status).toBe(401);
    expect(refused.headers.get('content-type')).toMatch(/^application\/problem\+json/);
    expect(await refused.json()).toMatchObject({ code: 'ERR_NO_TOKEN', instance: '/orders' });
    expect((await fetch(`${url}/orders`, withToken('boom'))).status).toBe(500);
    // Fastify's error reply needs an Error: anything else is wrapped, still a 500.
    const wrapped = await fetch(`${url}/orders`, withToken('thrown-string'));
    expect(wrapped.status).toBe(500);
    expect(await wrapped.json()).toMatchObject({ message: 'not an Error' });
    expect((await fetch(`${url}/healthz`)).status).toBe(200);
  });

  it('a plugin is exposed like fastify-plugin does it, and bad options fail its registration', async () => {
    expect((fastifyGate as unknown as Record<symbol, unknown>)[Symbol.for('skip-override')]).toBe(true);
    expect((fastifyGate as unknown as Record<symbol, unknown>)[Symbol.for('fastify.display-name')]).toBe(
      'bulwark-gate',
    );
    const app = Fastify();
    app.register(fastifyGate, { token: 1 as never });
    await expect(app.ready()).rejects.toThrow(/"token" to be a string/);
    await app.close();
    const misspelt = Fastify();
    misspelt.register(fastifyGate, { token: 't', skp: () => true } as never);
    await expect(misspelt.ready()).rejects.toThrow(/unknown option "skp" in fastifyGate options/);
    await misspelt.close();
  });
});

describe('readAdapterOptions', () => {
  it('refuses a missing options object and an unknown key, naming them', () => {
    expect(() => gateMiddleware(undefined as never)).toThrow(
      /expected "gateMiddleware options" to be an options object, got undefined/,
    );
    expect(() => gateMiddleware([] as never)).toThrow(TypeError);
    expect(() => gateMiddleware({ token: 't', skp: () => true } as never)).toThrow(
      /unknown option "skp" in gateMiddleware options; did you mean "skip"\?/,
    );
  });
});

describe('skip', () => {
  const handled = (): RequestHandler<IncomingMessage> => (_request, reply, next, edge) =>
    edge.proceed(reply, next, { 'x-handled': 'yes' });

  it('skipField: the given function, else the default; anything else is a TypeError', () => {
    const mine = () => true;
    expect(skipField(isHealthCheck).read('skip', mine)).toBe(mine);
    expect(skipField(isHealthCheck).read('skip', undefined)).toBe(isHealthCheck);
    expect(skipField().read('skip', undefined)).toBeUndefined();
    expect(() => skipField().read('skip', 'yes')).toThrow(/expected "skip" to be a function, got "yes"/);
  });

  it('true passes the request on untouched, false runs the adapter; no skip runs the adapter itself', async () => {
    const handler = handled();
    expect(skipping(undefined, handler)).toBe(handler);
    const { url } = await nodeServer(
      connectMiddleware(skipping((req: IncomingMessage) => req.url === '/skipped', handler)),
    );
    expect((await fetch(`${url}/skipped`)).headers.get('x-handled')).toBeNull();
    expect((await fetch(`${url}/other`)).headers.get('x-handled')).toBe('yes');
  });

  it('a promise is waited for; a non-boolean (also resolved), a throw or a rejection is an error', async () => {
    const asyncSkip = async (req: IncomingMessage) => req.url === '/skipped';
    const allowed = await nodeServer(connectMiddleware(skipping(asyncSkip, handled())));
    expect((await fetch(`${allowed.url}/skipped`)).headers.get('x-handled')).toBeNull();
    expect((await fetch(`${allowed.url}/other`)).headers.get('x-handled')).toBe('yes');

    for (const wrongAnswer of [() => 'yes', async () => 'yes']) {
      const wrong = await nodeServer(connectMiddleware(skipping(wrongAnswer as never, handled())));
      const answer = await fetch(wrong.url);
      expect(answer.status).toBe(500);
      expect(answer.headers.get('x-error')).toMatch(/"skip" function to return a boolean, got "yes"/);
    }
    const throwing = await nodeServer(
      connectMiddleware(
        skipping(() => {
          throw new Error('skip bug');
        }, handled()),
      ),
    );
    expect((await fetch(throwing.url)).headers.get('x-error')).toBe('skip bug');
    const rejecting = await nodeServer(
      connectMiddleware(skipping(() => Promise.reject(new Error('lookup failed')), handled())),
    );
    expect((await fetch(rejecting.url)).headers.get('x-error')).toBe('lookup failed');
  });

  it('a synchronous answer goes on at once, without waiting for a promise', () => {
    const seen: string[] = [];
    const handle = skipping(
      (req: { url: string }) => req.url === '/skipped',
      (request, reply, next, edge) => edge.proceed(reply, next, { handled: request.url }),
    );
    const edge: Edge<string[], undefined> = {
      response: () => undefined as never,
      proceed: (reply, _next, headers) => void reply.push(headers?.handled ?? 'skipped'),
      answer: () => undefined,
      fail: (_next, error) => void seen.push(String(error)),
    };
    handle({ url: '/skipped' }, seen, undefined, edge);
    handle({ url: '/other' }, seen, undefined, edge);
    expect(seen).toEqual(['skipped', '/other']);
  });
});

describe('one middleware type', () => {
  it('every adapter gives a Middleware', () => {
    expectTypeOf(rateLimitMiddleware).returns.toEqualTypeOf<Middleware>();
    expectTypeOf(loadSheddingMiddleware).returns.toEqualTypeOf<Middleware>();
    expectTypeOf(bulkheadMiddleware).returns.toEqualTypeOf<Middleware>();
  });
});
