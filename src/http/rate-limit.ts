/**
 * Rate limiting at the HTTP edge: connect-style middleware for node:http and Express, and a Fastify
 * plugin. Built on the HTTP kit (adapter.ts); the decision is the limiter's, this file only maps it
 * to headers and responses.
 *
 * - Every limited response carries `RateLimit-Policy` and `RateLimit` (rate-limit-headers.ts).
 * - A refusal is `429 Too Many Requests` with `Retry-After` (whole seconds, rounded up) and an RFC 9457
 *   problem+json body (`urn:bulwark:problem:rate_limited`, code `ERR_RATE_LIMITED`).
 * - The store down under `storeFailure: 'fail-closed'` is `503 Service Unavailable` (problem+json,
 *   code `ERR_STORE_UNAVAILABLE`), never a 429: the client did nothing wrong.
 */
import type { IncomingMessage } from 'node:http';
import { isStoreUnavailableError } from '../core/errors.js';
import { isThenable } from '../core/policy.js';
import {
  boolean,
  func,
  optional,
  readOptions,
  required,
  type Schema,
  withDefault,
} from '../core/read-options.js';
import { show } from '../core/validate.js';
import { RateLimitedError } from '../rate-limit/errors.js';
import type { RateLimiter } from '../rate-limit/rate-limiter.js';
import type { RateLimitResult, RateLimitRule } from '../rate-limit/store.js';
import { connectMiddleware, fastifyPlugin, type Middleware, type RequestHandler } from './adapter.js';
import { readAdapterOptions } from './adapter-options.js';
import { asking, type Continuation } from './ask.js';
import type { Edge } from './edge.js';
import type { FastifyPluginLike, FastifyRequestLike } from './fastify-types.js';
import { overloadReplier, overloadReplyFields } from './overload-reply.js';
import { problemReply } from './problem-response.js';
import { rateLimitHeaders } from './rate-limit-headers.js';
import { type Skip, skipField, skipping } from './skip.js';

/**
 * What a key function may return. `undefined` is allowed by the type because request properties
 * (`req.ip`, `req.socket.remoteAddress`) are `string | undefined`, but at run time it is an error:
 * the request fails (500), it is never let through unlimited. Exempt requests with `skip`.
 */
export type RateLimitKey = string | undefined;

/** Options of {@link rateLimitMiddleware} and {@link fastifyRateLimit}. */
export interface RateLimitHttpOptions<Req> {
  /** The limiter deciding (in-memory or Redis-backed). */
  readonly limiter: RateLimiter;
  /**
   * The key of a request: a client IP, a user or tenant id, an API key. May return a promise (e.g.
   * an API-key lookup). It must give a non-empty string: `undefined` (`req.socket.remoteAddress` is
   * `undefined` once the client hung up), `''` or a non-string fails the request (500 via
   * `next(error)`, or Fastify's error reply) instead of exempting it or limiting one shared key.
   */
  readonly key: (request: Req) => RateLimitKey | Promise<RateLimitKey>;
  /**
   * Requests that are not limited at all (health checks, internal callers): `true` exempts the
   * request, `false` limits it; asked before `key`. May return a promise. Anything but a boolean
   * (or a promise of one), a throw or a rejection fails the request like a bad key.
   * @default none: every request is limited
   */
  readonly skip?: Skip<Req> | undefined;
  /** Units the request takes (e.g. by route weight). @default () => 1 */
  readonly cost?: ((request: Req) => number) | undefined;
  /** Send `RateLimit-Policy` and `RateLimit` headers. @default true */
  readonly headers?: boolean | undefined;
}

/** What the adapter uses of a limiter, whether `take` answers with a value or a promise. */
interface Limiter {
  readonly rule: RateLimitRule;
  take(key: string, cost: number): RateLimitResult | PromiseLike<RateLimitResult>;
}

/** Duck-typed, not instanceof: a limiter from another copy of bulwark works too. */
function limiterCheck(name: string, value: unknown): Limiter {
  const limiter = value as Partial<Limiter> | null | undefined;
  if (typeof limiter?.take !== 'function' || typeof limiter.rule?.name !== 'string') {
    throw new TypeError(`expected "${name}" to be a rate limiter from rateLimiter(), got ${show(value)}`);
  }
  return limiter as Limiter;
}

/** The read options, as one request's steps use them. */
interface Limiting<Req> {
  readonly limiter: Limiter;
  readonly cost: ((request: Req) => number) | undefined;
  readonly headers: boolean;
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

/** Lets an allowed request go on, answers a refused one 429; both with the RateLimit headers. */
function decide<Req extends UrlRequest, Reply, Next>(
  c: Limiting<Req>,
  key: string,
  result: RateLimitResult,
  request: Req,
  reply: Reply,
  next: Next,
  edge: Edge<Reply, Next>,
): void {
  const headers = c.headers ? rateLimitHeaders(c.limiter.rule, result) : undefined;
  if (result.allowed) {
    edge.proceed(reply, next, headers);
    return;
  }
  // Stryker disable next-line ObjectLiteral: the refusal only feeds problemReply, whose problem body carries neither limit nor remaining
  const refusal = new RateLimitedError(key, result.retryAfterMs, {
    limit: result.limit,
    remaining: result.remaining,
  });
  edge.answer(reply, problemReply(refusal, { instance: request.url, headers }));
}

/** The adapter: `skip`, then the key (maybe async), then the limiter's decision. */
function limiting<Req extends UrlRequest>(
  options: RateLimitHttpOptions<Req> | undefined,
  what: string,
): RequestHandler<Req> {
  const schema = {
    limiter: required(limiterCheck),
    key: required(func<(request: Req) => RateLimitKey | Promise<RateLimitKey>>()),
    skip: skipField<Req>(),
    cost: optional(func<(request: Req) => number>()),
    headers: withDefault(true, boolean),
  } satisfies Schema<RateLimitHttpOptions<Req>>;
  const o = readAdapterOptions(what, options, schema);
  const c: Limiting<Req> = { limiter: o.limiter, cost: o.cost, headers: o.headers };
  const keyed: Continuation<Req> = (key, request, reply, next, edge) =>
    take(c, key, request, reply, next, edge);
  return skipping(o.skip, asking(o.key, true, keyed));
}

/**
 * Rate limiting for node:http and Express: `(req, res, next)`. Allowed requests get the
 * `RateLimit-Policy`/`RateLimit` headers and `next()`; refused ones are answered `429` with
 * `Retry-After` and a problem+json body; a store failure under `fail-closed` is answered `503` with
 * a jittered `Retry-After` of 1–2 s. Requests for which `skip` says `true` pass untouched. A key of
 * `undefined` or `''`, a throwing key, skip or cost function, goes to `next(error)` (Express's
 * error handler): a request is never let through unlimited because its key is missing. Throws a
 * `TypeError` at once for bad options.
 *
 * With Express, type the request (`(req: Request) => ...`) to read Express's fields.
 *
 * @example
 * const limiter = rateLimiter({ limit: 100, periodMs: 60_000, store: redisStores(redis).rateLimit });
 * app.use(rateLimitMiddleware({
 *   limiter,
 *   // undefined once the client hung up: that request fails (500), it is not let through
 *   key: (req: Request) => req.ip ?? req.socket.remoteAddress,
 *   skip: (req) => req.path === '/healthz',
 * }));
 */
export function rateLimitMiddleware<Req extends IncomingMessage = IncomingMessage>(
  options: RateLimitHttpOptions<Req>,
): Middleware<Req> {
  return connectMiddleware(limiting(options, 'rateLimitMiddleware options'));
}

/**
 * {@link rateLimitMiddleware} as a Fastify plugin ({@link FastifyPluginLike}: register it inside a
 * scoped plugin to limit only that scope's routes). `key`, `skip` and `cost` receive the
 * `FastifyRequest`.
 *
 * @example
 * app.register(fastifyRateLimit, { limiter, key: (request) => request.ip, skip: (request) => request.url === '/healthz' });
 */
export const fastifyRateLimit: FastifyPluginLike<RateLimitHttpOptions<FastifyRequestLike>> = fastifyPlugin(
  'fastifyRateLimit',
  limiting,
);
