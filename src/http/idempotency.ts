/**
 * Idempotency keys at the HTTP edge (draft-ietf-httpapi-idempotency-key-header): a connect-style
 * middleware for node:http and Express. The Fastify plugin is in idempotency-fastify.ts; both run
 * the same flow (idempotency-flow.ts) and keep no pattern logic: `idempotency()` claims, leases,
 * fingerprints and stores, the adapter maps its decisions to HTTP.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import { connectMiddleware, type Middleware } from './adapter.js';
import { nodeBody } from './idempotency-body.js';
import { bufferOf, replayHeadersOf } from './idempotency-capture.js';
import { type Framework, idempotentRequests } from './idempotency-flow.js';
import { type IdempotencyHttpOptions, readIdempotencyHttpOptions } from './idempotency-options.js';

const node: Framework<IncomingMessage> = {
  raw: (request) => request,
  body: nodeBody,
  closeOnTooLarge: true,
  replay(reply, stored) {
    const res = reply as ServerResponse;
    if (res.headersSent) {
      res.end();
      return;
    }
    res.writeHead(stored.status, replayHeadersOf(stored) as Record<string, string | string[]>);
    res.end(bufferOf(stored));
  },
};

/**
 * Idempotency keys for node:http and Express: `(req, res, next)`. A `POST` or `PATCH` (`methods`)
 * carrying `Idempotency-Key` runs its route once per key; every retry with the same key and the same
 * payload gets the stored response (status, `replayHeaders`, body bytes) with
 * `Idempotent-Replayed: true`, without the route running again.
 *
 * - The key is the header's sf-string (`"abc"`) or bare token (`abc`), the same key either way,
 *   scoped by `tenant(req)`, the method and the path (no query): two tenants or two routes never
 *   share one. The fingerprint is the method, path and body.
 * - Answers (RFC 9457 problem+json): no key where `required` 400 (`ERR_IDEMPOTENCY_KEY_MISSING`); a
 *   malformed key (empty, over 255 characters, a control character) 400
 *   (`ERR_IDEMPOTENCY_KEY_INVALID`); a body over `maxBodyBytes` 413 before the route runs; the key
 *   in flight 409 with `Retry-After` (with `wait: false`, or after `maxWaitMs`); the key reused
 *   with another payload 422; the store down 503 with a `Retry-After` of 1–2 s.
 * - Stored: 2xx, 3xx and 4xx responses except 408, 409, 425 and 429. Never a 5xx: the key is
 *   released and a retry runs the route again.
 * - The body: `req.body` when a body parser ran before (put it first); otherwise the raw body is
 *   read (bounded) and set as `req.body` (a `Buffer`): handlers after the middleware read `req.body`,
 *   not the stream.
 * - A client that leaves: before the route ran, nothing runs; while the route runs, its response
 *   is still stored when the route ends it (for the client's retry), and the key is released if it
 *   has not ended `abandonAfterMs` after the close.
 *
 * A throwing or rejecting `tenant` or `skip`, a bad tenant, or an unexpected error goes to
 * `next(error)` (500). Throws a `TypeError` at once for a missing, bad or unknown option.
 *
 * @example
 * const payments = idempotency({ store: redisStores(redis).idempotency });
 * app.use(express.json());
 * app.use(idempotencyMiddleware({ idempotency: payments, tenant: (req: Request) => req.get('x-account') ?? '' }));
 * app.post('/payments', async (req, res) => res.status(201).json(await charge(req.body)));
 */
export function idempotencyMiddleware<Req extends IncomingMessage = IncomingMessage>(
  options: IdempotencyHttpOptions<Req>,
): Middleware<Req> {
  const o = readIdempotencyHttpOptions(options, 'idempotencyMiddleware options');
  return connectMiddleware(idempotentRequests<Req>(o, node as Framework<Req>));
}
