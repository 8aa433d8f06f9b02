/**
 * Rate limiting at the HTTP edge: connect-style middleware for node:http and Express, and a Fastify
 * plugin. Built on the HTTP kit (adapter.ts); the decision is the limiter's, this file only maps it
 * to headers and responses.
 *
 * - Every limited response carries `RateLimit-Policy` and `RateLimit` (rate-limit-headers.ts), and
 *   with `legacyHeaders` the `X-RateLimit-*` ones.
 * - A refusal is `429 Too Many Requests` with `Retry-After` (whole seconds, rounded up) and an RFC 9457
 *   problem+json body (`urn:bulwark:problem:rate_limited`, code `ERR_RATE_LIMITED`), or whatever the
 *   `handler` option answers (rate-limit-refusal.ts). Options: rate-limit-options.ts.
 * - The store down under `storeFailure: 'fail-closed'` is `503 Service Unavailable` (problem+json,
 *   code `ERR_STORE_UNAVAILABLE`), never a 429: the client did nothing wrong.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Clock } from '../core/clock.js';
import { isStoreUnavailableError } from '../core/errors.js';
import { isThenable } from '../core/policy.js';
import { readOptions } from '../core/read-options.js';
import { show } from '../core/validate.js';
import { RateLimitedError } from '../rate-limit/errors.js';
import type { RateLimitResult, RateLimitRule } from '../rate-limit/store.js';
import { connectMiddleware, fastifyPlugin, type RequestHandler } from './adapter.js';
import { asking, type Continuation } from './ask.js';
import type { Edge, NodeNext } from './edge.js';
import type { FastifyPluginLike, FastifyReplyLike, FastifyRequestLike } from './fastify-types.js';
import { overloadReplier, overloadReplyFields } from './overload-reply.js';
import { legacyRateLimitHeaders, rateLimitHeaders } from './rate-limit-headers.js';
import { type Limiter, type RateLimitHttpOptions, readRateLimitHttpOptions } from './rate-limit-options.js';
import { type RateLimitHandler, refuse } from './rate-limit-refusal.js';
import { skipping } from './skip.js';

/** The read options, as one request's steps use them. */
interface Limiting<Req> {
  readonly limiter: Limiter;
  /** The limiter's rule, or a combined limiter's rules. */
  readonly rules: RateLimitRule | readonly RateLimitRule[];
  readonly cost: ((request: Req) => number) | undefined;
  readonly headers: boolean;
  readonly legacyHeaders: boolean;
  readonly handler: RateLimitHandler<Req, never> | undefined;
  readonly clock: Clock;
}

/**
 * The answer to a store failure under `fail-closed`: 503 with a jittered `Retry-After` (1–2 s), so
 * the clients refused during an outage do not all come back in the same second.
 */
// Stryker disable next-line StringLiteral: the label names these options in an error, and no options are given here
const storeDown = overloadReplier(readOptions('store outage reply', undefined, overloadReplyFields));

function badKey(key: unknown): TypeError {
  return new TypeError(
    key === undefined
      ? 'the rate-limit "key" function returned undefined for this request (req.socket.remoteAddress ' +
          'is undefined once the client hung up): a request without a key is refused, never let ' +
          'through unlimited; use "skip" to exempt requests'
      : `expected the rate-limit "key" function to return a non-empty string, got ${show(key)}`,
  );
}

type UrlRequest = { readonly url?: string | undefined };

/** Takes the request's cost under `key` and answers; settles synchronously when the limiter does. */
function take<Req extends UrlRequest, Reply, Next>(
  c: Limiting<Req>,
  key: unknown,
  request: Req,
  reply: Reply,
  next: Next,
  edge: Edge<Reply, Next>,
): void {
  if (typeof key !== 'string' || key === '') {
    edge.fail(next, badKey(key));
    return;
  }
  let decision: RateLimitResult | PromiseLike<RateLimitResult>;
  try {
    decision = c.limiter.take(key, c.cost === undefined ? 1 : c.cost(request));
  } catch (error) {
    edge.fail(next, error);
    return;
  }
  if (!isThenable<RateLimitResult>(decision)) {
    decide(c, key, decision, request, reply, next, edge);
    return;
  }
  decision.then(
    (result) => decide(c, key, result, request, reply, next, edge),
    (error: unknown) => {
      // The store is down and the limiter fails closed: 503, not 429, and no RateLimit headers.
      if (isStoreUnavailableError(error)) edge.answer(reply, storeDown.reply(error, request.url));
      else edge.fail(next, error);
    },
  );
}

/** The rate-limit headers of a decision the options ask for: standard, legacy, both or none. */
function decisionHeaders<Req>(c: Limiting<Req>, result: RateLimitResult): Record<string, string> | undefined {
  const standard = c.headers ? rateLimitHeaders(c.rules, result) : undefined;
  if (!c.legacyHeaders) return standard;
  return Object.assign(standard ?? {}, legacyRateLimitHeaders(result, c.clock.now()));
}

/** Lets an allowed request go on with its headers; refuses the others (429 or the `handler`). */
function decide<Req extends UrlRequest, Reply, Next>(
  c: Limiting<Req>,
  key: string,
  result: RateLimitResult,
  request: Req,
  reply: Reply,
  next: Next,
  edge: Edge<Reply, Next>,
): void {
  const headers = decisionHeaders(c, result);
  if (result.allowed) {
    edge.proceed(reply, next, headers);
    return;
  }
  const error = new RateLimitedError(key, result.retryAfterMs, {
    limit: result.limit,
    remaining: result.remaining,
  });
  refuse(c.handler, { error, result }, headers, request, reply, next, edge);
}

/** The adapter: `skip`, then the key (maybe async), then the limiter's decision. */
function limiting<Req extends UrlRequest, Res>(
  options: RateLimitHttpOptions<Req, Res> | undefined,
  what: string,
): RequestHandler<Req> {
  const o = readRateLimitHttpOptions(options, what);
  const c: Limiting<Req> = {
    limiter: o.limiter,
    rules: o.limiter.rules ?? o.limiter.rule!,
    cost: o.cost,
    headers: o.headers,
    legacyHeaders: o.legacyHeaders,
    handler: o.handler,
    clock: o.clock,
  };
  const keyed: Continuation<Req> = (key, request, reply, next, edge) =>
    take(c, key, request, reply, next, edge);
  return skipping(o.skip, asking(o.key, true, keyed));
}

/**
 * Rate limiting for node:http and Express: `(req, res, next)`. Allowed requests get the
 * `RateLimit-Policy`/`RateLimit` headers (and the `X-RateLimit-*` ones with `legacyHeaders`) and
 * `next()`; refused ones are answered `429` with `Retry-After` and a problem+json body, or by your
 * `handler`; a store failure under `fail-closed` is answered `503` with a jittered `Retry-After` of
 * 1–2 s. Requests for which `skip` says `true` pass untouched. A key of `undefined` or `''`, a
 * throwing key, skip, cost or handler function, goes to `next(error)` (Express's error handler): a
 * request is never let through unlimited because its key is missing. Throws a `TypeError` at once
 * for bad options.
 *
 * With Express, type the request and response (`(req: Request) => ...`,
 * `handler: (req: Request, res: Response) => ...`) to use Express's fields.
 *
 * @example
 * const limiter = rateLimiter({ limit: 100, periodMs: 60_000, store: redisStores(redis).rateLimit });
 * app.set('trust proxy', 'loopback'); // the proxy in front of the app, so req.ip is the client's
 * app.use(rateLimitMiddleware({
 *   limiter,
 *   key: ipKey, // req.ip; IPv6 clients grouped by /56
 *   skip: (req) => req.path === '/healthz',
 *   handler: (req: Request, res: Response) => res.status(429).render('slow-down'),
 * }));
 */
export function rateLimitMiddleware<
  Req extends IncomingMessage = IncomingMessage,
  Res extends ServerResponse = ServerResponse,
>(options: RateLimitHttpOptions<Req, Res>): (request: Req, response: Res, next: NodeNext) => void {
  return connectMiddleware(limiting(options, 'rateLimitMiddleware options'));
}

/**
 * {@link rateLimitMiddleware} as a Fastify plugin ({@link FastifyPluginLike}: register it inside a
 * scoped plugin to limit only that scope's routes). `key`, `skip`, `cost` and `handler` receive the
 * `FastifyRequest`; `handler` receives the reply and answers through it
 * (`reply.code(429).send(...)`).
 *
 * @example
 * app.register(fastifyRateLimit, { limiter, key: ipKey, skip: (request) => request.url === '/healthz' });
 */
export const fastifyRateLimit: FastifyPluginLike<RateLimitHttpOptions<FastifyRequestLike, FastifyReplyLike>> =
  fastifyPlugin('fastifyRateLimit', limiting);
