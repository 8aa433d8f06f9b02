/**
 * The request body the idempotency adapters fingerprint, bounded by `maxBodyBytes`. Fastify has
 * parsed it already (`request.body`). On node:http and Express a body parser that ran before the
 * middleware has set `req.body`; otherwise the middleware reads the raw body itself, counting bytes
 * as they arrive, and hands the same bytes on as `req.body` (a `Buffer`): the stream is consumed,
 * so handlers after it read `req.body`, not the stream (docs/http.md, "Idempotency keys").
 */
import type { IncomingMessage } from 'node:http';

/** The body as read: its value (`undefined` when the request has none), or over the limit. */
export type BodyRead = { readonly status: 'read'; readonly body: unknown } | { readonly status: 'too-large' };

const tooLarge: BodyRead = { status: 'too-large' };
const noBody: BodyRead = { status: 'read', body: undefined };

/** The `Content-Length` the client declared, or `undefined` when it sent none (or a bad one). */
function declaredLength(request: IncomingMessage): number | undefined {
  const header = request.headers['content-length'];
  // No header: String(undefined) is "undefined", not digits either.
  if (!/^\d+$/.test(String(header))) return undefined;
  return Number(header);
}

/** The size of a parsed body when it is bytes or text; `undefined` for a parsed object (its parser limited it). */
function sizeOf(body: unknown): number | undefined {
  if (typeof body === 'string') return Buffer.byteLength(body);
  if (body instanceof Uint8Array) return body.byteLength;
  return undefined;
}

/**
 * A body a framework already parsed (Fastify's `request.body`, Express's after a body parser):
 * over the limit when its declared `Content-Length` or its own size in bytes is over
 * `maxBodyBytes`.
 */
export function parsedBody(request: IncomingMessage, body: unknown, maxBodyBytes: number): BodyRead {
  const declared = declaredLength(request);
  const size = sizeOf(body);
  // No Content-Length or no size of its own (a parsed object) says nothing: 0.
  if ((declared ?? 0) > maxBodyBytes || (size ?? 0) > maxBodyBytes) return tooLarge;
  return { status: 'read', body };
}

/**
 * The body of a node:http / Express request. `req.body` set (a parser ran): {@link parsedBody}. No
 * body (neither `Content-Length` nor `Transfer-Encoding`, or `Content-Length: 0`): `undefined`, the
 * stream untouched. A declared `Content-Length` over the limit: too large at once, nothing read.
 * Otherwise the stream is read, and refused as too large the moment it passes `maxBodyBytes` (it
 * is paused there; the 413 answer closes the connection); the whole body is set as `req.body` (a
 * `Buffer`, also when empty) and resolved. Rejects when the stream fails or the client leaves
 * before the body's end.
 */
export function nodeBody(
  request: IncomingMessage & { body?: unknown },
  maxBodyBytes: number,
): BodyRead | Promise<BodyRead> {
  if (request.body !== undefined) return parsedBody(request, request.body, maxBodyBytes);
  const declared = declaredLength(request);
  const chunked = request.headers['transfer-encoding'] !== undefined;
  if (!chunked && (declared === undefined || declared === 0)) return noBody;
  if ((declared ?? 0) > maxBodyBytes) return tooLarge;
  // Someone consumed the stream without setting req.body: there is nothing left to read.
  if (request.readableEnded) return noBody;
  return new Promise<BodyRead>((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    const cleanup = (): void => {
      request.off('data', onData);
      request.off('end', onEnd);
      request.off('error', onError);
      request.off('close', onClose);
    };
    const onData = (chunk: Buffer): void => {
      size += chunk.byteLength;
      if (size > maxBodyBytes) {
        cleanup();
        request.pause();
        resolve(tooLarge);
        return;
      }
      chunks.push(chunk);
    };
    const onEnd = (): void => {
      cleanup();
      const body = Buffer.concat(chunks, size);
      request.body = body;
      resolve({ status: 'read', body });
    };
    const onError = (error: unknown): void => {
      cleanup();
      reject(error);
    };
    const onClose = (): void => {
      cleanup();
      reject(new Error('the client closed the connection before sending the whole request body'));
    };
    request.on('data', onData);
    request.on('end', onEnd);
    request.on('error', onError);
    request.on('close', onClose);
  });
}
