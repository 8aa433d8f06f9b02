import { createServer, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { expectProblem } from '../../test/support/problem-assertions.js';
import { ResilienceError, StoreUnavailableError, TimeoutError } from '../core/errors.js';
import { problemReply, problemResponse, writeProblem } from './problem-response.js';

const servers: ReturnType<typeof createServer>[] = [];
afterEach(async () => {
  await Promise.all(servers.splice(0).map((s) => new Promise((resolve) => s.close(resolve))));
});

describe('problemReply', () => {
  it('maps the kind to the status and sets Retry-After in whole seconds, rounded up', () => {
    const limited = new ResilienceError('slow down', {
      code: 'ERR_RATE_LIMITED',
      kind: 'rate_limited',
      retryAfterMs: 1_200,
    });
    const reply = problemReply(limited, { instance: '/orders' });
    expect(reply.status).toBe(429);
    expect(reply.headers).toEqual({ 'content-type': 'application/problem+json', 'retry-after': '2' });
    expect(reply.body).toMatchObject({
      status: 429,
      kind: 'rate_limited',
      code: 'ERR_RATE_LIMITED',
      instance: '/orders',
    });
  });

  it('sends no Retry-After when the error gives none, and merges extra headers', () => {
    const reply = problemReply(new TimeoutError(100), { headers: { 'x-extra': '1' } });
    expect(reply.status).toBe(504);
    expect(reply.headers).toEqual({ 'content-type': 'application/problem+json', 'x-extra': '1' });
  });
});

describe('problemReply: Retry-After sanity', () => {
  it('clamps an upstream Retry-After to 24 h instead of echoing it', () => {
    const upstream = Object.assign(new Error('upstream busy'), {
      response: { status: 503, headers: { 'retry-after': '10000000000000000000000' } },
    });
    const reply = problemReply(upstream);
    expect(reply.status).toBe(503);
    expect(reply.headers['retry-after']).toBe('86400');
    expect(reply.body.retryAfterMs).toBe(86_400_000);
    const forever = new ResilienceError('x', { code: 'ERR_X', kind: 'unavailable', retryAfterMs: Infinity });
    expect(problemReply(forever).headers['retry-after']).toBe('86400');
  });

  it('bodies carry whole milliseconds that agree with the header', () => {
    const limited = new ResilienceError('slow down', {
      code: 'ERR_RATE_LIMITED',
      kind: 'rate_limited',
      retryAfterMs: 9_999.738,
    });
    const reply = problemReply(limited);
    expect(reply.headers['retry-after']).toBe('10');
    expect(reply.body.retryAfterMs).toBe(10_000);
    expect(Number.isInteger(reply.body.retryAfterMs)).toBe(true);
  });

  it('every 503 and 429 carries a Retry-After, the error’s or retryAfterMs (default 1 s)', () => {
    const down = new StoreUnavailableError('rate-limit store failed: ECONNREFUSED');
    const reply = problemReply(down);
    expect(reply.status).toBe(503);
    expect(reply.headers['retry-after']).toBe('1');
    expect(reply.body.retryAfterMs).toBe(1_000);
    const limited = new ResilienceError('no', { code: 'ERR_L', kind: 'rate_limited' });
    expect(problemReply(limited, { retryAfterMs: 30_000 }).headers['retry-after']).toBe('30');
    // Not for the statuses where Retry-After means nothing.
    expect(problemReply(new TimeoutError(5)).headers).not.toHaveProperty('retry-after');
    expect(problemReply(new Error('bug')).headers).not.toHaveProperty('retry-after');
  });

  it('refuses an unknown option, naming problemReply options and the option meant', () => {
    expect(() => problemReply(new Error('x'), { instanse: '/x' } as never)).toThrow(
      new TypeError('unknown option "instanse" in problemReply options; did you mean "instance"?'),
    );
  });

  it('refuses a bad retryAfterMs with a TypeError', () => {
    expect(() => problemReply(new Error('x'), { retryAfterMs: -1 })).toThrow(/"retryAfterMs"/);
    expect(() => problemReply(new Error('x'), { retryAfterMs: Number.NaN })).toThrow(TypeError);
  });
});

describe('problemResponse', () => {
  it('answers a real node:http request with status, headers and a problem+json body', async () => {
    const server = createServer((_req, res) => {
      problemResponse(
        res,
        new ResilienceError('busy', { code: 'ERR_BUSY', kind: 'overloaded', retryAfterMs: 10, expose: true }),
      );
    });
    servers.push(server);
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const res = await fetch(`http://127.0.0.1:${(server.address() as AddressInfo).port}/x`);
    await expectProblem(res, {
      status: 503,
      retryAfter: '1',
      body: { type: 'urn:bulwark:problem:overloaded', detail: 'busy' },
    });
  });

  /** A response whose headers were already sent, recording what is called on it. */
  function sentResponse() {
    const calls: string[] = [];
    const res = {
      headersSent: true,
      writeHead: () => void calls.push('writeHead'),
      end: (body?: unknown) => void calls.push(body === undefined ? 'end' : 'end with a body'),
    } as unknown as ServerResponse;
    return { res, calls };
  }

  it('once the headers were sent it only ends the response, and looks at nothing else (not even bad options)', () => {
    const { res, calls } = sentResponse();
    problemResponse(res, new Error('late failure'), { retryAfterMs: -1 });
    expect(calls).toEqual(['end']);
  });

  it('writeProblem only ends a response whose headers were already sent', () => {
    const { res, calls } = sentResponse();
    writeProblem(res, problemReply(new Error('late failure')));
    expect(calls).toEqual(['end']);
  });

  it('only ends a response whose headers were already sent', async () => {
    const server = createServer((_req, res) => {
      res.writeHead(200);
      res.write('partial');
      problemResponse(res, new Error('late failure'));
    });
    servers.push(server);
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const res = await fetch(`http://127.0.0.1:${(server.address() as AddressInfo).port}/`);
    expect(res.status).toBe(200);
    expect(await res.text()).toBe('partial');
  });
});
