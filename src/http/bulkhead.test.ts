import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import express from 'express';
import Fastify from 'fastify';
import { describe, expect, it } from 'vitest';
import { asyncSkip, expectAsyncSkipHonoured, fastifyWithSkipRoutes } from '../../test/support/async-skip.js';
import { startFastify } from '../../test/support/fastify-server.js';
import { listen } from '../../test/support/http-server.js';
import { expectProblem } from '../../test/support/problem-assertions.js';
import { until } from '../../test/support/until.js';
import { bulkhead } from '../admission/bulkhead.js';
import { ResilienceError } from '../core/errors.js';
import type { Policy } from '../core/policy.js';
import { FakeClock } from '../testing/fake-clock.js';
import { seededRandom } from '../testing/seeded-random.js';
import { type BulkheadMiddlewareOptions, bulkheadMiddleware, fastifyBulkhead } from './bulkhead.js';

/** A handler that holds each response until the test ends it, recording which paths it saw. */
function heldHandler() {
  const held: { path: string; res: ServerResponse }[] = [];
  return {
    held,
    handle(req: IncomingMessage, res: ServerResponse) {
      held.push({ path: req.url ?? '', res });
    },
    end(path: string, body = 'done') {
      const entry = held.find((h) => h.path === path && !h.res.writableEnded);
      if (entry === undefined) throw new Error(`no held response for ${path}`);
      entry.res.end(body);
    },
  };
}

function nodeServer(
  mw: ReturnType<typeof bulkheadMiddleware>,
  handle: (req: IncomingMessage, res: ServerResponse) => void,
) {
  return listen(
    createServer((req, res) =>
      mw(req, res, (error) => {
        if (error !== undefined) {
          res.writeHead(500, { 'x-error': String((error as Error).message).slice(0, 200) });
          res.end();
          return;
        }
        handle(req, res);
      }),
    ),
  );
}

/**
 * Serves `bulkheadMiddleware(options)` in front of a held handler and sends `/a`, which takes the
 * first slot and keeps it until the test ends its response (`h.end('/a')`; `a` is its answer).
 */
async function withARunning(options: BulkheadMiddlewareOptions) {
  const h = heldHandler();
  const server = await nodeServer(bulkheadMiddleware(options), h.handle);
  const a = fetch(`${server.url}/a`);
  await until(() => h.held.length === 1, 'a runs');
  return { ...server, h, a };
}

const abortable = (url: string) => {
  const controller = new AbortController();
  const response = fetch(url, { signal: controller.signal }).catch((error: unknown) => error);
  return { abort: () => controller.abort(), response };
};

/**
 * Against a bulkhead of one slot and one queue place behind `url`: `/slow` takes the slot (until
 * `running()` says so), an abortable request to `queuedPath` waits in the queue, and a third to
 * `/slow` is answered at once (`c`, the refusal).
 */
async function runQueueRefuse(
  url: string,
  policy: Policy & { readonly queued: number },
  running: () => boolean,
  queuedPath: string,
) {
  const a = fetch(`${url}/slow`);
  await until(running, 'a runs');
  const b = abortable(`${url}${queuedPath}`);
  await until(() => policy.queued === 1, `b (${queuedPath}) is queued`);
  const c = await fetch(`${url}/slow`);
  return { a, b, c };
}

describe('bulkheadMiddleware options', () => {
  const policy = bulkhead({ maxConcurrent: 1, maxQueue: 0 });
  it.each([
    ['no options', undefined, /"bulkheadMiddleware options" to be an options object, got undefined/],
    ['no bulkhead', {}, /"bulkhead" to be a policy \(with execute\) or a function of the request/],
    ['a bad bulkhead', { bulkhead: { execute: 1 } }, /"bulkhead" to be a policy/],
    ['a bad skip', { bulkhead: policy, skip: 'x' }, /"skip" to be a function/],
    ['a bad retryAfterMs', { bulkhead: policy, retryAfterMs: Number.NaN }, /"retryAfterMs"/],
    ['a bad jitter', { bulkhead: policy, jitter: -1 }, /"jitter"/],
    ['a bad random', { bulkhead: policy, random: 1 }, /"random" to be a function/],
  ])('%s is a TypeError', (_name, options, message) => {
    expect(() => bulkheadMiddleware(options as never)).toThrow(TypeError);
    expect(() => bulkheadMiddleware(options as never)).toThrow(message);
  });
});

describe('bulkheadMiddleware on node:http with bulkhead()', () => {
  it('runs maxConcurrent, queues maxQueue in order, and answers the rest 503 with a jittered Retry-After', async () => {
    const policy = bulkhead({ maxConcurrent: 1, maxQueue: 1 });
    const { url, allClosed, h, a } = await withARunning({
      bulkhead: policy,
      retryAfterMs: 2_000,
      random: () => 0.99,
    });
    const b = fetch(`${url}/b`);
    await until(() => policy.queued === 1, 'b is queued');
    // base 2 s + jitter ⌈2 s × 0.5⌉ = 1 s
    await expectProblem(await fetch(`${url}/c`), {
      status: 503,
      retryAfter: '3',
      body: {
        type: 'urn:bulwark:problem:overloaded',
        code: 'ERR_BULKHEAD_FULL',
        retryAfterMs: 3_000,
        instance: '/c',
      },
    });
    expect(h.held.map((x) => x.path)).toEqual(['/a']);
    h.end('/a', 'A');
    expect(await (await a).text()).toBe('A');
    await until(() => h.held.length === 2, 'b gets the freed slot');
    expect(policy.queued).toBe(0);
    h.end('/b', 'B');
    expect(await (await b).text()).toBe('B');
    await allClosed();
    expect(policy.inFlight).toBe(0);
  });

  it('a queued request whose queueTimeoutMs passes is answered 503 and never reaches the handler', async () => {
    const clock = new FakeClock();
    const policy = bulkhead({ maxConcurrent: 1, maxQueue: 5, queueTimeoutMs: 500, clock });
    const { url, allClosed, h, a } = await withARunning({ bulkhead: policy });
    const b = fetch(`${url}/b`);
    await until(() => policy.queued === 1, 'b is queued');
    await clock.advance(500);
    const refused = await b;
    expect(refused.status).toBe(503);
    expect(await refused.json()).toMatchObject({
      code: 'ERR_BULKHEAD_FULL',
      detail: expect.stringMatching(/queue timeout/),
    });
    expect(policy.queued).toBe(0);
    h.end('/a');
    await a;
    await allClosed();
    expect(h.held.map((x) => x.path)).toEqual(['/a']);
    expect(policy.inFlight).toBe(0);
  });

  it('a client that disconnects while queued leaves the queue without taking a slot', async () => {
    const policy = bulkhead({ maxConcurrent: 1, maxQueue: 5 });
    const { url, allClosed, h, a } = await withARunning({ bulkhead: policy });
    const b = abortable(`${url}/b`);
    await until(() => policy.queued === 1, 'b is queued');
    b.abort();
    await b.response;
    await until(() => policy.queued === 0, 'b left the queue');
    expect(policy.inFlight).toBe(1);
    h.end('/a');
    await a;
    await allClosed();
    expect(policy.inFlight).toBe(0);
    expect(h.held.map((x) => x.path)).toEqual(['/a']);
    // The slot is free: the next request runs at once.
    const c = fetch(`${url}/c`);
    await until(() => h.held.length === 2, 'c runs');
    h.end('/c');
    expect((await c).status).toBe(200);
  });

  it('a client that disconnects while running frees its slot when its response closes', async () => {
    const policy = bulkhead({ maxConcurrent: 1, maxQueue: 0 });
    const h = heldHandler();
    const { url, allClosed } = await nodeServer(bulkheadMiddleware({ bulkhead: policy }), h.handle);
    const a = abortable(`${url}/a`);
    await until(() => h.held.length === 1, 'a runs');
    expect(policy.inFlight).toBe(1);
    a.abort();
    await a.response;
    await allClosed();
    expect(policy.inFlight).toBe(0);
  });

  it('a request whose client left before the middleware ran never runs nor takes a slot', async () => {
    const policy = bulkhead({ maxConcurrent: 1, maxQueue: 0 });
    const mw = bulkheadMiddleware({ bulkhead: policy });
    let ran = 0;
    let passed = false;
    const server = createServer((req, res) => {
      req.socket.destroy();
      res.once('close', () => {
        mw(req, res, () => {
          ran++;
        });
        passed = true;
      });
    });
    const { url, allClosed } = await listen(server);
    await fetch(url).catch(() => undefined);
    await allClosed();
    await until(() => passed, 'the middleware ran after the close');
    await new Promise((resolve) => setImmediate(resolve));
    expect(ran).toBe(0);
    expect(policy.inFlight).toBe(0);
  });

  it('no slot leaks under churn: random aborts while queued and running, then everything drains', async () => {
    const policy = bulkhead({ maxConcurrent: 3, maxQueue: 6 });
    const random = seededRandom(11);
    let peak = 0;
    const server = createServer((req, res) =>
      bulkheadMiddleware({ bulkhead: policy })(req, res, () => {
        peak = Math.max(peak, policy.inFlight);
        setImmediate(() => res.end('ok'));
      }),
    );
    const { url, allClosed } = await listen(server);
    const calls = Array.from({ length: 60 }, () => {
      const call = abortable(`${url}/work`);
      if (random() < 0.4) setImmediate(call.abort);
      return call.response;
    });
    const results = await Promise.all(calls);
    await allClosed();
    expect(policy.inFlight).toBe(0);
    expect(policy.queued).toBe(0);
    expect(peak).toBeLessThanOrEqual(3);
    const statuses = results.map((r) => (r instanceof Response ? r.status : 'aborted'));
    expect(statuses.every((s) => s === 200 || s === 503 || s === 'aborted')).toBe(true);
  });

  it('health routes skip the bulkhead even when it is full', async () => {
    const policy = bulkhead({ maxConcurrent: 1, maxQueue: 0 });
    const h = heldHandler();
    const { url } = await nodeServer(bulkheadMiddleware({ bulkhead: policy }), (req, res) => {
      if (req.url === '/healthz') res.end('up');
      else h.handle(req, res);
    });
    const a = fetch(`${url}/a`);
    await until(() => h.held.length === 1, 'a runs');
    expect((await fetch(`${url}/b`)).status).toBe(503);
    expect(await (await fetch(`${url}/healthz`)).text()).toBe('up');
    h.end('/a');
    await a;
  });
});

describe('bulkheadMiddleware tiers and other policies', () => {
  it('a selector gives each route its own bulkhead: a full optional tier never blocks checkout; skip exempts', async () => {
    const critical = bulkhead({ maxConcurrent: 2, maxQueue: 2 });
    const optional = bulkhead({ maxConcurrent: 1, maxQueue: 0 });
    const h = heldHandler();
    const { url, allClosed } = await nodeServer(
      bulkheadMiddleware({
        bulkhead: (req) => (req.url?.startsWith('/checkout') ? critical : optional),
        skip: (req) => req.url === '/other',
      }),
      h.handle,
    );
    const recs = fetch(`${url}/recs`);
    await until(() => h.held.length === 1, 'recs runs');
    expect((await fetch(`${url}/recs`)).status).toBe(503);
    const checkout = fetch(`${url}/checkout`);
    const other = fetch(`${url}/other`);
    await until(() => h.held.length === 3, 'checkout and the skipped route run');
    expect(critical.inFlight).toBe(1);
    h.end('/checkout', 'paid');
    h.end('/other', 'other');
    h.end('/recs', 'recs');
    expect(await (await checkout).text()).toBe('paid');
    expect(await (await other).text()).toBe('other');
    expect(await (await recs).text()).toBe('recs');
    await allClosed();
    expect(critical.inFlight + optional.inFlight).toBe(0);
  });

  it('a selector that throws or returns a non-policy goes to next(error)', async () => {
    const { url } = await nodeServer(
      bulkheadMiddleware({
        bulkhead: (req) => {
          if (req.url === '/throw') throw new Error('selector bug');
          if (req.url === '/async')
            return Promise.resolve(bulkhead({ maxConcurrent: 1, maxQueue: 0 })) as unknown as Policy;
          return 42 as unknown as Policy;
        },
      }),
      (_req, res) => res.end('ok'),
    );
    const thrown = await fetch(`${url}/throw`);
    expect(thrown.status).toBe(500);
    expect(thrown.headers.get('x-error')).toBe('selector bug');
    const wrong = await fetch(`${url}/wrong`);
    expect(wrong.status).toBe(500);
    expect(wrong.headers.get('x-error')).toBe(
      'expected "bulkhead" to return a policy (with execute), got something else',
    );
    // A selector must answer at once: a promise of a policy is not a policy.
    const promised = await fetch(`${url}/async`);
    expect(promised.status).toBe(500);
    expect(promised.headers.get('x-error')).toBe(
      'expected "bulkhead" to return a policy (with execute), got something else',
    );
  });

  it('a handler that throws synchronously is answered 500 problem+json, also when it ran from the queue', async () => {
    const policy = bulkhead({ maxConcurrent: 1, maxQueue: 1 });
    const h = heldHandler();
    const { url, allClosed } = await nodeServer(bulkheadMiddleware({ bulkhead: policy }), (req, res) => {
      if (req.url === '/throw') throw new Error('handler bug');
      h.handle(req, res);
    });
    const direct = await fetch(`${url}/throw`);
    expect(direct.status).toBe(500);
    expect(direct.headers.get('content-type')).toBe('application/problem+json');
    const a = fetch(`${url}/a`);
    await until(() => h.held.length === 1, 'a runs');
    const queued = fetch(`${url}/throw`);
    await until(() => policy.queued === 1, 'the throwing request is queued');
    h.end('/a');
    await a;
    const answer = await queued;
    expect(answer.status).toBe(500);
    expect(answer.headers.get('content-type')).toBe('application/problem+json');
    await allClosed();
    expect(policy.inFlight).toBe(0);
  });

  it('a selector returning undefined or a skip that is not a boolean is an error, never unlimited', async () => {
    const policy = bulkhead({ maxConcurrent: 1, maxQueue: 0 });
    let reached = 0;
    const handle = (_req: IncomingMessage, res: ServerResponse) => {
      reached++;
      res.end('ok');
    };
    const missingTier = await nodeServer(bulkheadMiddleware({ bulkhead: () => undefined as never }), handle);
    const missing = await fetch(`${missingTier.url}/reports`);
    expect(missing.status).toBe(500);
    expect(missing.headers.get('x-error')).toMatch(
      /"bulkhead" to return a policy.*got undefined.*use "skip"/,
    );
    // A promise is waited for: one that resolves to a non-boolean must not exempt the request.
    const notBoolean = await nodeServer(
      bulkheadMiddleware({ bulkhead: policy, skip: (async () => 'yes') as never }),
      handle,
    );
    const exempted = await fetch(`${notBoolean.url}/reports`);
    expect(exempted.status).toBe(500);
    expect(exempted.headers.get('x-error')).toMatch(/"skip" function to return a boolean, got "yes"/);
    expect(reached).toBe(0);
    expect(policy.inFlight).toBe(0);
  });

  it('an async skip is waited for: true exempts, false holds the request; a rejection fails it', async () => {
    const policy = bulkhead({ maxConcurrent: 1, maxQueue: 0 });
    const { url, allClosed, h, a } = await withARunning({ bulkhead: policy, skip: asyncSkip });
    expect(policy.inFlight).toBe(1);
    expect((await fetch(`${url}/b`)).status).toBe(503);
    const internal = fetch(`${url}/internal`);
    await until(() => h.held.length === 2, 'the exempt request runs although the bulkhead is full');
    const rejected = await fetch(`${url}/reject`);
    expect(rejected.status).toBe(500);
    expect(rejected.headers.get('x-error')).toBe('skip lookup failed');
    h.end('/internal', 'internal');
    h.end('/a', 'A');
    expect(await (await internal).text()).toBe('internal');
    expect(await (await a).text()).toBe('A');
    await allClosed();
    expect(policy.inFlight).toBe(0);
  });

  it('works with any Policy: a foreign refusal keeps its status; only transient kinds get Retry-After', async () => {
    const refusing: Policy = {
      execute: (_op, options) =>
        Promise.reject(
          options?.signal !== undefined && (globalThis as { refuseInvalid?: boolean }).refuseInvalid
            ? new ResilienceError('no', { code: 'ERR_NO', kind: 'invalid' })
            : new ResilienceError('busy', { code: 'ERR_BUSY', kind: 'overloaded', retryAfterMs: 4_000 }),
        ),
    };
    const { url } = await nodeServer(bulkheadMiddleware({ bulkhead: refusing, random: () => 0 }), (_r, res) =>
      res.end('never'),
    );
    const busy = await fetch(`${url}/x`);
    expect(busy.status).toBe(503);
    expect(busy.headers.get('retry-after')).toBe('4');
    expect(await busy.json()).toMatchObject({ code: 'ERR_BUSY', retryAfterMs: 4_000 });
    (globalThis as { refuseInvalid?: boolean }).refuseInvalid = true;
    try {
      const invalid = await fetch(`${url}/x`);
      expect(invalid.status).toBe(400);
      expect(invalid.headers.get('retry-after')).toBeNull();
    } finally {
      delete (globalThis as { refuseInvalid?: boolean }).refuseInvalid;
    }
  });

  it('a policy that ignores the abort never runs a request whose client already left', async () => {
    let start: (() => void) | undefined;
    const late: Policy = {
      execute: <T>(op: (ctx: never) => T | Promise<T>) =>
        new Promise<T>((resolve, reject) => {
          start = () => Promise.resolve(op({} as never)).then(resolve, reject);
        }),
    };
    let reached = 0;
    const { url, allClosed } = await nodeServer(bulkheadMiddleware({ bulkhead: late }), (_r, res) => {
      reached++;
      res.end('ran');
    });
    const gone = abortable(`${url}/x`);
    await until(() => start !== undefined, 'the request waits in the policy');
    gone.abort();
    await gone.response;
    await allClosed();
    start!();
    await new Promise((resolve) => setImmediate(resolve));
    expect(reached).toBe(0);
  });
});

describe('bulkheadMiddleware on Express', () => {
  it('queues, refuses and frees slots for an Express app; errors reach the error handler', async () => {
    const policy = bulkhead({ maxConcurrent: 1, maxQueue: 1 });
    const app = express();
    const held: express.Response[] = [];
    app.use(
      bulkheadMiddleware({
        bulkhead: (req) => {
          if (req.url === '/broken') throw new Error('selector bug');
          return policy;
        },
        random: () => 0,
      }),
    );
    app.get('/slow', (_req, res) => void held.push(res));
    app.get('/healthz', (_req, res) => void res.send('up'));
    app.use((error: Error, _req: express.Request, res: express.Response, _next: express.NextFunction) => {
      res.status(500).send(`handled: ${error.message}`);
    });
    const { url, allClosed } = await listen(createServer(app));
    const { a, b, c } = await runQueueRefuse(url, policy, () => held.length === 1, '/slow');
    expect(c.status).toBe(503);
    expect(c.headers.get('retry-after')).toBe('1');
    expect(await c.json()).toMatchObject({ code: 'ERR_BULKHEAD_FULL' });
    expect(await (await fetch(`${url}/healthz`)).text()).toBe('up');
    const broken = await fetch(`${url}/broken`);
    expect(await broken.text()).toBe('handled: selector bug');
    b.abort();
    await b.response;
    await until(() => policy.queued === 0, 'b left the queue');
    held[0]!.send('A');
    expect(await (await a).text()).toBe('A');
    await allClosed();
    expect(policy.inFlight).toBe(0);
    expect(held).toHaveLength(1);
  });
});

describe('fastifyBulkhead', () => {
  it('holds a slot per request until the reply closes, queues, refuses 503 and lets a queued client leave', async () => {
    const policy = bulkhead({ maxConcurrent: 1, maxQueue: 1 });
    const app = Fastify({ forceCloseConnections: true });
    await app.register(fastifyBulkhead, { bulkhead: policy, random: () => 0 });
    const finish: (() => void)[] = [];
    app.get('/slow', async () => {
      await new Promise<void>((resolve) => finish.push(resolve));
      return 'slow';
    });
    app.get('/healthz', async () => 'up');
    await app.register(async (child) => {
      child.get('/child', async () => 'child');
    });
    const { url, allClosed } = await startFastify(app);

    const { a, b, c } = await runQueueRefuse(url, policy, () => finish.length === 1, '/child'); // b: a child-plugin route
    expect(c.status).toBe(503);
    expect(c.headers.get('content-type')).toMatch(/^application\/problem\+json/);
    expect(c.headers.get('retry-after')).toBe('1');
    expect(await c.json()).toMatchObject({ code: 'ERR_BULKHEAD_FULL', instance: '/slow' });
    expect(await (await fetch(`${url}/healthz`)).text()).toBe('up');
    b.abort();
    await b.response;
    await until(() => policy.queued === 0, 'b left the queue');
    finish[0]!();
    expect(await (await a).text()).toBe('slow');
    await allClosed();
    expect(policy.inFlight).toBe(0);
    expect(finish).toHaveLength(1);
  });

  it('an async skip is waited for: true exempts, false holds the request; a rejection is the error reply', async () => {
    const policy = bulkhead({ maxConcurrent: 1, maxQueue: 0 });
    const finish: (() => void)[] = [];
    const { url, allClosed } = await fastifyWithSkipRoutes(
      (app) => app.register(fastifyBulkhead, { bulkhead: policy, skip: asyncSkip }),
      (app) =>
        app.get('/slow', async () => {
          await new Promise<void>((resolve) => finish.push(resolve));
          return 'slow';
        }),
    );
    const a = fetch(`${url}/slow`);
    await until(() => finish.length === 1, 'a runs: the bulkhead is full');
    await expectAsyncSkipHonoured(url, 503);
    finish[0]!();
    expect(await (await a).text()).toBe('slow');
    await allClosed();
    expect(policy.inFlight).toBe(0);
  });

  it('bad options fail the registration with the TypeError', async () => {
    const app = Fastify();
    app.register(fastifyBulkhead, { bulkhead: 'big' as never });
    await expect(app.ready()).rejects.toThrow(/"bulkhead" to be a policy/);
    await app.close();
    const misspelt = Fastify();
    misspelt.register(fastifyBulkhead, {
      bulkhead: bulkhead({ maxConcurrent: 1, maxQueue: 0 }),
      skp: () => true,
    } as never);
    await expect(misspelt.ready()).rejects.toThrow(/unknown option "skp" in fastifyBulkhead options/);
    await misspelt.close();
  });

  it('shows in Fastify as bulwark-bulkhead', () => {
    expect((fastifyBulkhead as unknown as Record<symbol, unknown>)[Symbol.for('fastify.display-name')]).toBe(
      'bulwark-bulkhead',
    );
  });
});
