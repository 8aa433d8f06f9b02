/**
 * A bulkhead at the HTTP edge: a connect-style middleware (node:http, Express) and a Fastify plugin
 * that hold each request in a policy (normally `bulkhead()`) from arrival until its response
 * closes. Built on the HTTP kit (adapter.ts) and uses only the public `Policy` contract, so any
 * policy works; no bulkhead logic lives here.
 */
import type { IncomingMessage } from 'node:http';
import type { Policy } from '../core/policy.js';
import { required, type Schema } from '../core/read-options.js';
import { connectMiddleware, fastifyPlugin, type Middleware, type RequestHandler } from './adapter.js';
import { readAdapterOptions } from './adapter-options.js';
import { asking, type Continuation } from './ask.js';
import type { FastifyPluginLike, FastifyRequestLike } from './fastify-types.js';
import { heldFor, holdSlot, isPolicy } from './hold-slot.js';
import { type OverloadReplyOptions, overloadReplier, overloadReplyFields } from './overload-reply.js';
import { problemResponse } from './problem-response.js';
import { isHealthCheck, type Skip, skipField, skipping } from './skip.js';

/** Options of {@link bulkheadMiddleware} and {@link fastifyBulkhead}. */
export interface BulkheadMiddlewareOptions<Req = IncomingMessage> extends OverloadReplyOptions {
  /**
   * The policy every request is held in (a `bulkhead({ maxConcurrent, maxQueue, queueTimeoutMs })`),
   * or a function choosing one per request, for tiers (critical / standard / optional). A function
   * must return a policy: `undefined` (a tier missing from a map) fails the request
   * (`next(error)`) rather than letting it through unlimited; exempt requests with `skip`.
   * Required.
   */
  readonly bulkhead: Policy | ((request: Req) => Policy);
  /**
   * Requests that skip the bulkhead entirely: `true` exempts the request, `false` holds it in the
   * bulkhead. May return a promise (an async lookup), which is waited for. Anything but a boolean
   * (or a promise of one), a throw or a rejection fails the request (`next(error)`, Fastify's
   * error reply): it is never exempted by accident.
   * @default isHealthCheck (/health, /healthz, /ready, /readyz, /live, /livez and paths under them)
   */
  readonly skip?: Skip<Req> | undefined;
}

/** Reads the `bulkhead` option as a selector of the request: one policy for all, or the function. */
function selectorOf<Req>(name: string, chosen: unknown): (request: Req) => unknown {
  if (isPolicy(chosen)) return () => chosen;
  if (typeof chosen !== 'function') {
    throw new TypeError(
      `expected "${name}" to be a policy (with execute) or a function of the request, got something else`,
    );
  }
  return chosen as (request: Req) => unknown;
}

function notPolicy(policy: unknown): TypeError {
  return new TypeError(
    `expected "bulkhead" to return a policy (with execute), got ${policy === undefined ? 'undefined: a request is never let through unlimited, use "skip" to skip the bulkhead' : 'something else'}`,
  );
}

const noop = (): void => {};

/**
 * The adapter: each request not skipped is held in its policy from arrival until its response
 * closes (finished, or the client went away): the operation goes on to the handlers and settles on
 * the response's `close`. A refusal before it started is answered with a jittered `Retry-After`.
 */
function holding<Req extends { readonly url?: string | undefined }>(
  options: BulkheadMiddlewareOptions<Req> | undefined,
  what: string,
): RequestHandler<Req> {
  const schema = {
    bulkhead: required((name, value) => selectorOf<Req>(name, value)),
    skip: skipField<Req>(isHealthCheck),
    ...overloadReplyFields,
  } satisfies Schema<BulkheadMiddlewareOptions<Req>>;
  const o = readAdapterOptions(what, options, schema);
  const replier = overloadReplier(o);
  const holdIn: Continuation<Req> = (policy, request, reply, next, edge) => {
    if (!isPolicy(policy)) {
      edge.fail(next, notPolicy(policy));
      return;
    }
    const response = edge.response(reply);
    holdSlot(policy, response, {
      run: () =>
        heldFor(response, () => edge.proceed(reply, next), {
          value: noop,
          // Nobody else can see a throw from a queued request's continuation: answer it here.
          error: (error) => problemResponse(response, error),
        }),
      refuse: (error) => edge.answer(reply, replier.reply(error, request.url)),
      gone: noop,
    });
  };
  return skipping(o.skip, asking(o.bulkhead, false, holdIn));
}

/**
 * Holds every request in a bulkhead (or any `Policy`) from arrival until its response closes:
 * at most `maxConcurrent` requests reach your handlers at once, up to `maxQueue` wait in FIFO order,
 * and the rest are answered **503** with an RFC 9457 `application/problem+json` body (code
 * `ERR_BULKHEAD_FULL`) and a jittered `Retry-After` (base `retryAfterMs`, since a bulkhead cannot
 * predict when a slot frees). A request whose client disconnects while queued leaves the queue
 * without taking a slot. Skipped requests (health checks by default) bypass it. An error thrown by
 * `skip` or by a `bulkhead(req)` selector goes to `next(error)`.
 *
 * The policy only admits: its signal reaching the handlers is not wired, so a `timeout` composed
 * around it does not cut a running handler. A client that hangs up mid-handler frees the slot
 * while the handler may still run: wrap such routes with `bulkheadHandler`. Throws a `TypeError`
 * at creation for a missing or invalid option.
 *
 * @example
 * // Tiers per dependency: checkout never waits behind recommendations.
 * const critical = bulkhead({ maxConcurrent: 64, maxQueue: 256, queueTimeoutMs: 2_000 });
 * const standard = bulkhead({ maxConcurrent: 32, maxQueue: 64, queueTimeoutMs: 1_000 });
 * const optional = bulkhead({ maxConcurrent: 4, maxQueue: 0 });
 * app.use(bulkheadMiddleware({
 *   bulkhead: (req) =>
 *     req.url?.startsWith('/checkout') ? critical : req.url?.startsWith('/recommendations') ? optional : standard,
 * }));
 */
export function bulkheadMiddleware<Req extends IncomingMessage = IncomingMessage>(
  options: BulkheadMiddlewareOptions<Req>,
): Middleware<Req> {
  return connectMiddleware(holding(options, 'bulkheadMiddleware options'));
}

/**
 * {@link bulkheadMiddleware} as a Fastify plugin ({@link FastifyPluginLike}): the slot is held until
 * `reply.raw` closes. `bulkhead(request)` and `skip` receive the `FastifyRequest`.
 *
 * @example
 * await app.register(fastifyBulkhead, { bulkhead: bulkhead({ maxConcurrent: 32, maxQueue: 64, queueTimeoutMs: 1_000 }) });
 */
export const fastifyBulkhead: FastifyPluginLike<BulkheadMiddlewareOptions<FastifyRequestLike>> =
  fastifyPlugin('fastifyBulkhead', holding);
