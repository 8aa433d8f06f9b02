/**
 * Request exemption, the same for every adapter: a `skip(req)` option that returns `true` for the
 * requests the adapter leaves alone (health checks, internal callers), read and asked here.
 */

import { type Field, func, withDefault } from '../core/read-options.js';
import { show } from '../core/validate.js';
import type { RequestHandler } from './adapter.js';
import { asking, type Continuation } from './ask.js';

/**
 * A request exemption: `true` passes the request on untouched, `false` sends it through the
 * adapter. It may answer through a promise (an async lookup), which is waited for; a synchronous
 * answer is used at once, without a promise. Anything but a boolean (or a promise of one), a throw
 * or a rejection fails the request: it is never exempted by accident.
 *
 * @example
 * skip: (req) => isHealthCheck(req) || isInternalCaller(req) // true at once, or a lookup's promise
 */
export type Skip<Req> = (request: Req) => boolean | Promise<boolean>;

/**
 * The `skip` option of an adapter's schema: a function when given (a `TypeError` naming `skip`
 * otherwise), else `fallback` (none: every request goes through the adapter).
 */
export function skipField<Req>(fallback?: Skip<Req>): Field<Skip<Req> | undefined> {
  return withDefault<Skip<Req> | undefined>(fallback, func<Skip<Req>>());
}

/**
 * `handle` behind `skip`, the same in every adapter: `skip(request) === true` passes the request
 * on untouched (`edge.proceed`), `false` runs `handle`. A promise is waited for (synchronously
 * answered requests go on at once, with no promise created). Any answer but a boolean, a throw or
 * a rejection fails the request (`edge.fail`): an exemption is never granted by accident. Without
 * `skip`, returns `handle` itself (no cost).
 */
export function skipping<Req>(skip: Skip<Req> | undefined, handle: RequestHandler<Req>): RequestHandler<Req> {
  if (skip === undefined) return handle;
  const afterSkip: Continuation<Req> = (answer, request, reply, next, edge) => {
    if (answer === false) handle(request, reply, next, edge);
    else if (answer === true) edge.proceed(reply, next);
    else
      edge.fail(next, new TypeError(`expected the "skip" function to return a boolean, got ${show(answer)}`));
  };
  return asking(skip, true, afterSkip);
}

const healthPath = /^\/(?:health|healthz|ready|readyz|live|livez)(?:[/?#]|$)/;

/**
 * The default `skip` of the load-shedding and bulkhead adapters: true for health, readiness and
 * liveness probes, which must never be shed or queued (an orchestrator that sees them fail restarts
 * a process that is merely busy). Matches a request URL whose path is `/health`, `/healthz`,
 * `/ready`, `/readyz`, `/live` or `/livez`, or lies under one of them (`/health/db`), with any
 * query string and method.
 *
 * @example
 * skip: (req) => isHealthCheck(req) || req.url === '/metrics'
 */
export function isHealthCheck(request: { readonly url?: string | undefined }): boolean {
  const url = request.url;
  return typeof url === 'string' && healthPath.test(url);
}
