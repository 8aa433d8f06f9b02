/**
 * `bulwark/http`: thin adapters between bulwark's patterns and node:http, Express and Fastify. No
 * pattern logic lives here.
 */
export {
  type ProblemReply,
  type ProblemReplyOptions,
  problemReply,
  problemResponse,
} from './problem-response.js';
