import { EventEmitter } from 'node:events';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import express from 'express';
import Fastify from 'fastify';
import { describe, expect, it } from 'vitest';
import { deferred } from '../../test/support/deferred.js';
import { afterThisTest, listen } from '../../test/support/http-server.js';
import { until } from '../../test/support/until.js';
import { bulkhead } from '../admission/bulkhead.js';
import { bulkheadMiddleware } from './bulkhead.js';
import { bulkheadHandler, fastifyBulkheadHandler } from './bulkhead-handler.js';
import type { FastifyReplyLike, FastifyRequestLike } from './fastify-types.js';
import { untilClosed } from './hold-slot.js';

/**
 * Handlers that count how many run at once. Each one hangs up its own client as soon as it starts
 * (a client that leaves mid-handler), waits for its response to close, then waits for the test to
 * let it finish.
 */
function hangUpHarness() {
  const clients = new Map<string, AbortController>();
  const waiting: (() => void)[] = [];
  const stats = { running: 0, peak: 0, started: 0, finished: 0 };
  return {
    stats,
    waiting,
    async work(path: string, response: ServerResponse): Promise<string> {
      stats.started++;
      stats.running++;
      stats.peak = Math.max(stats.peak, stats.running);
      clients.get(path)!.abort();
      await untilClosed(response);
      await new Promise<void>((resolve) => waiting.push(resolve));
      stats.running--;
      stats.finished++;
      return 'done';
    },
    /** Starts `n` clients on `${url}/work/<i>`; each is hung up by its handler. */
    start(url: string, n: number): Promise<unknown[]> {
      return Promise.all(
        Array.from({ length: n }, (_, i) => {
          const controller = new AbortController();
          clients.set(`/work/${i}`, controller);
          return fetch(`${url}/work/${i}`, { signal: controller.signal }).catch((error: unknown) => error);
        }),
      );
    },
    /** Lets the handlers finish one at a time until all `n` have. */
    async drain(n: number): Promise<void> {
      for (let i = 0; i < n; i++) {
        await until(() => waiting.length > 0, `handler ${i + 1} of ${n} waits`);
        waiting.shift()!();
      }
      await until(() => stats.finished === n, 'every handler finished');
    },
  };
}

describe('the middleware form cannot bound handlers whose clients hang up', () => {
  it('14 clients hanging up mid-handler free their slots at once: 14 handlers run together', async () => {
    const h = hangUpHarness();
    const policy = bulkhead({ maxConcurrent: 2, maxQueue: 20 });
    const mw = bulkheadMiddleware({ bulkhead: policy });
    const { url } = await listen(
      createServer((req, res) => mw(req, res, () => void h.work(req.url!, res).then(() => res.end()))),
    );
    const clients = h.start(url, 14);
    await until(() => h.stats.started === 14, 'all 14 handlers started');
    expect(h.stats.peak).toBe(14);
    await clients;
    await h.drain(14);
  });
});

describe('bulkheadHandler (node:http, Express)', () => {
  it('14 clients hanging up mid-handler with maxConcurrent 2: never more than 2 handlers at once', async () => {
    const h = hangUpHarness();
    const policy = bulkhead({ maxConcurrent: 2, maxQueue: 20 });
    const handler = bulkheadHandler(policy, async (req: IncomingMessage, res: ServerResponse) => {
      await h.work(req.url!, res);
      res.end();
    });
    const { url } = await listen(
      createServer((req, res) =>
        handler(req, res, (error) => {
          throw new Error(`unexpected next(${String(error)})`);
        }),
      ),
    );
    const clients = h.start(url, 14);
    await h.drain(14);
    await clients;
    expect(h.stats).toEqual({ running: 0, peak: 2, started: 14, finished: 14 });
    expect(policy.inFlight).toBe(0);
    expect(policy.queued).toBe(0);
  });

  it('holds the slot until the handler settles and the response closed; refuses 503; errors go to next', async () => {
    const policy = bulkhead({ maxConcurrent: 1, maxQueue: 0 });
    const app = express();
    const release: (() => void)[] = [];
    app.get(
      '/slow',
      bulkheadHandler(
        policy,
        async (_req: express.Request, res: express.Response) => {
          res.send('sent early'); // the response is done, the handler's work is not
          await new Promise<void>((resolve) => release.push(resolve));
        },
        { random: () => 0 },
      ),
    );
    app.get(
      '/fail',
      bulkheadHandler(policy, async () => {
        throw new Error('handler failed');
      }),
    );
    app.use((error: Error, _req: express.Request, res: express.Response, _next: express.NextFunction) => {
      res.status(500).send(`handled: ${error.message}`);
    });
    const { url } = await listen(createServer(app));
    expect(await (await fetch(`${url}/slow`)).text()).toBe('sent early');
    expect(policy.inFlight).toBe(1);
    const refused = await fetch(`${url}/slow`);
    expect(refused.status).toBe(503);
    expect(refused.headers.get('retry-after')).toBe('1');
    expect(await refused.json()).toMatchObject({ code: 'ERR_BULKHEAD_FULL', instance: '/slow' });
    release[0]!();
    await until(() => policy.inFlight === 0, 'the slot is freed when the handler settles');
    const failed = await fetch(`${url}/fail`);
    expect(await failed.text()).toBe('handled: handler failed');
    await until(() => policy.inFlight === 0, 'a failed handler frees its slot');
    expect(release).toHaveLength(1);
  });

  it('a queued client that leaves never runs its handler; a synchronous throw goes to next', async () => {
    const policy = bulkhead({ maxConcurrent: 1, maxQueue: 5 });
    let ran = 0;
    const release: (() => void)[] = [];
    const handler = bulkheadHandler(policy, (req: IncomingMessage, res: ServerResponse) => {
      ran++;
      if (req.url === '/throw') throw new Error('sync bug');
      return new Promise<void>((resolve) => release.push(resolve)).then(() => void res.end('ok'));
    });
    const errors: unknown[] = [];
    const { url } = await listen(
      createServer((req, res) =>
        handler(req, res, (error) => {
          errors.push(error);
          res.writeHead(500).end();
        }),
      ),
    );
    const first = fetch(`${url}/a`);
    await until(() => ran === 1, 'a runs');
    const controller = new AbortController();
    const gone = fetch(`${url}/b`, { signal: controller.signal }).catch((error: unknown) => error);
    await until(() => policy.queued === 1, 'b is queued');
    controller.abort();
    await gone;
    await until(() => policy.queued === 0, 'b left the queue');
    release[0]!();
    expect(await (await first).text()).toBe('ok');
    expect((await fetch(`${url}/throw`)).status).toBe(500);
    expect(ran).toBe(2);
    expect((errors[0] as Error).message).toBe('sync bug');
    await until(() => policy.inFlight === 0, 'every slot freed');
  });

  it('refuses bad arguments with a TypeError', () => {
    const policy = bulkhead({ maxConcurrent: 1, maxQueue: 0 });
    expect(() => bulkheadHandler({} as never, () => {})).toThrow(/"bulkhead" to be a policy/);
    expect(() => bulkheadHandler(policy, 'h' as never)).toThrow(/"handler" to be a function/);
    expect(() => bulkheadHandler(policy, () => {}, { jitter: -1 })).toThrow(/"jitter"/);
    expect(() => bulkheadHandler(policy, () => {}, { retryAfter: 1 } as never)).toThrow(
      /unknown option "retryAfter" in bulkheadHandler options; did you mean "retryAfterMs"/,
    );
  });
});

describe('fastifyBulkheadHandler', () => {
  it('14 clients hanging up mid-handler with maxConcurrent 2: never more than 2 handlers at once', async () => {
    const h = hangUpHarness();
    const policy = bulkhead({ maxConcurrent: 2, maxQueue: 20 });
    const app = Fastify({ forceCloseConnections: true });
    afterThisTest(() => app.close());
    app.get(
      '/work/:i',
      fastifyBulkheadHandler(policy, (request, reply) => h.work(request.url, reply.raw)),
    );
    const url = await app.listen({ port: 0, host: '127.0.0.1' });
    const clients = h.start(url, 14);
    await h.drain(14);
    await clients;
    expect(h.stats).toEqual({ running: 0, peak: 2, started: 14, finished: 14 });
    await until(() => policy.inFlight === 0, 'every slot freed');
  });

  it('sends the handler’s value, refuses 503 problem+json, and hands a rejection to Fastify', async () => {
    const policy = bulkhead({ maxConcurrent: 1, maxQueue: 0 });
    const app = Fastify({ forceCloseConnections: true });
    afterThisTest(() => app.close());
    const release: (() => void)[] = [];
    app.get(
      '/slow',
      fastifyBulkheadHandler(
        policy,
        async () => {
          await new Promise<void>((resolve) => release.push(resolve));
          return { ok: true };
        },
        { random: () => 0 },
      ),
    );
    app.get(
      '/fail',
      fastifyBulkheadHandler(policy, async () => {
        throw Object.assign(new Error('bad input'), { statusCode: 422 });
      }),
    );
    const url = await app.listen({ port: 0, host: '127.0.0.1' });
    const slow = fetch(`${url}/slow`);
    await until(() => release.length === 1, 'slow runs');
    const refused = await fetch(`${url}/slow`);
    expect(refused.status).toBe(503);
    expect(refused.headers.get('retry-after')).toBe('1');
    expect(await refused.json()).toMatchObject({ code: 'ERR_BULKHEAD_FULL', instance: '/slow' });
    release[0]!();
    expect(await (await slow).json()).toEqual({ ok: true });
    await until(() => policy.inFlight === 0, 'the slot is freed');
    expect((await fetch(`${url}/fail`)).status).toBe(422);
    await until(() => policy.inFlight === 0, 'a failed handler frees its slot');
  });
});

describe('fastifyBulkheadHandler: what its promise resolves with when the handler never runs', () => {
  /** A Fastify reply stand-in: `raw` closes when the test says, and what was sent is recorded. */
  function fakeReply() {
    const raw = Object.assign(new EventEmitter(), { closed: false, destroy: () => {} });
    const sent: { status?: number; body?: unknown } = {};
    const reply: FastifyReplyLike = {
      raw: raw as unknown as ServerResponse,
      code(status) {
        sent.status = status;
        return reply;
      },
      headers: () => reply,
      send(body) {
        sent.body = body;
        return reply;
      },
    };
    const close = () => {
      raw.closed = true;
      raw.emit('close');
    };
    return { reply, sent, close };
  }
  const request = { url: '/report' } as FastifyRequestLike;

  it('a refused call resolves with the reply it answered 503, for Fastify to send nothing more', async () => {
    const policy = bulkhead({ maxConcurrent: 1, maxQueue: 0 });
    const release = deferred();
    const handler = fastifyBulkheadHandler(policy, () => release.promise);
    const first = fakeReply();
    const running = handler(request, first.reply);
    const second = fakeReply();
    await expect(handler(request, second.reply)).resolves.toBe(second.reply);
    expect(second.sent.status).toBe(503);
    release.resolve('done');
    first.close();
    await expect(running).resolves.toBe('done');
  });

  it('a call whose client left while queued resolves with nothing, and its handler never runs', async () => {
    const policy = bulkhead({ maxConcurrent: 1, maxQueue: 5 });
    const release = deferred();
    let ran = 0;
    const handler = fastifyBulkheadHandler(policy, () => {
      ran++;
      return release.promise;
    });
    const first = fakeReply();
    const running = handler(request, first.reply);
    const queued = fakeReply();
    const call = handler(request, queued.reply);
    await until(() => policy.queued === 1, 'the second call is queued');
    queued.close();
    await expect(call).resolves.toBeUndefined();
    expect(queued.sent.status).toBeUndefined();
    release.resolve('done');
    first.close();
    await running;
    expect(ran).toBe(1);
  });
});
