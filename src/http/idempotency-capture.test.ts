/**
 * What the idempotency middleware records of a route's response and replays (idempotency-capture.ts):
 * every way a route can give its status and headers to node:http, every way it can write its
 * bytes, which statuses are stored, and which headers (`replayHeaders`) come back.
 */
import { createServer, type IncomingMessage, type OutgoingHttpHeaders, type ServerResponse } from 'node:http';
import { describe, expect, it } from 'vitest';
import { listen } from '../../test/support/http-server.js';
import { idempotency } from '../idempotency/idempotency.js';
import { idempotencyMiddleware } from './idempotency.js';
import { isStorableStatus } from './idempotency-capture.js';
import { DEFAULT_REPLAY_HEADERS, type IdempotencyHttpOptions } from './idempotency-options.js';

type Route = (res: ServerResponse) => void;

/** A node:http server: the middleware, then `route` (counted). */
async function serve(route: Route, options: Partial<IdempotencyHttpOptions<IncomingMessage>> = {}) {
  let runs = 0;
  const mw = idempotencyMiddleware({ idempotency: idempotency(), ...options });
  const server = createServer((req, res) =>
    mw(req, res, (error?: unknown) => {
      if (error !== undefined) res.writeHead(500).end();
      else {
        runs += 1;
        route(res);
      }
    }),
  );
  return { url: (await listen(server)).url, runs: () => runs };
}

const post = (url: string, key = 'k') => fetch(url, { method: 'POST', headers: { 'idempotency-key': key } });

/** The first response and its replay, both read in full. */
async function twice(url: string) {
  const read = async (response: Response) => ({ response, body: await response.text() });
  const first = await read(await post(url));
  const replay = await read(await post(url));
  expect(replay.response.headers.get('idempotent-replayed')).toBe('true');
  return { first, replay };
}

describe('the status and headers recorded', () => {
  it.each<[string, Route]>([
    ['a status message', (res) => res.writeHead(201, 'Made', { location: '/a', etag: '"1"' }).end('x')],
    ['a flat array', (res) => res.writeHead(201, ['Location', '/a', 'ETag', '"1"']).end('x')],
    [
      'a nested array',
      (res) =>
        res
          .writeHead(201, [
            ['Location', '/a'],
            ['ETag', '"1"'],
          ] as unknown as OutgoingHttpHeaders)
          .end('x'),
    ],
    [
      'setHeader, then null',
      (res) => {
        res.setHeader('Location', '/a');
        res.setHeader('ETag', '"1"');
        res.writeHead(201, null as unknown as OutgoingHttpHeaders).end('x');
      },
    ],
    [
      'setHeader and statusCode, written by end()',
      (res) => {
        res.statusCode = 201;
        res.setHeader('Location', '/a');
        res.setHeader('ETag', '"1"');
        res.end('x');
      },
    ],
  ])('writeHead given %s', async (_what, route) => {
    const { url, runs } = await serve(route);
    const { replay } = await twice(url);
    expect(replay.response.status).toBe(201);
    expect(replay.response.headers.get('location')).toBe('/a');
    expect(replay.response.headers.get('etag')).toBe('"1"');
    expect(replay.body).toBe('x');
    expect(runs()).toBe(1);
  });

  it('replays every default replay header, and no other', async () => {
    const sent: Record<string, string> = {
      'content-type': 'text/plain',
      'content-language': 'fr',
      'content-location': '/orders/1',
      'content-disposition': 'attachment; filename="order.txt"',
      location: '/orders/1',
      etag: '"v1"',
      'last-modified': 'Tue, 01 Dec 2026 10:00:00 GMT',
      link: '</orders>; rel="collection"',
      'cache-control': 'no-store',
    };
    expect([...DEFAULT_REPLAY_HEADERS].sort()).toEqual(Object.keys(sent).sort());
    const { url } = await serve((res) => res.writeHead(201, { ...sent, 'x-request-id': 'r-1' }).end('x'));
    const { replay } = await twice(url);
    for (const [name, value] of Object.entries(sent))
      expect(replay.response.headers.get(name), name).toBe(value);
    expect(replay.response.headers.get('x-request-id')).toBeNull();
  });

  it('replays the replayHeaders given (any case), and only those', async () => {
    const { url } = await serve(
      (res) => res.writeHead(201, { 'X-Request-Id': 'r-1', 'content-type': 'text/plain' }).end('x'),
      { replayHeaders: ['x-REQUEST-id'] },
    );
    const { replay } = await twice(url);
    expect(replay.response.headers.get('x-request-id')).toBe('r-1');
    expect(replay.response.headers.get('content-type')).toBeNull();
  });

  it('replays a repeated header as every one of its values', async () => {
    const { url } = await serve((res) => {
      res.setHeader('link', ['</a>; rel="a"', '</b>; rel="b"']);
      res.end('x');
    });
    const { replay } = await twice(url);
    expect(replay.response.headers.get('link')).toBe('</a>; rel="a", </b>; rel="b"');
  });
});

describe('the bytes recorded', () => {
  it('records text in the encoding it was written in, and bytes as they are', async () => {
    const { url } = await serve((res) => {
      res.write('68c3a9', 'hex'); // "hé"
      res.write('l', () => {}); // a callback, no encoding: utf8
      res.write(Buffer.from('l'));
      res.end('bw==', 'base64'); // "o"
    });
    const { first, replay } = await twice(url);
    expect(first.body).toBe('héllo');
    expect(replay.body).toBe('héllo');
  });

  it('records nothing twice: end() with only a callback, after the writes', async () => {
    const { url } = await serve((res) => {
      res.write('once');
      res.end(() => {});
    });
    const { replay } = await twice(url);
    expect(replay.body).toBe('once');
  });
});

describe('the statuses stored', () => {
  it('stores a 2xx, 3xx or 4xx (but 408, 409, 425, 429); never a 1xx or a 5xx', () => {
    const stored = [100, 199, 200, 204, 301, 399, 400, 404, 408, 409, 422, 425, 429, 451, 499, 500, 503, 599]
      .filter(isStorableStatus)
      .map(String);
    expect(stored).toEqual(['200', '204', '301', '399', '400', '404', '422', '451', '499']);
  });

  it('stores a 499: the retry is a replay', async () => {
    const { url, runs } = await serve((res) => res.writeHead(499).end('client closed'));
    const { replay } = await twice(url);
    expect(replay.response.status).toBe(499);
    expect(replay.body).toBe('client closed');
    expect(runs()).toBe(1);
  });
});
