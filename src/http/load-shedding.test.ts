import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import express from 'express';
import Fastify from 'fastify';
import { describe, expect, it } from 'vitest';
import { asyncSkip, expectAsyncSkipHonoured, fastifyWithSkipRoutes } from '../../test/support/async-skip.js';
import { startFastify } from '../../test/support/fastify-server.js';
import { afterThisTest, listen } from '../../test/support/http-server.js';
import { expectProblem } from '../../test/support/problem-assertions.js';
import { until } from '../../test/support/until.js';
import { loadShedder } from '../admission/load-shedder.js';
import type { Priority, SampledSignals } from '../admission/load-shedder-options.js';
import { FakeClock } from '../testing/fake-clock.js';
import { fastifyLoadShedding, loadSheddingMiddleware } from './load-shedding.js';

/**
 * A shedder whose readings the test sets; limits: 100 ms p99 delay and optionally in-flight. One
 * interval has passed, so the readings are known (the first sample covers no interval).
 */
async function shedderWith(readings: SampledSignals, inFlight?: number) {
  const clock = new FakeClock();
  const shedder = loadShedder({
    limits: inFlight === undefined ? { eventLoopDelayMs: 100 } : { eventLoopDelayMs: 100, inFlight },
    thresholds: inFlight === undefined ? {} : { high: 1, normal: 1, low: 1 },
    source: () => readings,
    clock,
  });
  afterThisTest(async () => shedder.close());
  await clock.advance(1_000);
  return shedder;
}

const byHeader = (req: { headers: IncomingMessage['headers'] }): Priority =>
  (req.headers['x-priority'] as Priority | undefined) ?? 'normal';

const get = (url: string, priority?: Priority, signal?: AbortSignal) =>
  fetch(url, { headers: priority === undefined ? {} : { 'x-priority': priority }, signal: signal ?? null });

describe('loadSheddingMiddleware options', () => {
  const shedder = loadShedder({ limits: { inFlight: 1 } });
  it.each([
    ['no options', undefined, /"loadSheddingMiddleware options" to be an options object, got undefined/],
    ['no shedder', { priority: byHeader }, /"shedder" to be a load shedder/],
    ['a bad shedder', { shedder: { admit: 1 }, priority: byHeader }, /"shedder" to be a load shedder/],
    [
      'a null shedder',
      { shedder: null, priority: byHeader },
      /^expected "shedder" to be a load shedder \(an object with admit\(priority\)\), got null$/,
    ],
    [
      'a function as shedder',
      { shedder: Object.assign(() => {}, { admit: () => () => {} }), priority: byHeader },
      /"shedder" to be a load shedder/,
    ],
    ['no priority', { shedder }, /"priority" to be a function, got undefined/],
    ['a priority string', { shedder, priority: 'low' }, /"priority" to be a function, got "low"/],
    ['a bad skip', { shedder, priority: byHeader, skip: true }, /"skip" to be a function, got true/],
    ['a bad retryAfterMs', { shedder, priority: byHeader, retryAfterMs: -1 }, /"retryAfterMs"/],
    ['a bad jitter', { shedder, priority: byHeader, jitter: 'x' }, /"jitter"/],
    ['a bad random', { shedder, priority: byHeader, random: {} }, /"random" to be a function/],
  ])('%s is a TypeError', (_name, options, message) => {
    expect(() => loadSheddingMiddleware(options as never)).toThrow(TypeError);
    expect(() => loadSheddingMiddleware(options as never)).toThrow(message);
  });
});

describe('loadSheddingMiddleware on node:http', () => {
  function serve(mw: ReturnType<typeof loadSheddingMiddleware>, handler: (res: ServerResponse) => void) {
    const server = createServer((req, res) =>
      mw(req, res, (error) => {
        if (error !== undefined) {
          res.writeHead(500, { 'x-error': String((error as Error).message).slice(0, 200) });
          res.end();
          return;
        }
        handler(res);
      }),
    );
    return listen(server);
  }

  it('answers a shed priority 503 problem+json with a jittered Retry-After and never runs the handler', async () => {
    const shedder = await shedderWith({ eventLoopDelayMs: 93 });
    let handled = 0;
    const { url } = await serve(
      loadSheddingMiddleware({ shedder, priority: byHeader, random: () => 0.99 }),
      (res) => {
        handled++;
        res.end('ok');
      },
    );
    const refused = await get(`${url}/orders?id=1`, 'high');
    expect(refused.status).toBe(503);
    expect(refused.headers.get('content-type')).toBe('application/problem+json');
    // The refusal asks for 1 s; the jitter (0.5 of it, in whole seconds) adds 1.
    expect(refused.headers.get('retry-after')).toBe('2');
    expect(await refused.json()).toEqual({
      type: 'urn:bulwark:problem:overloaded',
      title: 'Overloaded',
      status: 503,
      detail: 'load shed: "high" priority refused, eventLoopDelayMs at 93 % of its limit',
      code: 'ERR_LOAD_SHED',
      kind: 'overloaded',
      retryAfterMs: 2_000,
      instance: '/orders?id=1',
    });
    expect(handled).toBe(0);
    const admitted = await get(`${url}/orders`, 'critical');
    expect(admitted.status).toBe(200);
    expect(await admitted.text()).toBe('ok');
    expect(handled).toBe(1);
  });

  it('health routes pass even when critical is shed, and are not counted in flight', async () => {
    const shedder = await shedderWith({ eventLoopDelayMs: 500 });
    const seen: number[] = [];
    const { url } = await serve(loadSheddingMiddleware({ shedder, priority: () => 'critical' }), (res) => {
      seen.push(shedder.inFlight);
      res.end('up');
    });
    for (const path of ['/healthz', '/readyz?verbose', '/livez', '/health/db']) {
      const res = await get(`${url}${path}`);
      expect(res.status, path).toBe(200);
    }
    expect(seen).toEqual([0, 0, 0, 0]);
    expect((await get(`${url}/orders`)).status).toBe(503);
  });

  it('a custom skip replaces the default', async () => {
    const shedder = await shedderWith({ eventLoopDelayMs: 500 });
    const { url } = await serve(
      loadSheddingMiddleware({ shedder, priority: () => 'low', skip: (req) => req.url === '/metrics' }),
      (res) => res.end('ok'),
    );
    expect((await get(`${url}/metrics`)).status).toBe(200);
    expect((await get(`${url}/healthz`)).status).toBe(503);
  });

  it('counts a request in flight until its response closes, and releases when the client goes away', async () => {
    const shedder = await shedderWith({ eventLoopDelayMs: 0 }, 1);
    const held: ServerResponse[] = [];
    const { url, allClosed } = await serve(
      loadSheddingMiddleware({ shedder, priority: byHeader }),
      (res) => void held.push(res),
    );
    const first = get(`${url}/a`, 'low');
    await until(() => held.length === 1, 'the first request reaches the handler');
    expect(shedder.inFlight).toBe(1);
    const second = await get(`${url}/b`, 'critical');
    expect(second.status).toBe(503);
    expect(await second.json()).toMatchObject({ code: 'ERR_LOAD_SHED' });
    held[0]!.end('done');
    expect(await (await first).text()).toBe('done');
    await allClosed();
    expect(shedder.inFlight).toBe(0);

    const controller = new AbortController();
    const abandoned = get(`${url}/c`, 'low', controller.signal).catch((error: unknown) => error);
    await until(() => held.length === 2, 'the third request reaches the handler');
    expect(shedder.inFlight).toBe(1);
    controller.abort();
    await abandoned;
    await allClosed();
    expect(shedder.inFlight).toBe(0);
    expect(held[1]!.writableEnded).toBe(false);
  });

  it('a request whose client left before the middleware ran is not left counted in flight', async () => {
    const shedder = await shedderWith({ eventLoopDelayMs: 0 }, 5);
    const mw = loadSheddingMiddleware({ shedder, priority: () => 'critical' });
    let reached = 0;
    const server = createServer((req, res) => {
      req.socket.destroy();
      res.once('close', () =>
        mw(req, res, () => {
          reached++;
        }),
      );
    });
    const { url, allClosed } = await listen(server);
    await fetch(url).catch(() => undefined);
    await allClosed();
    await until(() => reached === 1, 'the middleware ran after the close');
    expect(shedder.inFlight).toBe(0);
  });

  it('an error thrown by priority, or an invalid priority, goes to next(error)', async () => {
    const shedder = await shedderWith({ eventLoopDelayMs: 0 });
    const { url } = await serve(
      loadSheddingMiddleware({
        shedder,
        priority: (req) => {
          if (req.url === '/throw') throw new Error('priority bug');
          return 'urgent' as Priority;
        },
      }),
      (res) => res.end('ok'),
    );
    const thrown = await get(`${url}/throw`);
    expect(thrown.status).toBe(500);
    expect(thrown.headers.get('x-error')).toBe('priority bug');
    const invalid = await get(`${url}/invalid`);
    expect(invalid.status).toBe(500);
    expect(invalid.headers.get('x-error')).toMatch(/expected "priority" to be one of/);
    expect(shedder.inFlight).toBe(0);
  });
  it('a priority or skip that gives no usable answer is an error, never an exemption', async () => {
    const shedder = await shedderWith({ eventLoopDelayMs: 500 }); // everything but health is shed
    let reached = 0;
    const serveWith = (options: Partial<Parameters<typeof loadSheddingMiddleware>[0]>) =>
      serve(loadSheddingMiddleware({ shedder, priority: byHeader, ...options }), (res) => {
        reached++;
        res.end('ok');
      });
    // A promise is waited for: one that resolves to a non-boolean must not exempt the request.
    const notBoolean = await serveWith({ skip: (async () => 'yes') as never });
    const a = await get(`${notBoolean.url}/orders`);
    expect(a.status).toBe(500);
    expect(a.headers.get('x-error')).toMatch(/"skip" function to return a boolean, got "yes"/);
    const undefinedSkip = await serveWith({ skip: (() => undefined) as never });
    expect((await get(`${undefinedSkip.url}/orders`)).status).toBe(500);
    const undefinedPriority = await serveWith({ priority: () => undefined as never });
    expect((await get(`${undefinedPriority.url}/orders`)).status).toBe(500);
    expect(reached).toBe(0);
    expect(shedder.inFlight).toBe(0);
  });
});

describe('loadSheddingMiddleware with an async skip', () => {
  it('waits for it: true exempts (not shed, not counted), false sheds; a rejection fails the request', async () => {
    const shedder = await shedderWith({ eventLoopDelayMs: 500 }); // everything but exemptions is shed
    const app = express();
    app.use(loadSheddingMiddleware({ shedder, priority: () => 'low', skip: asyncSkip }));
    app.get('/internal', (_req, res) => void res.send(`in flight: ${shedder.inFlight}`));
    app.get('/orders', (_req, res) => void res.send('orders'));
    app.use((error: Error, _req: express.Request, res: express.Response, _next: express.NextFunction) => {
      res.status(500).send(`handled: ${error.message}`);
    });
    const { url, allClosed } = await listen(createServer(app));
    expect(await (await get(`${url}/internal`)).text()).toBe('in flight: 0');
    expect((await get(`${url}/orders`)).status).toBe(503);
    const rejected = await get(`${url}/reject`);
    expect(rejected.status).toBe(500);
    expect(await rejected.text()).toBe('handled: skip lookup failed');
    await allClosed();
    expect(shedder.inFlight).toBe(0);
  });

  it('on Fastify too: true exempts, false sheds, a rejection is the error reply', async () => {
    const shedder = await shedderWith({ eventLoopDelayMs: 500 });
    const { url, allClosed } = await fastifyWithSkipRoutes((app) =>
      app.register(fastifyLoadShedding, { shedder, priority: () => 'low', skip: asyncSkip }),
    );
    await expectAsyncSkipHonoured(url, 503);
    await allClosed();
    expect(shedder.inFlight).toBe(0);
  });
});

describe('loadSheddingMiddleware on Express', () => {
  it('sheds by priority, passes health routes, and hands priority errors to the error handler', async () => {
    const shedder = await shedderWith({ eventLoopDelayMs: 86 });
    const app = express();
    app.use(
      loadSheddingMiddleware({
        shedder,
        priority: (req) => {
          if (req.url === '/broken') throw new Error('no priority');
          return req.url.startsWith('/checkout') ? 'high' : 'low';
        },
        random: () => 0,
      }),
    );
    app.get('/checkout', (_req, res) => void res.send('paid'));
    app.get('/feed', (_req, res) => void res.send('feed'));
    app.get('/healthz', (_req, res) => void res.send('up'));
    app.use((error: Error, _req: express.Request, res: express.Response, _next: express.NextFunction) => {
      res.status(500).send(`handled: ${error.message}`);
    });
    const { url, allClosed } = await listen(createServer(app));

    expect(await (await get(`${url}/checkout`)).text()).toBe('paid');
    await expectProblem(await get(`${url}/feed`), {
      status: 503,
      retryAfter: '1',
      body: { code: 'ERR_LOAD_SHED', instance: '/feed' },
    });
    expect(await (await get(`${url}/healthz`)).text()).toBe('up');
    const broken = await get(`${url}/broken`);
    expect(broken.status).toBe(500);
    expect(await broken.text()).toBe('handled: no priority');
    await allClosed();
    expect(shedder.inFlight).toBe(0);
  });
});

describe('fastifyLoadShedding', () => {
  it('sheds by route priority for every route (also those in child plugins) and answers 503 problem+json', async () => {
    const shedder = await shedderWith({ eventLoopDelayMs: 75 });
    const app = Fastify({ forceCloseConnections: true });
    await app.register(fastifyLoadShedding, {
      shedder,
      priority: (request) => (request.routeOptions.config as { priority?: Priority }).priority ?? 'normal',
      random: () => 0,
    });
    app.get('/reports', { config: { priority: 'low' } }, async () => 'report');
    app.get('/orders', async () => 'orders');
    app.get('/healthz', { config: { priority: 'low' } }, async () => 'up');
    await app.register(async (child) => {
      child.get('/child/batch', { config: { priority: 'low' } }, async () => 'batch');
    });
    const { url, allClosed } = await startFastify(app);

    const shed = await get(`${url}/reports`);
    expect(shed.status).toBe(503);
    expect(shed.headers.get('content-type')).toMatch(/^application\/problem\+json/);
    expect(shed.headers.get('retry-after')).toBe('1');
    expect(await shed.json()).toMatchObject({
      type: 'urn:bulwark:problem:overloaded',
      code: 'ERR_LOAD_SHED',
      instance: '/reports',
      retryAfterMs: 1_000,
    });
    expect((await get(`${url}/child/batch`)).status).toBe(503);
    expect(await (await get(`${url}/orders`)).text()).toBe('orders');
    expect(await (await get(`${url}/healthz`)).text()).toBe('up');
    await allClosed();
    expect(shedder.inFlight).toBe(0);
  });

  it('holds the in-flight count until the reply closes, including when the client goes away', async () => {
    const shedder = await shedderWith({ eventLoopDelayMs: 0 }, 1);
    const app = Fastify({ forceCloseConnections: true });
    await app.register(fastifyLoadShedding, { shedder, priority: () => 'critical' });
    let reached = 0;
    let finish: (() => void) | undefined;
    app.get('/slow', async () => {
      reached++;
      await new Promise<void>((resolve) => {
        finish = resolve;
      });
      return 'slow';
    });
    const { url, allClosed } = await startFastify(app);
    const controller = new AbortController();
    const abandoned = get(`${url}/slow`, undefined, controller.signal).catch((error: unknown) => error);
    await until(() => reached === 1, 'the request reaches the handler');
    expect(shedder.inFlight).toBe(1);
    expect((await get(`${url}/slow`)).status).toBe(503);
    controller.abort();
    await abandoned;
    await allClosed();
    expect(shedder.inFlight).toBe(0);
    finish?.();
  });

  it('an error from priority becomes Fastify’s error reply, and bad options fail the registration', async () => {
    const shedder = await shedderWith({ eventLoopDelayMs: 0 });
    const app = Fastify({ forceCloseConnections: true });
    await app.register(fastifyLoadShedding, {
      shedder,
      priority: () => {
        throw new Error('priority bug');
      },
    });
    app.get('/x', async () => 'x');
    const { url } = await startFastify(app);
    const res = await get(`${url}/x`);
    expect(res.status).toBe(500);
    expect(shedder.inFlight).toBe(0);

    const bad = Fastify();
    bad.register(fastifyLoadShedding, { shedder, priority: 'low' as never });
    await expect(bad.ready()).rejects.toThrow(/"priority" to be a function, got "low"/);
    await bad.close();
  });

  it('shows in Fastify as bulwark-load-shedding and names its options in a TypeError', async () => {
    expect(
      (fastifyLoadShedding as unknown as Record<symbol, unknown>)[Symbol.for('fastify.display-name')],
    ).toBe('bulwark-load-shedding');
    const app = Fastify();
    app.register(fastifyLoadShedding, {
      shedder: loadShedder({ limits: { inFlight: 1 } }),
      priority: () => 'low',
      skp: 1,
    } as never);
    await expect(app.ready()).rejects.toThrow(/unknown option "skp" in fastifyLoadShedding options/);
    await app.close();
  });
});
