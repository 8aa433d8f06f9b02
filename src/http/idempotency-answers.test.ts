/**
 * The idempotency middleware's own answers, field by field (RFC 9457: the `detail` a client
 * reads, the `title`, the `instance`), the jitter of its store-outage `Retry-After`, its defaults,
 * and the option errors that name the option.
 */
import { createServer, type IncomingMessage } from 'node:http';
import { describe, expect, it } from 'vitest';
import { listen } from '../../test/support/http-server.js';
import { until } from '../../test/support/until.js';
import { StoreUnavailableError } from '../core/errors.js';
import { idempotency } from '../idempotency/idempotency.js';
import { idempotencyMiddleware } from './idempotency.js';
import type { IdempotencyHttpOptions } from './idempotency-options.js';
import { refusalReply } from './idempotency-replies.js';

async function serve(options: Partial<IdempotencyHttpOptions<IncomingMessage>> = {}) {
  let runs = 0;
  let release: (() => void) | undefined;
  const mw = idempotencyMiddleware({ idempotency: idempotency(), ...options });
  const server = createServer((req, res) =>
    mw(req, res, (error?: unknown) => {
      if (error !== undefined) {
        res.writeHead(500).end();
        return;
      }
      runs += 1;
      if (req.url === '/slow') release = () => res.writeHead(201).end();
      else res.writeHead(201).end();
    }),
  );
  return { url: (await listen(server)).url, runs: () => runs, release: () => release?.() };
}

const post = (url: string, key: string | undefined, body = '{}', method = 'POST') =>
  fetch(url, { method, headers: key === undefined ? {} : { 'idempotency-key': key }, body });

async function problem(response: Response, status: number) {
  expect(response.status).toBe(status);
  expect(response.headers.get('content-type')).toBe('application/problem+json');
  return (await response.json()) as Record<string, unknown>;
}

describe('the answers', () => {
  it('400 for a missing key says what is missing, for which request', async () => {
    const { url } = await serve();
    expect(await problem(await post(`${url}/orders?page=1`, undefined), 400)).toMatchObject({
      code: 'ERR_IDEMPOTENCY_KEY_MISSING',
      kind: 'invalid',
      detail: 'this request requires an Idempotency-Key header',
      instance: '/orders?page=1',
    });
  });

  it('400 for a malformed key says why, for which request', async () => {
    const { url } = await serve();
    expect(await problem(await post(`${url}/orders`, '"abc'), 400)).toMatchObject({
      code: 'ERR_IDEMPOTENCY_KEY_INVALID',
      detail: 'the Idempotency-Key string is not terminated',
      instance: '/orders',
    });
  });

  it('413 names the limit, with its own title, for which request', async () => {
    const { url, runs } = await serve({ maxBodyBytes: 8 });
    expect(await problem(await post(`${url}/orders`, 'k', '{"pad":"xxxxxx"}'), 413)).toMatchObject({
      status: 413,
      title: 'Content too large',
      code: 'ERR_BODY_TOO_LARGE',
      kind: 'invalid',
      detail: 'the request body is larger than 8 bytes',
      instance: '/orders',
    });
    expect(runs()).toBe(0);
  });

  it('422 for a key reused with another payload, with its own title, for which request', async () => {
    const { url } = await serve();
    expect((await post(`${url}/orders`, 'k', '{"amount":1}')).status).toBe(201);
    expect(await problem(await post(`${url}/orders`, 'k', '{"amount":2}'), 422)).toMatchObject({
      status: 422,
      title: 'Unprocessable content',
      code: 'ERR_IDEMPOTENCY_CONFLICT',
      instance: '/orders',
    });
  });

  it('409 while the key is in flight, for which request', async () => {
    const { url, runs, release } = await serve({ idempotency: idempotency({ wait: false }) });
    const first = post(`${url}/slow`, 'k');
    await until(() => runs() === 1, 'the first request runs');
    expect(await problem(await post(`${url}/slow`, 'k'), 409)).toMatchObject({
      code: 'ERR_IDEMPOTENCY_IN_PROGRESS',
      instance: '/slow',
    });
    release();
    expect((await first).status).toBe(201);
  });

  it('503 for a store outage spreads its Retry-After over 1–2 s', () => {
    const outage = new StoreUnavailableError('idempotency store: connect ECONNREFUSED');
    const seen = new Set<string>();
    // Each answer draws its jitter: 64 draws all alike would happen once in 2^63.
    for (let i = 0; i < 64; i++) {
      const reply = refusalReply(outage, '/orders')!;
      expect(reply.status).toBe(503);
      seen.add(reply.headers['retry-after']!);
    }
    expect([...seen].sort()).toEqual(['1', '2']);
  });
});

describe('the defaults', () => {
  it('deduplicates PATCH as well as POST: a PATCH without a key is refused', async () => {
    const { url, runs } = await serve();
    expect((await post(`${url}/orders/1`, undefined, '{}', 'PATCH')).status).toBe(400);
    expect((await post(`${url}/orders/1`, 'p', '{}', 'PATCH')).status).toBe(201);
    const replay = await post(`${url}/orders/1`, 'p', '{}', 'PATCH');
    expect(replay.headers.get('idempotent-replayed')).toBe('true');
    expect(runs()).toBe(1);
  });
});

describe('the option errors', () => {
  it.each([
    ['null', null, 'null'],
    ['the factory, not an instance', idempotency, 'a function'],
    ['an object without run', { execute: () => {} }, 'an object'],
  ])('refuses an idempotency that is %s', (_what, value, shown) => {
    expect(() => idempotencyMiddleware({ idempotency: value as never })).toThrow(
      `expected "idempotency" to be an idempotency() instance (with run), got ${shown}`,
    );
  });

  it('refuses a method that is not a string', () => {
    expect(() => idempotencyMiddleware({ idempotency: idempotency(), methods: [5 as never] })).toThrow(
      'expected "methods" to hold HTTP tokens (like "POST"), got 5',
    );
  });

  it.each([
    'Set-Cookie',
    'date',
    'content-length',
    'transfer-encoding',
    'connection',
    'keep-alive',
    'content-encoding',
    'Idempotent-Replayed',
  ])('refuses to replay %s', (header) => {
    expect(() => idempotencyMiddleware({ idempotency: idempotency(), replayHeaders: [header] })).toThrow(
      `expected "replayHeaders" not to hold "${header.toLowerCase()}": it is never replayed`,
    );
  });
});
