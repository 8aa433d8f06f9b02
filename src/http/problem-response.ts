import type { ServerResponse } from 'node:http';
import { type Problem, toProblem } from '../core/http-status.js';
import { retryAfterSeconds } from '../core/retry-after.js';
import { nonNegative, optionKeys, refuseUnknownKeys } from '../core/validate.js';

/** A refusal or failure as an HTTP answer: status, headers and an RFC 9457 body. */
export interface ProblemReply {
  readonly status: number;
  /**
   * `content-type: application/problem+json`, `retry-after` (whole seconds) on every 429 and 503
   * and on other transient answers whose error says how long to wait, plus the extra headers given.
   */
  readonly headers: Readonly<Record<string, string>>;
  /** The problem details; its `retryAfterMs` is the `Retry-After` header × 1000 when one is sent. */
  readonly body: Problem;
}

/** Options of {@link problemReply} and {@link problemResponse}. */
export interface ProblemReplyOptions {
  /** The request path, reported as the problem's `instance`. */
  readonly instance?: string | undefined;
  /** Extra headers to send (e.g. `RateLimit`). */
  readonly headers?: Readonly<Record<string, string>> | undefined;
  /**
   * The wait a 429 or 503 advertises when its error does not say (a store outage, an isolated
   * breaker): RFC 9110 and RFC 6585 expect `Retry-After` there, and a client told nothing retries at
   * once. A non-negative finite number of milliseconds.
   * @default 1_000
   */
  readonly retryAfterMs?: number | undefined;
}

// Stryker disable next-line BooleanLiteral: optionKeys reads only the keys; each value is the type's required `true`
const replyKeys = optionKeys<ProblemReplyOptions>({ instance: true, headers: true, retryAfterMs: true });

/** The wait a 429 or 503 advertises when its error does not say. */
const DEFAULT_RETRY_AFTER_MS = 1_000;

/**
 * Builds the HTTP answer for any error, framework-free: the status from its kind
 * (`toHttpStatus(classify(error))`), a problem+json body from `toProblem` (which never shows an
 * internal message: see `toProblem`), and `Retry-After`. The header is whole seconds, rounded up,
 * from 1 to 86 400 (24 h; an upstream's larger value is clamped, never echoed); every 429 and 503
 * has one (`options.retryAfterMs` when the error gives none), other transient statuses (504) only
 * when the error gives one; the body's `retryAfterMs` is the header × 1000.
 *
 * Never throws on hostile errors; throws a `TypeError` for a bad `options.retryAfterMs`.
 *
 * @example
 * const { status, headers, body } = problemReply(error, { instance: req.url });
 * reply.code(status).headers(headers).send(body);
 */
export function problemReply(error: unknown, options: ProblemReplyOptions = {}): ProblemReply {
  refuseUnknownKeys('problemReply options', options, replyKeys);
  const fallbackMs =
    options.retryAfterMs === undefined
      ? DEFAULT_RETRY_AFTER_MS
      : nonNegative('retryAfterMs', options.retryAfterMs);
  const body = toProblem(error, { instance: options.instance });
  const waitMs = body.retryAfterMs ?? (body.status === 429 || body.status === 503 ? fallbackMs : undefined);
  return problemAnswer(body, options.headers, waitMs);
}

/**
 * The answer carrying `body`: problem+json, the extra headers, and for a `waitMs` the `Retry-After`
 * of {@link retryAfterSeconds} with the body's `retryAfterMs` set to match. Shared by every adapter,
 * so the header is computed in one place.
 */
export function problemAnswer(
  body: Problem,
  extraHeaders: Readonly<Record<string, string>> | undefined,
  waitMs: number | undefined,
): ProblemReply {
  const headers: Record<string, string> = { 'content-type': 'application/problem+json', ...extraHeaders };
  if (waitMs === undefined) return { status: body.status, headers, body };
  const seconds = retryAfterSeconds(waitMs);
  headers['retry-after'] = String(seconds);
  return { status: body.status, headers, body: { ...body, retryAfterMs: seconds * 1000 } };
}

/**
 * Answers a node:http / Express response with {@link problemReply}: status, `Retry-After`,
 * `content-type: application/problem+json` and the JSON body. If headers were already sent it only
 * ends the response (nothing else can be said by then).
 *
 * @example
 * try { await handle(req, res); } catch (error) { problemResponse(res, error); }
 */
export function problemResponse(
  res: ServerResponse,
  error: unknown,
  options: ProblemReplyOptions = {},
): void {
  if (res.headersSent) res.end();
  else writeProblem(res, problemReply(error, options));
}

/**
 * Writes a built answer to a node:http / Express response: status, headers and the JSON body; if
 * headers were already sent it only ends the response. Shared by the adapters.
 */
export function writeProblem(res: ServerResponse, answer: ProblemReply): void {
  if (res.headersSent) {
    res.end();
    return;
  }
  res.writeHead(answer.status, answer.headers);
  res.end(JSON.stringify(answer.body));
}
