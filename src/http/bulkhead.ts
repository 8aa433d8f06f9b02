/**
 * A bulkhead at the HTTP edge: a connect-style middleware (node:http, Express) and a Fastify plugin
 * that hold each request in a policy (normally `bulkhead()`) from arrival until its response
 * closes. Uses only the public `Policy` contract, so any policy works; no bulkhead logic lives here.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Policy } from '../core/policy.js';
import { optionKeys } from '../core/validate.js';
import { holdSlot, untilClosed } from './hold-slot.js';
import type { Middleware } from './load-shedding.js';
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
import { problemResponse } from './problem-response.js';

/** Options of {@link bulkheadMiddleware} and {@link fastifyBulkhead}. */
export interface BulkheadMiddlewareOptions<Req = IncomingMessage> extends OverloadReplyOptions {
  /**
   * The policy every request is held in (a `bulkhead({ maxConcurrent, maxQueue, queueTimeoutMs })`),
   * or a function choosing one per request, for tiers (critical / standard / optional). A function
   * must return a policy: `undefined` (a tier missing from a map) fails the request
   * (`next(error)`) rather than letting it through unlimited; exempt requests with `exempt`.
   * Required.
   */
  readonly bulkhead: Policy | ((request: Req) => Policy);
  /**
   * Requests that skip the bulkhead entirely. Must return a boolean, synchronously: anything else
   * fails the request (`next(error)`), so an async function cannot exempt everything.
   * @default isHealthCheck (/health, /healthz, /ready, /readyz, /live, /livez and paths under them)
   */
  readonly exempt?: ((request: Req) => boolean) | undefined;
}

const bulkheadMiddlewareOptionKeys = optionKeys<BulkheadMiddlewareOptions>({
  bulkhead: true,
  exempt: true,
  retryAfterMs: true,
  jitter: true,
  random: true,
});

interface Checked<Req> {
  readonly select: (request: Req) => Policy;
  readonly exempt: (request: Req) => boolean;
  readonly replier: OverloadReplier;
}

function isPolicy(value: unknown): value is Policy {
  return typeof value === 'object' && value !== null && typeof (value as Policy).execute === 'function';
}

function check<Req>(name: string, options: BulkheadMiddlewareOptions<Req> | undefined): Checked<Req> {
  const o = adapterOptions(name, options, bulkheadMiddlewareOptionKeys);
  const chosen = o.bulkhead;
  let select: (request: Req) => Policy;
  if (isPolicy(chosen)) select = () => chosen;
  else if (typeof chosen === 'function') {
    select = (request) => {
      const policy: unknown = chosen(request);
      if (!isPolicy(policy)) {
        throw new TypeError(
          `expected "bulkhead" to return a policy (with execute), got ${policy === undefined ? 'undefined: a request is never let through unlimited, use "exempt" to skip the bulkhead' : 'something else'}`,
        );
      }
      return policy;
    };
  } else {
    throw new TypeError(
      'expected "bulkhead" to be a policy (with execute) or a function of the request, got something else',
    );
  }
  let exempt = isHealthCheck as (request: Req) => boolean;
  if (o.exempt !== undefined) {
    if (typeof o.exempt !== 'function')
      throw new TypeError('expected "exempt" to be a function, got something else');
    exempt = o.exempt;
  }
  return { select, exempt, replier: overloadReplier(o) };
}

/** How one adapter lets a request go on, refuses it, or reports a bug. */
interface Edge {
  /** Continue to the handlers. */
  proceed(): void;
  /** Answer the policy's refusal (status from its kind, jittered Retry-After). */
  refuse(error: unknown): void;
  /** `exempt` or `bulkhead(req)` threw: hand the error to the framework. */
  fail(error: unknown): void;
}

const noop = (): void => {};

/**
 * Holds the request in the chosen policy from arrival until its response closes: the operation
 * continues to the handlers and settles on the response's `close` (finished, or the client went
 * away). A refusal before the operation started is answered by `edge.refuse`.
 */
function hold<Req>(checked: Checked<Req>, request: Req, response: ServerResponse, edge: Edge): void {
  let policy: Policy | undefined;
  try {
    policy = isExempt(checked.exempt, request) ? undefined : checked.select(request);
  } catch (error) {
    edge.fail(error);
    return;
  }
  if (policy === undefined) {
    edge.proceed();
    return;
  }
  holdSlot(policy, response, {
    run() {
      const closed = untilClosed(response);
      try {
        edge.proceed();
      } catch (error) {
        // Nobody else can see a throw from a queued request's continuation: answer it here.
        problemResponse(response, error);
      }
      return closed;
    },
    refuse: edge.refuse,
    gone: noop,
  });
}

/**
 * Holds every request in a bulkhead (or any `Policy`) from arrival until its response closes:
 * at most `maxConcurrent` requests reach your handlers at once, up to `maxQueue` wait in FIFO order,
 * and the rest are answered **503** with an RFC 9457 `application/problem+json` body (code
 * `ERR_BULKHEAD_FULL`) and a jittered `Retry-After` (base `retryAfterMs`, since a bulkhead cannot
 * predict when a slot frees). A request whose client disconnects while queued leaves the queue
 * without taking a slot. Exempt requests (health checks by default) skip it. An error thrown by
 * `exempt` or by a `bulkhead(req)` selector goes to `next(error)`.
 *
 * The policy only admits: its signal reaching the handlers is not wired, so a `timeout` composed
 * around it does not cut a running handler. Throws a `TypeError` at creation for a missing or
 * invalid option.
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
  const checked = check('bulkheadMiddleware options', options);
  return function bulwarkBulkhead(request, response, next) {
    hold(checked, request, response, {
      proceed: () => next(),
      refuse: (error) => checked.replier.send(response, error, request.url),
      fail: (error) => next(error),
    });
  };
}

/**
 * The Fastify plugin of {@link bulkheadMiddleware}, with the same options (`bulkhead(request)` and
 * `exempt` receive the `FastifyRequest`). It adds an `onRequest` hook to the context it is
 * registered in, without encapsulation (as `fastify-plugin` would); the slot is held until
 * `reply.raw` closes. Refusals are answered 503 problem+json with a jittered `Retry-After`. An
 * invalid option fails the registration (`app.ready()` rejects with the `TypeError`).
 *
 * @example
 * await app.register(fastifyBulkhead, { bulkhead: bulkhead({ maxConcurrent: 32, maxQueue: 64, queueTimeoutMs: 1_000 }) });
 */
export const fastifyBulkhead: FastifyAdmissionPlugin<BulkheadMiddlewareOptions<FastifyAdmissionRequest>> =
  exposePlugin(function bulwarkBulkhead(instance, options, done) {
    let checked: Checked<FastifyAdmissionRequest>;
    try {
      checked = check('fastifyBulkhead options', options);
    } catch (error) {
      done(error as Error);
      return;
    }
    addAdmissionHook(instance, (request, reply, hookDone) => {
      hold(checked, request, reply.raw, {
        proceed: () => hookDone(),
        refuse: (error) => fastifyRefuse(checked.replier, reply, error, request.url),
        fail: (error) => hookDone(error as Error),
      });
    });
    done();
  }, 'bulwark-bulkhead');
