/**
 * Load shedding at the HTTP edge: a connect-style middleware (node:http, Express) and a Fastify
 * plugin that admit each request through a `LoadShedder` at a priority chosen from the request.
 * Built on the HTTP kit (adapter.ts); no shedding logic lives here.
 */
import type { IncomingMessage } from 'node:http';
import type { Release } from '../admission/load-shedder.js';
import type { Priority } from '../admission/load-shedder-options.js';
import { isRejectedError } from '../core/errors.js';
import { func, required, type Schema } from '../core/read-options.js';
import { show } from '../core/validate.js';
import { connectMiddleware, fastifyPlugin, type Middleware, type RequestHandler } from './adapter.js';
import { readAdapterOptions } from './adapter-options.js';
import type { FastifyPluginLike, FastifyRequestLike } from './fastify-types.js';
import { type OverloadReplyOptions, overloadReplier, overloadReplyFields } from './overload-reply.js';
import { isHealthCheck, type Skip, skipField, skipping } from './skip.js';

/** What the adapters need from a shedder: `LoadShedder` from `bulwark/node` fits. */
export interface PriorityAdmitter {
  /** Admits one request at `priority` (returning its release) or throws the refusal. */
  admit(priority: Priority): Release;
}

/** Options of {@link loadSheddingMiddleware} and {@link fastifyLoadShedding}. */
export interface LoadSheddingOptions<Req = IncomingMessage> extends OverloadReplyOptions {
  /** The shedder that decides (`loadShedder()` from `bulwark/node`). Required. */
  readonly shedder: PriorityAdmitter;
  /** The priority of a request: `'critical' | 'high' | 'normal' | 'low'`. Required. */
  readonly priority: (request: Req) => Priority;
  /**
   * Requests that are never shed and not counted in flight: `true` exempts the request, `false`
   * sends it through the shedder. May return a promise (an async lookup), which is waited for.
   * Anything but a boolean (or a promise of one), a throw or a rejection fails the request
   * (`next(error)`, Fastify's error reply): it is never exempted by accident.
   * @default isHealthCheck (/health, /healthz, /ready, /readyz, /live, /livez and paths under them)
   */
  readonly skip?: Skip<Req> | undefined;
}

function shedderCheck(name: string, value: unknown): PriorityAdmitter {
  if (
    typeof value !== 'object' ||
    value === null ||
    typeof (value as PriorityAdmitter).admit !== 'function'
  ) {
    throw new TypeError(
      `expected "${name}" to be a load shedder (an object with admit(priority)), got ${show(value)}`,
    );
  }
  return value as PriorityAdmitter;
}

/**
 * The adapter: each request not skipped is admitted at its priority and counted in flight until its
 * response closes; a refusal (any `RejectedError`) is answered with a jittered `Retry-After`.
 */
function shedding<Req extends { readonly url?: string | undefined }>(
  options: LoadSheddingOptions<Req> | undefined,
  what: string,
): RequestHandler<Req> {
  const schema = {
    shedder: required(shedderCheck),
    priority: required(func<(request: Req) => Priority>()),
    skip: skipField<Req>(isHealthCheck),
    ...overloadReplyFields,
  } satisfies Schema<LoadSheddingOptions<Req>>;
  const o = readAdapterOptions(what, options, schema);
  const { shedder, priority } = o;
  const replier = overloadReplier(o);
  return skipping(o.skip, (request, reply, next, edge) => {
    let release: Release;
    try {
      release = shedder.admit(priority(request));
    } catch (error) {
      if (isRejectedError(error)) edge.answer(reply, replier.reply(error, request.url));
      else edge.fail(next, error);
      return;
    }
    const response = edge.response(reply);
    // A client that left before this middleware ran will not close the response again.
    if (response.closed) release();
    else response.once('close', release);
    edge.proceed(reply, next);
  });
}

/**
 * Sheds requests by priority before they reach your handlers. Each request gets its priority from
 * `priority(req)` and is admitted by the shedder (counted in flight until the response closes,
 * whether it finished or the client went away), or answered at once with **503**, an RFC 9457
 * `application/problem+json` body (code `ERR_LOAD_SHED`) and a jittered `Retry-After`. Skipped
 * requests (health checks by default) pass untouched. An error thrown by `priority` or `skip` (or
 * an invalid priority, a `TypeError`) goes to `next(error)`.
 *
 * Throws a `TypeError` at creation for a missing or invalid option.
 *
 * @example
 * const shedder = loadShedder({ limits: { eventLoopDelayMs: 200, inFlight: 1_000 } });
 * app.use(loadSheddingMiddleware({
 *   shedder,
 *   priority: (req) => (req.headers['x-priority'] === 'batch' ? 'low' : req.method === 'GET' ? 'normal' : 'high'),
 * }));
 */
export function loadSheddingMiddleware<Req extends IncomingMessage = IncomingMessage>(
  options: LoadSheddingOptions<Req>,
): Middleware<Req> {
  return connectMiddleware(shedding(options, 'loadSheddingMiddleware options'));
}

/**
 * {@link loadSheddingMiddleware} as a Fastify plugin ({@link FastifyPluginLike}: register it at the
 * root to cover every route). `priority` and `skip` receive the `FastifyRequest`, so they can read
 * `request.routeOptions.config`.
 *
 * @example
 * await app.register(fastifyLoadShedding, {
 *   shedder,
 *   priority: (request) => (request.routeOptions.config as { priority?: Priority }).priority ?? 'normal',
 * });
 */
export const fastifyLoadShedding: FastifyPluginLike<LoadSheddingOptions<FastifyRequestLike>> = fastifyPlugin(
  'fastifyLoadShedding',
  shedding,
);
