/**
 * The HTTP answer to an admission refusal (load shed, bulkhead full): 503 problem+json with a
 * jittered `Retry-After`, so refused clients do not all come back in the same second. Shared by the
 * load-shedding and bulkhead adapters; also the default request exemption (health checks).
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import { toProblem } from '../core/http-status.js';
import { isTransientKind } from '../core/kind.js';
import { isThenable } from '../core/policy.js';
import { cryptoRandom, type Random } from '../core/random.js';
import { isFunction, nonNegative, optionsObject, show } from '../core/validate.js';
import { type ProblemReply, problemAnswer, writeProblem } from './problem-response.js';

/** How refusals are answered. */
export interface OverloadReplyOptions {
  /**
   * The base `Retry-After` when the refusal does not carry its own `retryAfterMs` (a bulkhead's
   * does not; a load shedder's does).
   * @default 1_000
   */
  readonly retryAfterMs?: number | undefined;
  /**
   * Spread added on top of the base, as a fraction of it: `Retry-After` is a whole number of seconds
   * drawn uniformly from `⌈base⌉` to `⌈base⌉ + ⌈base × jitter⌉` (never less than the base, at least
   * 1). 0 turns jitter off.
   * @default 0.5
   */
  readonly jitter?: number | undefined;
  /** Randomness for the jitter. @default crypto-backed */
  readonly random?: Random | undefined;
}

/** Validated {@link OverloadReplyOptions}. */
export interface OverloadReplier {
  /** The answer to `error`: its status and problem body, with a jittered `Retry-After` when transient. */
  reply(error: unknown, instance: string | undefined): ProblemReply;
  /** Writes {@link OverloadReplier.reply} to a node:http / Express response (only ends it if headers were sent). */
  send(res: ServerResponse, error: unknown, instance: string | undefined): void;
}

/** Validates the refusal options of an adapter; throws a `TypeError` naming a bad one. */
export function overloadReplier(options: OverloadReplyOptions): OverloadReplier {
  const baseMs = nonNegative('retryAfterMs', options.retryAfterMs ?? 1_000);
  const jitter = nonNegative('jitter', options.jitter ?? 0.5);
  const random = options.random === undefined ? cryptoRandom : isFunction<Random>('random', options.random);
  const reply = (error: unknown, instance: string | undefined): ProblemReply => {
    const body = toProblem(error, instance === undefined ? {} : { instance });
    if (!isTransientKind(body.kind)) return problemAnswer(body, undefined, undefined);
    const base = body.retryAfterMs ?? baseMs; // toProblem clamps the error's own wait to 24 h
    const spread = Math.ceil((base * jitter) / 1000);
    let extra = Math.floor(random() * (spread + 1));
    if (!(extra >= 0 && extra <= spread)) extra = 0; // a broken random source means no jitter
    return problemAnswer(body, undefined, (Math.ceil(base / 1000) + extra) * 1000);
  };
  return {
    reply,
    send(res, error, instance) {
      if (res.headersSent) res.end();
      else writeProblem(res, reply(error, instance));
    },
  };
}

const healthPath = /^\/(?:health|healthz|ready|readyz|live|livez)(?:[/?#]|$)/;

/**
 * The default `exempt` of the admission adapters: true for health, readiness and liveness probes,
 * which must never be shed or queued (an orchestrator that sees them fail restarts a process that
 * is merely busy). Matches a request URL whose path is `/health`, `/healthz`, `/ready`, `/readyz`,
 * `/live` or `/livez`, or lies under one of them (`/health/db`), with any query string and method.
 *
 * @example
 * exempt: (req) => isHealthCheck(req) || req.url === '/metrics'
 */
export function isHealthCheck(request: { readonly url?: string | undefined }): boolean {
  const url = request.url;
  return typeof url === 'string' && healthPath.test(url);
}

/**
 * Asks an adapter's `exempt` about one request. Its answer must be a boolean: anything else (a
 * promise from an async function is truthy, so it would exempt every request) is a `TypeError`,
 * which the adapters hand to `next(error)`.
 */
export function isExempt<Req>(exempt: (request: Req) => boolean, request: Req): boolean {
  const answer: unknown = exempt(request);
  if (typeof answer === 'boolean') return answer;
  throw new TypeError(
    `expected "exempt" to return a boolean, got ${isThenable(answer) ? 'a promise (exempt decides synchronously)' : show(answer)}`,
  );
}

/** Reads the options object shared by the adapters. */
export function adapterOptions<O extends object>(
  name: string,
  options: O | undefined,
  known: ReadonlySet<string>,
): Partial<O> {
  if (options === undefined) throw new TypeError(`expected "${name}" to be an options object, got undefined`);
  return optionsObject(name, options, known);
}

/**
 * The parts of a Fastify request the admission plugins use and hand to your functions; the real
 * `FastifyRequest` fits. (Structural, so bulwark's declarations do not need fastify installed.)
 */
export interface FastifyAdmissionRequest {
  readonly url: string;
  readonly method: string;
  readonly headers: Readonly<Record<string, string | string[] | undefined>>;
  /** The matched route's options: `config` is where a route can declare its priority. */
  readonly routeOptions: { readonly config: unknown; readonly url?: string | undefined };
  readonly raw: IncomingMessage;
}

/** The parts of a Fastify reply the admission plugins use. */
export interface FastifyAdmissionReply {
  readonly raw: ServerResponse;
  code(statusCode: number): FastifyAdmissionReply;
  headers(values: Record<string, string>): FastifyAdmissionReply;
  send(payload?: unknown): FastifyAdmissionReply;
}

/** The parts of a Fastify instance the admission plugins use. */
export interface FastifyAdmissionInstance {
  addHook(
    name: 'onRequest',
    hook: (request: never, reply: never, done: (error?: Error) => void) => void,
  ): unknown;
}

/** A Fastify plugin (callback style) taking options `O`; pass it to `app.register`. */
export type FastifyAdmissionPlugin<O> = (
  instance: FastifyAdmissionInstance,
  options: O,
  done: (error?: Error) => void,
) => void;

/** The `onRequest` hook of an admission plugin, typed with the structural request and reply. */
export type FastifyAdmissionHook = (
  request: FastifyAdmissionRequest,
  reply: FastifyAdmissionReply,
  done: (error?: Error) => void,
) => void;

/** Adds an admission hook (the cast: Fastify's own hook types are richer than ours). */
export function addAdmissionHook(instance: FastifyAdmissionInstance, hook: FastifyAdmissionHook): void {
  instance.addHook('onRequest', hook as never);
}

/** Answers a refusal from a Fastify hook. */
export function fastifyRefuse(
  replier: OverloadReplier,
  reply: FastifyAdmissionReply,
  error: unknown,
  url: string,
): void {
  const { status, headers, body } = replier.reply(error, url);
  reply.code(status).headers(headers).send(JSON.stringify(body));
}

/** Marks a plugin to share its hooks with the context that registers it (what `fastify-plugin` does). */
export function exposePlugin<P extends object>(plugin: P, name: string): P {
  Object.defineProperty(plugin, Symbol.for('skip-override'), { value: true });
  Object.defineProperty(plugin, Symbol.for('fastify.display-name'), { value: name });
  return plugin;
}
