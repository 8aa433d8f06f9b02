/**
 * The parts of Fastify the adapters use, as structural types: bulwark's declarations compile
 * without fastify installed, and the real `FastifyInstance`, `FastifyRequest` and `FastifyReply`
 * fit them. One set for every adapter.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';

/**
 * The parts of a Fastify request the adapters read and hand to your functions (`key`, `skip`,
 * `priority`, a bulkhead selector); the real `FastifyRequest` fits.
 */
export interface FastifyRequestLike {
  readonly url: string;
  readonly method: string;
  /** The client address as Fastify sees it (mind `trustProxy`). */
  readonly ip?: string | undefined;
  readonly headers: Readonly<Record<string, string | string[] | undefined>>;
  /** The matched route's options: `config` is where a route can declare its priority or tier. */
  readonly routeOptions: { readonly config: unknown; readonly url?: string | undefined };
  /** The node:http request (`request.raw.socket`, ...). */
  readonly raw: IncomingMessage;
}

/** The parts of a Fastify reply the adapters use. */
export interface FastifyReplyLike {
  /** The node:http response: its `close` event ends what an adapter holds for the request. */
  readonly raw: ServerResponse;
  code(statusCode: number): FastifyReplyLike;
  headers(values: Readonly<Record<string, string>>): FastifyReplyLike;
  send(payload?: unknown): FastifyReplyLike;
}

/**
 * The parts of a Fastify instance the adapters use: `onRequest` hooks, and `preHandler` hooks for
 * an adapter that needs the parsed body (idempotency).
 */
export interface FastifyInstanceLike {
  addHook(
    name: 'onRequest',
    hook: (request: never, reply: never, done: (error?: Error) => void) => void,
  ): unknown;
  addHook(
    name: 'preHandler',
    hook: (request: never, reply: never, done: (error?: Error) => void) => void,
  ): unknown;
}

/**
 * A Fastify plugin (callback style) taking options `O`: pass it to `app.register(plugin, options)`.
 * Every `bulwark/http` plugin is one and behaves alike: it adds an `onRequest` hook (`preHandler`
 * for idempotency, which needs the parsed body) with the same behaviour as its middleware, and it
 * is not encapsulated (as `fastify-plugin` would make it), so registered on an instance it covers
 * every route of that instance and its children, registered inside a scoped plugin only that
 * scope's. A bad option fails the registration (`app.ready()`
 * rejects with the `TypeError`). Fastify shows it as `bulwark-<adapter>` (`bulwark-rate-limit`).
 */
export type FastifyPluginLike<O> = (
  instance: FastifyInstanceLike,
  options: O,
  done: (error?: Error) => void,
) => void;
