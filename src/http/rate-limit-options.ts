/**
 * The options of the rate-limit adapters (`rateLimitMiddleware`, `fastifyRateLimit`): types,
 * defaults and validation, read once when the adapter is created.
 */
import type { ServerResponse } from 'node:http';
import type { Clock } from '../core/clock.js';
import {
  boolean,
  clockField,
  func,
  optional,
  required,
  type Schema,
  withDefault,
} from '../core/read-options.js';
import { show } from '../core/validate.js';
import type { CombinedRateLimiter } from '../rate-limit/combined.js';
import type { RateLimiter } from '../rate-limit/rate-limiter.js';
import type { RateLimitResult, RateLimitRule } from '../rate-limit/store.js';
import { readAdapterOptions } from './adapter-options.js';
import type { RateLimitHandler } from './rate-limit-refusal.js';
import { type Skip, skipField } from './skip.js';

/**
 * What a key function may return. `undefined` is allowed by the type because request properties
 * (`req.ip`, `req.socket.remoteAddress`) are `string | undefined`, but at run time it is an error:
 * the request fails (500), it is never let through unlimited. Exempt requests with `skip`.
 */
export type RateLimitKey = string | undefined;

/**
 * Options of {@link rateLimitMiddleware} and {@link fastifyRateLimit}. `Req` is the request your
 * functions receive, `Res` the response `handler` receives (`ServerResponse` for node:http, an
 * Express `Response` when you type it so, a Fastify reply for the plugin).
 */
export interface RateLimitHttpOptions<Req, Res = ServerResponse> {
  /**
   * The limiter deciding (in-memory or Redis-backed), or several combined by `rateLimiter.all()`
   * (every limit stated in `RateLimit-Policy`, the binding one in `RateLimit`).
   */
  readonly limiter: RateLimiter | CombinedRateLimiter;
  /**
   * The key of a request: a client IP (`ipKey`), a user or tenant id, an API key. May return a
   * promise (e.g. an API-key lookup). It must give a non-empty string: `undefined`
   * (`req.socket.remoteAddress` is `undefined` once the client hung up), `''` or a non-string fails
   * the request (500 via `next(error)`, or Fastify's error reply) instead of exempting it or
   * limiting one shared key.
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
  /** Send the standard `RateLimit-Policy` and `RateLimit` headers. @default true */
  readonly headers?: boolean | undefined;
  /**
   * Also send express-rate-limit's legacy headers: `X-RateLimit-Limit`, `X-RateLimit-Remaining`
   * and `X-RateLimit-Reset` (Unix epoch seconds; see `legacyRateLimitHeaders`). Independent of
   * `headers`: `{ headers: false, legacyHeaders: true }` sends only these.
   * @default false
   */
  readonly legacyHeaders?: boolean | undefined;
  /**
   * Answers a refused request instead of the default `429` problem+json reply: a page, a redirect,
   * a body in your API's own shape. Before it runs, the response already carries the rate-limit
   * headers (those `headers` and `legacyHeaders` ask for) and `Retry-After` (whole seconds, rounded
   * up); it sets the status and the body, and may change or remove those headers. It must answer
   * the request (Express: `res.status(429).json(...)`; Fastify: `reply.code(429).send(...)`). A
   * throw or a rejection goes to `next(error)` (Fastify: its error reply). Only refusals reach it:
   * a store outage under `fail-closed` is still answered `503`.
   * @default the RFC 9457 reply: 429, `Retry-After`, `urn:bulwark:problem:rate_limited`
   */
  readonly handler?: RateLimitHandler<Req, Res> | undefined;
  /** The wall clock `X-RateLimit-Reset` is stated on (the limiter keeps its own). @default systemClock */
  readonly clock?: Clock | undefined;
}

/**
 * What the adapter uses of a limiter (`rateLimiter()`, with its `rule`) or of limiters combined
 * (`rateLimiter.all()`, with its `rules`), whether `take` answers with a value or a promise.
 */
export interface Limiter {
  /** One limiter's rule, stated in the headers. */
  readonly rule?: RateLimitRule | undefined;
  /** A combined limiter's rules: each stated in `RateLimit-Policy`, the binding one in `RateLimit`. */
  readonly rules?: readonly RateLimitRule[] | undefined;
  take(key: string, cost: number): RateLimitResult | PromiseLike<RateLimitResult>;
}

/** Duck-typed, not instanceof: a limiter from another copy of bulwark works too. */
function limiterCheck(name: string, value: unknown): Limiter {
  const limiter = value as Partial<Limiter> | null | undefined;
  const rules = limiter?.rules;
  const stated =
    typeof limiter?.rule?.name === 'string' ||
    (Array.isArray(rules) && rules.length > 0 && rules.every((rule) => typeof rule?.name === 'string'));
  if (typeof limiter?.take !== 'function' || !stated) {
    throw new TypeError(
      `expected "${name}" to be a rate limiter from rateLimiter() or rateLimiter.all(), got ${show(value)}`,
    );
  }
  return limiter as Limiter;
}

/** Reads and checks `options` (a `TypeError` names a missing, bad or unknown option). */
export function readRateLimitHttpOptions<Req, Res>(
  options: RateLimitHttpOptions<Req, Res> | undefined,
  what: string,
) {
  const schema = {
    limiter: required(limiterCheck),
    key: required(func<(request: Req) => RateLimitKey | Promise<RateLimitKey>>()),
    skip: skipField<Req>(),
    cost: optional(func<(request: Req) => number>()),
    headers: withDefault(true, boolean),
    legacyHeaders: withDefault(false, boolean),
    handler: optional(func<RateLimitHandler<Req, Res>>()),
    clock: clockField,
  } satisfies Schema<RateLimitHttpOptions<Req, Res>>;
  return readAdapterOptions(what, options, schema);
}
