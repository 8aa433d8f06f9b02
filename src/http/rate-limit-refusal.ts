/**
 * The answer to a refused request: bulwark's RFC 9457 problem reply (429), or the user's
 * `handler` after the rate-limit headers and `Retry-After` are set.
 */
import { isThenable } from '../core/policy.js';
import { retryAfterSeconds } from '../core/retry-after.js';
import type { RateLimitedError } from '../rate-limit/errors.js';
import type { RateLimitResult } from '../rate-limit/store.js';
import type { Edge } from './edge.js';
import { problemReply } from './problem-response.js';

/** What a refusal `handler` is told about the refusal. */
export interface RateLimitRefusal {
  /**
   * The refusal as the error the default reply answers: `code` `ERR_RATE_LIMITED`, kind
   * `rate_limited`, `retryAfterMs`, `key`, `limit`, `remaining`. Its message never holds the key.
   */
  readonly error: RateLimitedError;
  /** The limiter's decision (`allowed: false`, `remaining`, `retryAfterMs`, `resetMs`, `limit`). */
  readonly result: RateLimitResult;
}

/**
 * The `handler` option of the rate-limit adapters: answers a refused request in place of the
 * default 429 problem reply. `response` is the framework's (a node:http `ServerResponse`, an
 * Express `Response`, a Fastify reply). It must answer the request; a throw or a rejection fails
 * it (`next(error)`, Fastify's error reply).
 *
 * @example
 * handler: (req: Request, res: Response, { error }) => {
 *   res.status(429).json({ message: 'Too many requests', retryInSeconds: Math.ceil(error.retryAfterMs / 1000) });
 * }
 */
export type RateLimitHandler<Req, Res> = (
  request: Req,
  response: Res,
  refusal: RateLimitRefusal,
) => void | Promise<void>;

/**
 * Answers a refusal: with no `handler`, the 429 problem reply carrying `headers`; with one, sets
 * `headers` and `Retry-After` on the response the framework's way, then runs it.
 */
export function refuse<Req extends { readonly url?: string | undefined }, Reply, Next>(
  handler: RateLimitHandler<Req, never> | undefined,
  refusal: RateLimitRefusal,
  headers: Readonly<Record<string, string>> | undefined,
  request: Req,
  reply: Reply,
  next: Next,
  edge: Edge<Reply, Next>,
): void {
  if (handler === undefined) {
    edge.answer(reply, problemReply(refusal.error, { instance: request.url, headers }));
    return;
  }
  const retryAfter = String(retryAfterSeconds(refusal.error.retryAfterMs));
  // The handler is where this request goes on: `proceed` sets the headers as the framework does
  // (Fastify's reply.headers, so the handler can read or remove them there), then calls it.
  const runHandler = (() => handle(handler, refusal, request, reply, next, edge)) as Next;
  edge.proceed(reply, runHandler, { ...headers, 'retry-after': retryAfter });
}

function handle<Req, Reply, Next>(
  handler: RateLimitHandler<Req, never>,
  refusal: RateLimitRefusal,
  request: Req,
  reply: Reply,
  next: Next,
  edge: Edge<Reply, Next>,
): void {
  let answered: unknown;
  try {
    // The edge's reply is the framework's response, the type the handler was declared with.
    answered = handler(request, reply as never, refusal);
  } catch (error) {
    edge.fail(next, error);
    return;
  }
  if (isThenable(answered)) answered.then(undefined, (error: unknown) => edge.fail(next, error));
}
