/**
 * `bulwark/http`: thin adapters between bulwark's patterns and node:http, Express and Fastify. No
 * pattern logic lives here. Every adapter is built on one kit (adapter.ts): one `Middleware` type,
 * one set of structural Fastify types, one way to expose a plugin, `skip(req)` to exempt requests.
 */

export type { Middleware } from './adapter.js';
export {
  type BulkheadMiddlewareOptions,
  bulkheadMiddleware,
  fastifyBulkhead,
} from './bulkhead.js';
export {
  type BulkheadRouteHandler,
  bulkheadHandler,
  type FastifyBulkheadRouteHandler,
  fastifyBulkheadHandler,
} from './bulkhead-handler.js';
export type {
  FastifyInstanceLike,
  FastifyPluginLike,
  FastifyReplyLike,
  FastifyRequestLike,
} from './fastify-types.js';
export { idempotencyMiddleware } from './idempotency.js';
export type { StoredResponse } from './idempotency-capture.js';
export { fastifyIdempotency } from './idempotency-fastify.js';
export { DEFAULT_REPLAY_HEADERS, type IdempotencyHttpOptions } from './idempotency-options.js';
export { type IpKeyOptions, type IpKeyRequest, ipKey } from './ip-key.js';
export {
  fastifyLoadShedding,
  type LoadSheddingOptions,
  loadSheddingMiddleware,
  type PriorityAdmitter,
} from './load-shedding.js';
export type { OverloadReplyOptions } from './overload-reply.js';
export {
  type ProblemReply,
  type ProblemReplyOptions,
  problemReply,
  problemResponse,
} from './problem-response.js';
export { fastifyRateLimit, rateLimitMiddleware } from './rate-limit.js';
export { legacyRateLimitHeaders, rateLimitHeaders } from './rate-limit-headers.js';
export type { RateLimitHttpOptions, RateLimitKey } from './rate-limit-options.js';
export type { RateLimitHandler, RateLimitRefusal } from './rate-limit-refusal.js';
export { isHealthCheck, type Skip } from './skip.js';
