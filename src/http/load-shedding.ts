/**
 * Load shedding at the HTTP edge: a connect-style middleware (node:http, Express) and a Fastify
 * plugin that admit each request through a `LoadShedder` at a priority chosen from the request.
 * No shedding logic lives here.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Release } from '../admission/load-shedder.js';
import type { Priority } from '../admission/shed-error.js';
import { isRejectedError } from '../core/errors.js';
import { isFunction, optionKeys } from '../core/validate.js';
import {
  adapterOptions,
  addAdmissionHook,
  exposePlugin,
  type FastifyAdmissionPlugin,
  type FastifyAdmissionRequest,
  fastifyRefuse,
  isExempt,
  isHealthCheck,
  type OverloadReplier,
  type OverloadReplyOptions,
  overloadReplier,
} from './overload-reply.js';

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
   * Requests that are never shed and not counted in flight. Must return a boolean, synchronously:
   * anything else fails the request (`next(error)`), so an async function cannot exempt everything.
   * @default isHealthCheck (/health, /healthz, /ready, /readyz, /live, /livez and paths under them)
   */
  readonly exempt?: ((request: Req) => boolean) | undefined;
}

/** A connect-style middleware: works with node:http (call it yourself) and Express (`app.use`). */
export type Middleware<Req extends IncomingMessage = IncomingMessage> = (
  request: Req,
  response: ServerResponse,
  next: (error?: unknown) => void,
) => void;

const loadSheddingOptionKeys = optionKeys<LoadSheddingOptions>({
  shedder: true,
  priority: true,
  exempt: true,
  retryAfterMs: true,
  jitter: true,
  random: true,
});

interface Checked<Req> {
  readonly shedder: PriorityAdmitter;
  readonly priority: (request: Req) => Priority;
  readonly exempt: (request: Req) => boolean;
  readonly replier: OverloadReplier;
}

function check<Req>(name: string, options: LoadSheddingOptions<Req> | undefined): Checked<Req> {
  const o = adapterOptions(name, options, loadSheddingOptionKeys);
  const shedder = o.shedder;
  if (typeof shedder !== 'object' || shedder === null || typeof shedder.admit !== 'function') {
    throw new TypeError(
      'expected "shedder" to be a load shedder (an object with admit(priority)), got something else',
    );
  }
  return {
    shedder,
    priority: isFunction('priority', o.priority),
    exempt:
      o.exempt === undefined ? (isHealthCheck as (request: Req) => boolean) : isFunction('exempt', o.exempt),
    replier: overloadReplier(o),
  };
}

/** Admits `request`: returns its release, `undefined` when exempt, or throws (refusal or bug). */
function admit<Req>(checked: Checked<Req>, request: Req): Release | undefined {
  if (isExempt(checked.exempt, request)) return undefined;
  return checked.shedder.admit(checked.priority(request));
}

/**
 * Sheds requests by priority before they reach your handlers. Each request gets its priority from
 * `priority(req)` and is admitted by the shedder (counted in flight until the response closes,
 * whether it finished or the client went away), or answered at once with **503**, an RFC 9457
 * `application/problem+json` body (code `ERR_LOAD_SHED`) and a jittered `Retry-After`. Exempt
 * requests (health checks by default) pass untouched. An error thrown by `priority` or `exempt`
 * (or an invalid priority, a `TypeError`) goes to `next(error)`.
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
  const checked = check('loadSheddingMiddleware options', options);
  return function bulwarkLoadShedding(request, response, next) {
    let release: Release | undefined;
    try {
      release = admit(checked, request);
    } catch (error) {
      if (isRejectedError(error)) checked.replier.send(response, error, request.url);
      else next(error);
      return;
    }
    if (release !== undefined) {
      // A client that left before this middleware ran will not close the response again.
      if (response.closed) release();
      else response.once('close', release);
    }
    next();
  };
}

/**
 * The Fastify plugin of {@link loadSheddingMiddleware}, with the same options (`priority` and
 * `exempt` receive the `FastifyRequest`, so they can read `request.routeOptions.config`). It adds
 * an `onRequest` hook to the context it is registered in, without encapsulation (as
 * `fastify-plugin` would): register it at the root to cover every route. A refusal is answered
 * 503 problem+json with a jittered `Retry-After`; an admitted request is counted in flight until its
 * response closes. An invalid option fails the registration (`app.ready()` rejects with the
 * `TypeError`).
 *
 * @example
 * await app.register(fastifyLoadShedding, {
 *   shedder,
 *   priority: (request) => (request.routeOptions.config as { priority?: Priority }).priority ?? 'normal',
 * });
 */
export const fastifyLoadShedding: FastifyAdmissionPlugin<LoadSheddingOptions<FastifyAdmissionRequest>> =
  exposePlugin(function bulwarkLoadShedding(instance, options, done) {
    let checked: Checked<FastifyAdmissionRequest>;
    try {
      checked = check('fastifyLoadShedding options', options);
    } catch (error) {
      done(error as Error);
      return;
    }
    addAdmissionHook(instance, (request, reply, hookDone) => {
      let release: Release | undefined;
      try {
        release = admit(checked, request);
      } catch (error) {
        if (isRejectedError(error)) fastifyRefuse(checked.replier, reply, error, request.url);
        else hookDone(error as Error);
        return;
      }
      if (release !== undefined) {
        if (reply.raw.closed) release();
        else reply.raw.once('close', release);
      }
      hookDone();
    });
    done();
  }, 'bulwark-load-shedding');
