/**
 * Rate limiting at the HTTP edge: connect-style middleware for node:http and Express, and a Fastify
 * plugin. Thin adapters: the decision is the limiter's; this file only maps it to headers and
 * responses.
 *
 * - Every limited response carries `RateLimit-Policy` and `RateLimit` (IETF httpapi draft
 *   "RateLimit header fields for HTTP", draft-ietf-httpapi-ratelimit-headers-10):
 *   `RateLimit-Policy: "<name>";q=<limit>;w=<seconds>` and `RateLimit: "<name>";r=<remaining>;t=<seconds>`.
 * - A refusal is `429 Too Many Requests` with `Retry-After` (whole seconds, rounded up) and an RFC 9457
 *   problem+json body (`urn:bulwark:problem:rate_limited`, code `ERR_RATE_LIMITED`).
 * - The store down under `onStoreError: 'fail-closed'` is `503 Service Unavailable` (problem+json,
 *   code `ERR_STORE_UNAVAILABLE`), never a 429: the client did nothing wrong.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import { isStoreUnavailableError } from '../core/errors.js';
import { isThenable } from '../core/policy.js';
import { isFunction, optionKeys, optionsObject, show } from '../core/validate.js';
import { RateLimitedError } from '../rate-limit/errors.js';
import type { RateLimiter } from '../rate-limit/rate-limiter.js';
import type { RateLimitResult, RateLimitRule } from '../rate-limit/store.js';
import { overloadReplier } from './overload-reply.js';
import { type ProblemReply, problemReply, writeProblem } from './problem-response.js';

/**
 * What a key function may return. `undefined` is allowed by the type because request properties
 * (`req.ip`, `req.socket.remoteAddress`) are `string | undefined`, but at run time it is an error:
 * the request fails (500), it is never let through unlimited. Exempt requests with `skip`.
 */
export type RateLimitKey = string | undefined;

/** Options shared by {@link rateLimitMiddleware} and {@link fastifyRateLimit}. */
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
  readonly skip?: ((request: Req) => boolean | Promise<boolean>) | undefined;
  /** Units the request takes (e.g. by route weight). @default () => 1 */
  readonly cost?: ((request: Req) => number) | undefined;
  /** Send `RateLimit-Policy` and `RateLimit` headers. @default true */
  readonly headers?: boolean | undefined;
}

const rateLimitHttpOptionKeys = optionKeys<RateLimitHttpOptions<unknown>>({
  limiter: true,
  key: true,
  skip: true,
  cost: true,
  headers: true,
});

/** The headers of one decision, per the IETF draft (names in lower case, as Node sends them). */
export function rateLimitHeaders(rule: RateLimitRule, result: RateLimitResult): Record<string, string> {
  const headers: Record<string, string> = { 'ratelimit-policy': policyHeader(rule) };
  // A fail-open decision knows nothing about the quota: say nothing rather than something false.
  if (result.fallback !== 'fail-open') {
    headers.ratelimit = `"${rule.name}";r=${result.remaining};t=${Math.ceil(result.resetMs / 1000)}`;
  }
  return headers;
}

const policies = new WeakMap<RateLimitRule, string>();

/**
 * `"<name>";q=<quota>;w=<window seconds>`. The draft's window is a whole number of seconds: a period
 * that is not one is stated as the same rate over `ceil(periodMs / 1000)` seconds (10 per 500 ms →
 * `q=20;w=1`).
 */
function policyHeader(rule: RateLimitRule): string {
  let header = policies.get(rule);
  if (header === undefined) {
    const seconds = rule.periodMs / 1000;
    let q = rule.limit;
    let w = seconds;
    if (!Number.isInteger(seconds) || seconds < 1) {
      w = Math.ceil(seconds);
      q = Math.floor((rule.limit * w * 1000) / rule.periodMs);
    }
    header = `"${rule.name}";q=${q};w=${w}`;
    policies.set(rule, header);
  }
  return header;
}

interface Checked<Req> {
  readonly limiter: RateLimiter;
  readonly key: (request: Req) => RateLimitKey | Promise<RateLimitKey>;
  readonly skip: ((request: Req) => boolean | Promise<boolean>) | undefined;
  readonly cost: ((request: Req) => number) | undefined;
  readonly headers: boolean;
}

function check<Req>(options: RateLimitHttpOptions<Req>, what: string): Checked<Req> {
  const o = optionsObject(what, options, rateLimitHttpOptionKeys);
  // Duck-typed, not instanceof: a limiter from another copy of bulwark works too.
  const limiter = o.limiter as Partial<RateLimiter> | undefined;
  if (typeof limiter?.take !== 'function' || typeof limiter.rule?.name !== 'string') {
    throw new TypeError(`expected "limiter" to be a rate limiter from rateLimiter(), got ${show(o.limiter)}`);
  }
  const key = isFunction<(request: Req) => RateLimitKey | Promise<RateLimitKey>>('key', o.key);
  const skip =
    o.skip === undefined
      ? undefined
      : isFunction<(request: Req) => boolean | Promise<boolean>>('skip', o.skip);
  const cost = o.cost === undefined ? undefined : isFunction<(request: Req) => number>('cost', o.cost);
  if (o.headers !== undefined && typeof o.headers !== 'boolean') {
    throw new TypeError(`expected "headers" to be a boolean, got ${show(o.headers)}`);
  }
  return { limiter: limiter as RateLimiter, key, skip, cost, headers: o.headers ?? true };
}

/** What the adapters do with one request. */
type Verdict =
  | { readonly kind: 'pass'; readonly headers?: Record<string, string> }
  | { readonly kind: 'refuse'; readonly error: unknown; readonly headers?: Record<string, string> }
  | { readonly kind: 'unavailable'; readonly error: unknown }
  | { readonly kind: 'error'; readonly error: unknown };

const PASS: Verdict = { kind: 'pass' };

/**
 * The answer to a store failure under `fail-closed`: 503 with a jittered `Retry-After` (1–2 s), so
 * the clients refused during an outage do not all come back in the same second.
 */
const storeDown = overloadReplier({});

/** Runs `skip`, the key function and the limiter for one request; settles synchronously when they do. */
function decide<Req>(c: Checked<Req>, request: Req, done: (verdict: Verdict) => void): void {
  if (c.skip === undefined) {
    decideKey(c, request, done);
    return;
  }
  let skip: boolean | Promise<boolean>;
  try {
    skip = c.skip(request);
  } catch (error) {
    done({ kind: 'error', error });
    return;
  }
  if (isThenable<boolean>(skip)) {
    skip.then(
      (s) => afterSkip(c, request, s, done),
      (error: unknown) => done({ kind: 'error', error }),
    );
  } else afterSkip(c, request, skip, done);
}

function afterSkip<Req>(
  c: Checked<Req>,
  request: Req,
  skip: unknown,
  done: (verdict: Verdict) => void,
): void {
  if (skip === false) decideKey(c, request, done);
  else if (skip === true) done(PASS);
  else {
    done({
      kind: 'error',
      error: new TypeError(`expected the rate-limit "skip" function to return a boolean, got ${show(skip)}`),
    });
  }
}

function decideKey<Req>(c: Checked<Req>, request: Req, done: (verdict: Verdict) => void): void {
  let key: RateLimitKey | Promise<RateLimitKey>;
  try {
    key = c.key(request);
  } catch (error) {
    done({ kind: 'error', error });
    return;
  }
  if (isThenable<RateLimitKey>(key)) {
    key.then(
      (k) => take(c, request, k, done),
      (error: unknown) => done({ kind: 'error', error }),
    );
  } else take(c, request, key, done);
}

function badKey(key: unknown): TypeError {
  return new TypeError(
    key === undefined
      ? 'the rate-limit "key" function returned undefined for this request (req.socket.remoteAddress ' +
          'is undefined once the client hung up): a request without a key is refused, never let ' +
          'through unlimited; use "skip" to exempt requests'
      : `expected the rate-limit "key" function to return a non-empty string, got ${show(key)}`,
  );
}

function take<Req>(c: Checked<Req>, request: Req, key: RateLimitKey, done: (verdict: Verdict) => void): void {
  if (typeof key !== 'string' || key === '') {
    done({ kind: 'error', error: badKey(key) });
    return;
  }
  let decision: RateLimitResult | Promise<RateLimitResult>;
  try {
    decision = c.limiter.take(key, c.cost === undefined ? 1 : c.cost(request));
  } catch (error) {
    done({ kind: 'error', error });
    return;
  }
  const apply = (result: RateLimitResult): void => {
    const headers = c.headers ? rateLimitHeaders(c.limiter.rule, result) : undefined;
    if (result.allowed) done(headers === undefined ? PASS : { kind: 'pass', headers });
    else {
      const error = new RateLimitedError(key, result.retryAfterMs, {
        limit: result.limit,
        remaining: result.remaining,
      });
      done(headers === undefined ? { kind: 'refuse', error } : { kind: 'refuse', error, headers });
    }
  };
  if (isThenable<RateLimitResult>(decision)) {
    decision.then(apply, (error: unknown) =>
      // The store is down and the limiter fails closed: 503, not 429, and no RateLimit headers.
      done(isStoreUnavailableError(error) ? { kind: 'unavailable', error } : { kind: 'error', error }),
    );
  } else apply(decision);
}

/** The answer to a refusal: 429 with the RateLimit headers, or 503 for a store down (fail-closed). */
function refusal(
  verdict: Extract<Verdict, { kind: 'refuse' | 'unavailable' }>,
  url: string | undefined,
): ProblemReply {
  if (verdict.kind === 'unavailable') return storeDown.reply(verdict.error, url);
  return problemReply(verdict.error, {
    ...(url === undefined ? {} : { instance: url }),
    ...(verdict.headers === undefined ? {} : { headers: verdict.headers }),
  });
}

/** A connect-style middleware: `(req, res, next)`, as node:http handlers and Express use. */
export type RateLimitMiddleware<Req extends IncomingMessage = IncomingMessage> = (
  req: Req,
  res: ServerResponse,
  next: (error?: unknown) => void,
) => void;

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
): RateLimitMiddleware<Req> {
  const c = check(options, 'rateLimitMiddleware options');
  return (req, res, next) => {
    decide(c, req, (verdict) => {
      if (verdict.kind === 'error') {
        next(verdict.error);
        return;
      }
      if (verdict.kind === 'pass') {
        if (verdict.headers !== undefined)
          for (const name in verdict.headers) res.setHeader(name, verdict.headers[name]!);
        next();
        return;
      }
      writeProblem(res, refusal(verdict, req.url));
    });
  };
}

/** The parts of a Fastify request the plugin hands to `key`; it is the real Fastify request. */
export interface FastifyRequestLike {
  readonly url: string;
  readonly ip?: string | undefined;
  readonly headers: Record<string, string | string[] | undefined>;
  /** The node:http request (`request.raw.socket`, ...). */
  readonly raw: IncomingMessage;
}

/** The parts of a Fastify reply the plugin uses. */
export interface FastifyReplyLike {
  code(statusCode: number): FastifyReplyLike;
  header(name: string, value: string): FastifyReplyLike;
  send(payload?: unknown): FastifyReplyLike;
}

/** The parts of a Fastify instance the plugin uses. */
export interface FastifyInstanceLike {
  addHook(
    name: 'onRequest',
    hook: (request: never, reply: never, done: (error?: Error) => void) => void,
  ): unknown;
}

/** Options of {@link fastifyRateLimit}. */
export type FastifyRateLimitOptions<Req extends FastifyRequestLike = FastifyRequestLike> =
  RateLimitHttpOptions<Req>;

/**
 * The Fastify plugin: an `onRequest` hook with the same behaviour as {@link rateLimitMiddleware}.
 * It is not encapsulated (like plugins wrapped in `fastify-plugin`): registered on an instance it
 * limits every route of that instance and its children; register it inside a scoped plugin to limit
 * only that scope's routes.
 *
 * @example
 * app.register(fastifyRateLimit, { limiter, key: (request) => request.ip, skip: (request) => request.url === '/healthz' });
 */
export function fastifyRateLimit(
  fastify: FastifyInstanceLike,
  options: FastifyRateLimitOptions,
  done: (error?: Error) => void,
): void {
  let c: Checked<FastifyRequestLike>;
  try {
    c = check(options, 'fastifyRateLimit options');
  } catch (error) {
    done(error as Error);
    return;
  }
  const hook = (
    request: FastifyRequestLike,
    reply: FastifyReplyLike,
    next: (error?: Error) => void,
  ): void => {
    decide(c, request, (verdict) => {
      if (verdict.kind === 'error') {
        next(verdict.error instanceof Error ? verdict.error : new Error(String(verdict.error)));
        return;
      }
      if (verdict.kind === 'pass') {
        if (verdict.headers !== undefined)
          for (const name in verdict.headers) reply.header(name, verdict.headers[name]!);
        next();
        return;
      }
      const answer = refusal(verdict, request.url);
      reply.code(answer.status);
      for (const name in answer.headers) reply.header(name, answer.headers[name]!);
      reply.send(JSON.stringify(answer.body));
    });
  };
  fastify.addHook('onRequest', hook as never);
  done();
}
// What fastify-plugin sets: apply the hook to the registering instance, not a child context.
Object.defineProperty(fastifyRateLimit, Symbol.for('skip-override'), { value: true });
Object.defineProperty(fastifyRateLimit, Symbol.for('fastify.display-name'), { value: 'bulwark-rate-limit' });
