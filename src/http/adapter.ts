/**
 * The HTTP kit every adapter in `bulwark/http` is built on: one request handler per adapter, turned
 * into a connect-style middleware (node:http, Express) by {@link connectMiddleware} and into a
 * Fastify plugin by {@link fastifyPlugin}.
 *
 * ## Writing an adapter
 *
 * An adapter provides one function, `build(options, what)`, that reads its options and returns a
 * {@link RequestHandler}; the kit does the rest. The idempotency adapter, say, is that function and
 * two exports.
 *
 * 1. **Read the options** with `readAdapterOptions(what, options, schema)` (adapter-options.ts), a
 *    read-options `Schema`: a missing options object, an unknown key or a bad value is a
 *    `TypeError` naming it. Declare `skip` with `skipField(default)` (skip.ts) and, if the adapter
 *    answers overload refusals, spread `overloadReplyFields` (`retryAfterMs`, `jitter`, `random`)
 *    into the schema and answer with `overloadReplier(read)`.
 * 2. **Decide per request** in the handler. It receives the request, the framework's reply and
 *    continuation, and the {@link Edge} to use with them: `edge.proceed(reply, next, headers?)` to
 *    go on, `edge.answer(reply, problemReply(...))` to refuse (every 429 and 503 then carries a
 *    whole-second `Retry-After`), `edge.fail(next, error)` for a bug (500). Ask the user's request
 *    functions (`key`, a selector) with `asking(question, waits, then)` (ask.ts): a throw or a
 *    rejection fails the request, the answer (`unknown`: check it) goes to `then`. To hold
 *    something until the response closes, listen on `edge.response(reply)`'s `close` (hold-slot.ts
 *    holds a policy's slot that way).
 * 3. **Exempt** with `skipping(skip, handler)` (skip.ts): `skip(req) === true` passes the request
 *    on untouched, a promise is waited for, anything but a boolean fails it.
 * 4. **Export** `xMiddleware = (options) => connectMiddleware(build(options, 'xMiddleware options'))`
 *    (typed `Middleware<Req>`) and `fastifyX = fastifyPlugin('fastifyX', build)` (a
 *    `FastifyPluginLike<XOptions<FastifyRequestLike>>`, shown by Fastify as `bulwark-x`).
 *
 * The adapter keeps no pattern logic: the pattern decides, the adapter maps the decision to HTTP.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import { type Edge, type FastifyNext, fastifyEdge, type NodeNext, nodeEdge } from './edge.js';
import type { FastifyPluginLike, FastifyReplyLike, FastifyRequestLike } from './fastify-types.js';

/**
 * A connect-style middleware: `(req, res, next)`. Works with node:http (call it yourself, then run
 * your handler in `next`) and Express (`app.use`). It calls `next()` to go on, `next(error)` for a
 * bug (Express's error handler answers 500), or answers the request itself.
 */
export type Middleware<Req extends IncomingMessage = IncomingMessage> = (
  request: Req,
  response: ServerResponse,
  next: NodeNext,
) => void;

/**
 * What an adapter does with one request: go on, answer or fail it through `edge` (see the module
 * documentation). Generic in the framework, so one handler serves the middleware and the plugin.
 */
export type RequestHandler<Req> = <Reply, Next>(
  request: Req,
  reply: Reply,
  next: Next,
  edge: Edge<Reply, Next>,
) => void;

/** The connect-style middleware running `handle` for each request. */
export function connectMiddleware<Req extends IncomingMessage>(handle: RequestHandler<Req>): Middleware<Req> {
  return function bulwarkMiddleware(request, response, next) {
    handle(request, response, next, nodeEdge);
  };
}

/**
 * The Fastify plugin `name` (`'fastifyRateLimit'`): its `onRequest` hook (or `hook`: `'preHandler'`
 * for an adapter that needs the parsed body) runs the handler `build(options, '<name> options')`
 * returns. The options are read at registration: a `TypeError` from `build` fails it
 * (`app.ready()` rejects). The plugin is not encapsulated (it carries
 * `Symbol.for('skip-override')`, as `fastify-plugin` sets): registered on an instance it covers
 * every route of that instance and its children; registered inside a scoped plugin, only that
 * scope. Fastify shows it as `bulwark-<name without "fastify", kebab-case>` (`bulwark-rate-limit`).
 */
export function fastifyPlugin<O>(
  name: string,
  build: (options: O | undefined, what: string) => RequestHandler<FastifyRequestLike>,
  hook: 'onRequest' | 'preHandler' = 'onRequest',
): FastifyPluginLike<O> {
  const what = `${name} options`;
  const plugin: FastifyPluginLike<O> = (instance, options, done) => {
    let handle: RequestHandler<FastifyRequestLike>;
    try {
      handle = build(options, what);
    } catch (error) {
      done(error as Error);
      return;
    }
    const run = (request: FastifyRequestLike, reply: FastifyReplyLike, hookDone: FastifyNext): void => {
      handle(request, reply, hookDone, fastifyEdge);
    };
    // The cast: Fastify's own hook types are richer than the structural ones.
    if (hook === 'preHandler') instance.addHook('preHandler', run as never);
    else instance.addHook('onRequest', run as never);
    done();
  };
  // Stryker disable next-line Regex: every plugin name starts with "fastify" (fastifyRateLimit, ...), so the first match is the leading one
  const displayName = `bulwark${name.replace(/^fastify/, '').replace(/[A-Z]/g, (c) => `-${c.toLowerCase()}`)}`;
  Object.defineProperty(plugin, Symbol.for('skip-override'), { value: true });
  Object.defineProperty(plugin, Symbol.for('fastify.display-name'), { value: displayName });
  return plugin;
}
