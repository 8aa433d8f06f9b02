/**
 * `bulwark/http`: thin adapters between bulwark's patterns and node:http, Express and Fastify. No
 * pattern logic lives here.
 */

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
export {
  fastifyLoadShedding,
  type LoadSheddingOptions,
  loadSheddingMiddleware,
  type Middleware,
  type PriorityAdmitter,
} from './load-shedding.js';
export {
  type FastifyAdmissionPlugin,
  type FastifyAdmissionRequest,
  isHealthCheck,
  type OverloadReplyOptions,
} from './overload-reply.js';
export {
  type ProblemReply,
  type ProblemReplyOptions,
  problemReply,
  problemResponse,
} from './problem-response.js';
export {
  type FastifyInstanceLike,
  type FastifyRateLimitOptions,
  type FastifyReplyLike,
  type FastifyRequestLike,
  fastifyRateLimit,
  type RateLimitHttpOptions,
  type RateLimitKey,
  type RateLimitMiddleware,
  rateLimitHeaders,
  rateLimitMiddleware,
} from './rate-limit.js';
