/**
 * The body the idempotency adapters fingerprint (idempotency-body.ts), on a stand-in request
 * stream: what counts towards `maxBodyBytes`, when the stream is read or left alone, what becomes
 * `req.body`, and how a failed or abandoned upload ends the read.
 */
import type { IncomingMessage } from 'node:http';
import { Readable } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { nodeBody, parsedBody } from './idempotency-body.js';

type Request = IncomingMessage & { body?: unknown };

/** A request stream with `headers`; its bytes are pushed by the test. */
function request(headers: Record<string, string> = {}): Request {
  return Object.assign(new Readable({ read() {} }), { headers }) as unknown as Request;
}

/** How many listeners the body read may have left on `req`. */
const listeners = (req: Request) =>
  ['data', 'end', 'error', 'close'].map((event) => req.listenerCount(event)).reduce((a, b) => a + b);

describe('parsedBody: a body a framework parsed', () => {
  it('counts a string in bytes, not characters: exactly maxBodyBytes fits, one more is too large', () => {
    expect(parsedBody(request(), 'héllo', 6)).toStrictEqual({ status: 'read', body: 'héllo' });
    expect(parsedBody(request(), 'héllo', 5)).toStrictEqual({ status: 'too-large' });
  });

  it('counts bytes (a Buffer from a raw parser) the same way', () => {
    const bytes = Buffer.from([1, 2, 3, 4]);
    expect(parsedBody(request(), bytes, 4)).toStrictEqual({ status: 'read', body: bytes });
    expect(parsedBody(request(), bytes, 3)).toStrictEqual({ status: 'too-large' });
  });

  it('refuses a declared Content-Length over the limit, whatever the parsed value', () => {
    const declared = (length: string) => request({ 'content-length': length });
    expect(parsedBody(declared('11'), { a: 1 }, 10)).toStrictEqual({ status: 'too-large' });
    expect(parsedBody(declared('10'), { a: 1 }, 10)).toStrictEqual({ status: 'read', body: { a: 1 } });
  });

  it('takes a parsed object as its parser limited it, and a JSON null as a body', () => {
    const big = { pad: 'x'.repeat(100) };
    expect(parsedBody(request(), big, 10)).toStrictEqual({ status: 'read', body: big });
    expect(parsedBody(request(), null, 10)).toStrictEqual({ status: 'read', body: null });
    expect(parsedBody(request(), undefined, 10)).toStrictEqual({ status: 'read', body: undefined });
  });

  it.each([' 99', '99 ', '1e3', '0x99', '-99', ''])(
    'ignores a Content-Length that is not digits only (%j)',
    (length) => {
      const body = { a: 1 };
      expect(parsedBody(request({ 'content-length': length }), body, 10)).toStrictEqual({
        status: 'read',
        body,
      });
    },
  );
});

describe('nodeBody: the raw body of a node:http request', () => {
  it.each([
    ['neither Content-Length nor Transfer-Encoding', {}],
    ['Content-Length: 0', { 'content-length': '0' }],
  ])('has no body with %s: answered at once, the stream left unread', (_what, headers) => {
    const req = request(headers);
    expect(nodeBody(req, 10)).toStrictEqual({ status: 'read', body: undefined });
    expect(req.body).toBeUndefined();
    expect(req.readableFlowing).toBeNull();
  });

  it('refuses a declared Content-Length over the limit at once, reading nothing', () => {
    const req = request({ 'content-length': '11' });
    expect(nodeBody(req, 10)).toStrictEqual({ status: 'too-large' });
    expect(req.readableFlowing).toBeNull();
    expect(listeners(req)).toBe(0);
  });

  it('reads a body of exactly the declared limit, and hands the bytes on as req.body', async () => {
    const req = request({ 'content-length': '10' });
    const read = nodeBody(req, 10);
    req.push(Buffer.from('01234'));
    req.push(Buffer.from('56789'));
    req.push(null);
    const body = Buffer.from('0123456789');
    expect(await read).toStrictEqual({ status: 'read', body });
    expect(req.body).toStrictEqual(body);
    expect(listeners(req)).toBe(0);
  });

  it('reads a chunked body, an empty one as an empty Buffer', async () => {
    const req = request({ 'transfer-encoding': 'chunked' });
    const read = nodeBody(req, 10);
    req.push(null);
    expect(await read).toStrictEqual({ status: 'read', body: Buffer.alloc(0) });
    expect(req.body).toStrictEqual(Buffer.alloc(0));
  });

  it('refuses a streamed body the moment it passes the limit, and pauses the stream there', async () => {
    const req = request({ 'transfer-encoding': 'chunked' });
    const read = nodeBody(req, 10);
    req.push(Buffer.alloc(6));
    req.push(Buffer.alloc(5));
    expect(await read).toStrictEqual({ status: 'too-large' });
    expect(req.isPaused()).toBe(true);
    expect(listeners(req)).toBe(0);
    expect(req.body).toBeUndefined();
  });

  it('takes req.body from a parser that ran before, without reading the stream', () => {
    const req = request({ 'content-length': '5' });
    req.body = 'héllo';
    expect(nodeBody(req, 5)).toStrictEqual({ status: 'too-large' });
    expect(nodeBody(req, 6)).toStrictEqual({ status: 'read', body: 'héllo' });
    expect(req.readableFlowing).toBeNull();
  });

  it('has nothing left to read when someone consumed the stream without setting req.body', async () => {
    const req = request({ 'content-length': '2' });
    req.push(Buffer.from('{}'));
    req.push(null);
    req.resume();
    await new Promise((resolve) => req.once('end', resolve));
    expect(nodeBody(req, 10)).toStrictEqual({ status: 'read', body: undefined });
  });

  it('rejects with the stream’s error', async () => {
    const req = request({ 'content-length': '10' });
    const read = nodeBody(req, 10);
    req.destroy(new Error('bad chunk encoding'));
    await expect(read).rejects.toThrow('bad chunk encoding');
    expect(listeners(req)).toBe(0);
  });

  it('rejects when the client leaves before the end of the body', async () => {
    const req = request({ 'content-length': '10' });
    const read = nodeBody(req, 10);
    req.push(Buffer.from('01234'));
    req.destroy();
    await expect(read).rejects.toThrow(
      'the client closed the connection before sending the whole request body',
    );
    expect(listeners(req)).toBe(0);
  });
});
