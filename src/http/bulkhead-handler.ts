/**
 * Bulkhead route wrappers: the slot spans the handler's own work, not only the response. The
 * middleware form (`bulkheadMiddleware`) frees a slot when the response closes, which is also when
 * a client hangs up, while its handler may still be running; these wrappers hold the slot until
 * the handler's promise settles (and the response has closed), so `maxConcurrent` bounds the
 * handlers themselves.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Policy } from '../core/policy.js';
import { readOptions } from '../core/read-options.js';
import { isFunction, show } from '../core/validate.js';
import { type Edge, fastifyEdge, nodeEdge } from './edge.js';
import type { FastifyReplyLike, FastifyRequestLike } from './fastify-types.js';
import { heldFor, holdSlot, isPolicy, type WorkOutcome } from './hold-slot.js';
import { type OverloadReplyOptions, overloadReplier, overloadReplyFields } from './overload-reply.js';

/** A connect-style route handler (node:http, Express) that may return a promise of its work. */
export type BulkheadRouteHandler<Req extends IncomingMessage, Res extends ServerResponse> = (
  request: Req,
  response: Res,
  next: (error?: unknown) => void,
) => unknown;

/** A Fastify route handler (`async (request, reply) => value`). */
export type FastifyBulkheadRouteHandler<Req extends FastifyRequestLike, Reply extends FastifyReplyLike> = (
  request: Req,
  reply: Reply,
) => unknown;

const noop = (): void => {};

/** Where one held route call ends: its work's outcome, a refusal already answered, or a client gone. */
interface RouteEnd extends WorkOutcome {
  /** The bulkhead refused the call and the refusal has been answered; the handler never ran. */
  refused(): void;
  /** The client left while queued: nobody to answer, the handler never ran. */
  gone(): void;
}

/**
 * Checks a route wrapper's arguments and reads its refusal options (a `TypeError` at once for a
 * bad one), then returns what each call does: hold `work` in `bulkhead` until its promise has
 * settled and the response has closed, answer a refusal 503 through `edge`, and report to `end`.
 */
function routeHolder<Reply>(
  bulkhead: Policy,
  handler: unknown,
  options: OverloadReplyOptions | undefined,
  edge: Edge<Reply, unknown>,
): (reply: Reply, url: string | undefined, work: () => unknown, end: RouteEnd) => void {
  if (!isPolicy(bulkhead)) {
    throw new TypeError(`expected "bulkhead" to be a policy (with execute), got ${show(bulkhead)}`);
  }
  isFunction('handler', handler);
  const replier = overloadReplier(readOptions('bulkheadHandler options', options, overloadReplyFields));
  return function holdRoute(reply: Reply, url: string | undefined, work: () => unknown, end: RouteEnd): void {
    const response = edge.response(reply);
    holdSlot(bulkhead, response, {
      run: () => heldFor(response, work, end),
      refuse(error) {
        edge.answer(reply, replier.reply(error, url));
        end.refused();
      },
      gone: end.gone,
    });
  };
}

/**
 * Wraps one node:http / Express route handler in a bulkhead (or any `Policy`): the handler runs
 * once admitted, and its slot is held until **both** the handler's returned promise has settled and
 * the response has closed. So a client that hangs up mid-handler does not free the slot while the
 * handler still works, and `maxConcurrent` bounds the handlers themselves. A handler that returns
 * nothing (callback style) holds its slot until the response closes, as the middleware does.
 *
 * Refusals (queue full, queue timeout) are answered **503** problem+json with a jittered
 * `Retry-After` (`options`: `retryAfterMs`, `jitter`, `random`, as for `bulkheadMiddleware`); the
 * handler never runs. A client that leaves while queued leaves the queue and its handler never
 * runs. A handler that throws or rejects goes to `next(error)`. Throws a `TypeError` at once for a
 * bad argument.
 *
 * With Express, type the handler's parameters (`req: Request, res: Response`) to use Express's API.
 *
 * @example
 * const reports = bulkhead({ maxConcurrent: 4, maxQueue: 16, queueTimeoutMs: 1_000 });
 * app.get('/reports/:id', bulkheadHandler(reports, async (req: Request, res: Response) => {
 *   res.json(await buildReport(req.params.id));
 * }));
 */
export function bulkheadHandler<
  Req extends IncomingMessage = IncomingMessage,
  Res extends ServerResponse = ServerResponse,
>(
  bulkhead: Policy,
  handler: BulkheadRouteHandler<Req, Res>,
  options?: OverloadReplyOptions,
): (request: Req, response: Res, next: (error?: unknown) => void) => void {
  const holdRoute = routeHolder(bulkhead, handler, options, nodeEdge);
  return function bulwarkBulkheadHandler(request, response, next) {
    const end: RouteEnd = { value: noop, error: next, refused: noop, gone: noop };
    holdRoute(response, request.url, () => handler(request, response, next), end);
  };
}

/**
 * The Fastify form of {@link bulkheadHandler}: wraps a route handler so that it runs in a bulkhead
 * (or any `Policy`) and holds its slot until its promise has settled and `reply.raw` has closed.
 * The handler's value is sent as Fastify sends any async handler's value; a throw or rejection
 * reaches Fastify's error handler. Refusals are answered 503 problem+json with a jittered
 * `Retry-After`; a client that leaves while queued leaves the queue and its handler never runs.
 * Throws a `TypeError` at once for a bad argument.
 *
 * @example
 * app.get('/reports/:id', fastifyBulkheadHandler(reports, async (request) => buildReport(request.params)));
 */
export function fastifyBulkheadHandler<
  Req extends FastifyRequestLike = FastifyRequestLike,
  Reply extends FastifyReplyLike = FastifyReplyLike,
>(
  bulkhead: Policy,
  handler: FastifyBulkheadRouteHandler<Req, Reply>,
  options?: OverloadReplyOptions,
): (request: Req, reply: Reply) => Promise<unknown> {
  const holdRoute = routeHolder<FastifyReplyLike>(bulkhead, handler, options, fastifyEdge);
  return function bulwarkBulkheadHandler(request, reply) {
    // Fastify sends the value once this promise resolves; the slot waits for the response too.
    return new Promise<unknown>((resolve, reject) => {
      holdRoute(reply, request.url, () => handler(request, reply), {
        value: resolve,
        error: reject,
        refused: () => resolve(reply), // Fastify waits on a returned reply (it is thenable) and sends nothing more
        gone: () => resolve(undefined), // nobody to answer: on a destroyed socket Fastify sends nothing
      });
    });
  };
}
