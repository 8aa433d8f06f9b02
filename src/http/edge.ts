/**
 * How an adapter lets a request go on, answers it, or reports a bug, whatever the framework: one
 * {@link Edge} for node:http / Express and one for Fastify. Each is a single shared object whose
 * methods receive the framework's own reply and continuation, so nothing is allocated per request.
 */
import type { ServerResponse } from 'node:http';
import type { FastifyReplyLike } from './fastify-types.js';
import { type ProblemReply, writeProblem } from './problem-response.js';

/**
 * The framework side of one request, as an adapter sees it. `Reply` is the framework's response
 * object (`ServerResponse`, a Fastify reply); `Next` its continuation (`next`, Fastify's `done`).
 */
export interface Edge<Reply, Next> {
  /** The node:http response under `reply`: its `close` event (finished or client gone) ends a hold. */
  response(reply: Reply): ServerResponse;
  /** Continues to the route handlers, after setting `headers` (when given) on the response. */
  proceed(reply: Reply, next: Next, headers?: Readonly<Record<string, string>>): void;
  /**
   * Answers the request with `answer` (a refusal from `problemReply` or an overload replier): its
   * status, headers and problem+json body. The handlers never run. A node:http response whose
   * headers were already sent is only ended.
   */
  answer(reply: Reply, answer: ProblemReply): void;
  /**
   * Hands `error` (a throwing or misbehaving user function, a bad key) to the framework: Express's
   * error handler or `next(error)` for node:http; Fastify's error reply (a non-`Error` is wrapped).
   */
  fail(next: Next, error: unknown): void;
}

/** The continuation of a connect-style middleware. */
export type NodeNext = (error?: unknown) => void;

/** The continuation of a Fastify hook. */
export type FastifyNext = (error?: Error) => void;

/** node:http and Express: headers on the `ServerResponse`, `next()` to go on, `next(error)` to fail. */
export const nodeEdge: Edge<ServerResponse, NodeNext> = {
  response: (res) => res,
  proceed(res, next, headers) {
    // Stryker disable next-line ConditionalExpression: (true) a for-in over undefined runs no iteration
    if (headers !== undefined) for (const name in headers) res.setHeader(name, headers[name]!);
    next();
  },
  answer: writeProblem,
  fail: (next, error) => next(error),
};

/** Fastify: headers through `reply.headers`, `done()` to go on, `done(error)` to fail. */
export const fastifyEdge: Edge<FastifyReplyLike, FastifyNext> = {
  response: (reply) => reply.raw,
  proceed(reply, done, headers) {
    if (headers !== undefined) reply.headers(headers);
    done();
  },
  answer(reply, { status, headers, body }) {
    reply.code(status).headers(headers).send(JSON.stringify(body));
  },
  fail: (done, error) => done(error instanceof Error ? error : new Error(String(error))),
};
