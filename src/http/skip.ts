/**
 * Request exemption, the same for every adapter: a `skip(req)` option that returns `true` for the
 * requests the adapter leaves alone (health checks, internal callers), read and asked here.
 */

import { isThenable } from '../core/policy.js';
import { type Field, func, optional, withDefault } from '../core/read-options.js';
import { show } from '../core/validate.js';
import type { RequestHandler } from './adapter.js';
import { asking, type Continuation } from './ask.js';

/** A request exemption: `true` passes the request on untouched, `false` sends it through the adapter. */
export type Skip<Req> = (request: Req) => boolean;

/** A request exemption that may decide through a promise (an async lookup). */
export type AsyncSkip<Req> = (request: Req) => boolean | Promise<boolean>;

/**
 * The `skip` option of an adapter's schema: a function when given (a `TypeError` naming `skip`
 * otherwise), else `fallback` (none: every request goes through the adapter).
 */
export function skipField<S extends AsyncSkip<never>>(fallback?: S): Field<S | undefined> {
  return fallback === undefined ? optional(func<S>()) : withDefault<S | undefined>(fallback, func<S>());
}

/**
 * `handle` behind `skip`: `skip(request) === true` passes the request on untouched
 * (`edge.proceed`), `false` runs `handle`. In `'async'` mode a promise is waited for; in `'sync'`
 * mode it is an error, since a promise is truthy and must not exempt every request. Any answer
 * but a boolean, a throw or a rejection fails the request (`edge.fail`): an exemption is never
 * granted by accident. Without `skip`, returns `handle` itself (no cost).
 */
export function skipping<Req>(
  skip: AsyncSkip<Req> | undefined,
  mode: 'sync' | 'async',
  handle: RequestHandler<Req>,
): RequestHandler<Req> {
  if (skip === undefined) return handle;
  const waits = mode === 'async';
  const afterSkip: Continuation<Req> = (answer, request, reply, next, edge) => {
    if (answer === false) handle(request, reply, next, edge);
    else if (answer === true) edge.proceed(reply, next);
    else edge.fail(next, notBoolean(answer));
  };
  return asking(skip, waits, afterSkip);
}

function notBoolean(answer: unknown): TypeError {
  const got = isThenable(answer) ? 'a promise (this adapter decides synchronously)' : show(answer);
  return new TypeError(`expected the "skip" function to return a boolean, got ${got}`);
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
