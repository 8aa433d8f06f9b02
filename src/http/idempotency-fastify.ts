/**
 * `idempotencyMiddleware` as a Fastify plugin, built by the kit's `fastifyPlugin`. Unlike the other
 * adapters' plugins it hooks `preHandler`, not `onRequest`: the fingerprint needs the body, which
 * Fastify has parsed by then. The response is recorded on `reply.raw` as the middleware records
 * it, so every payload Fastify sends (an object, a string, a `Buffer`, a stream) is stored alike.
 */
import { fastifyPlugin } from './adapter.js';
import type { FastifyPluginLike, FastifyReplyLike, FastifyRequestLike } from './fastify-types.js';
import { parsedBody } from './idempotency-body.js';
import { bufferOf, replayHeadersOf } from './idempotency-capture.js';
import { type Framework, idempotentRequests } from './idempotency-flow.js';
import { type IdempotencyHttpOptions, readIdempotencyHttpOptions } from './idempotency-options.js';

const fastify: Framework<FastifyRequestLike> = {
  raw: (request) => request.raw,
  body: (request, maxBodyBytes) =>
    parsedBody(request.raw, (request as { readonly body?: unknown }).body, maxBodyBytes),
  closeOnTooLarge: false,
  replay(reply, stored) {
    (reply as FastifyReplyLike)
      .code(stored.status)
      .headers(replayHeadersOf(stored) as Record<string, string>)
      .send(bufferOf(stored));
  },
};

/**
 * The Fastify form of `idempotencyMiddleware`, with the same options and answers; `tenant` and
 * `skip` receive the `FastifyRequest`. It adds a `preHandler` hook (the body is parsed by then: a
 * `Buffer` body, from a `parseAs: 'buffer'` parser, is fingerprinted as bytes). Like every bulwark
 * plugin it is not encapsulated: registered at the root it covers every route; inside a scoped
 * plugin, only that scope. Fastify's own `bodyLimit` (1 MiB) answers 413 before this plugin sees a
 * larger body. A bad option fails the registration (`app.ready()` rejects with the `TypeError`).
 * Fastify shows it as `bulwark-idempotency`.
 *
 * @example
 * await app.register(fastifyIdempotency, { idempotency: payments, tenant: (request) => accountOf(request) });
 * app.post('/payments', async (request, reply) => reply.code(201).send(await charge(request.body)));
 */
export const fastifyIdempotency: FastifyPluginLike<IdempotencyHttpOptions<FastifyRequestLike>> =
  fastifyPlugin(
    'fastifyIdempotency',
    (options: IdempotencyHttpOptions<FastifyRequestLike> | undefined, what) =>
      idempotentRequests(readIdempotencyHttpOptions(options, what), fastify),
    'preHandler',
  );
