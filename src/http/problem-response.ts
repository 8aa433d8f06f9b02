import type { ServerResponse } from 'node:http';
import { type Problem, toProblem } from '../core/http-status.js';

/** A refusal or failure as an HTTP answer: status, headers and an RFC 9457 body. */
export interface ProblemReply {
  readonly status: number;
  /** `content-type: application/problem+json`, plus `retry-after` (whole seconds) when known. */
  readonly headers: Readonly<Record<string, string>>;
  readonly body: Problem;
}

/** Options of {@link problemReply} and {@link problemResponse}. */
export interface ProblemReplyOptions {
  /** The request path, reported as the problem's `instance`. */
  readonly instance?: string;
  /** Extra headers to send (e.g. `RateLimit`). */
  readonly headers?: Readonly<Record<string, string>>;
}

/**
 * Builds the HTTP answer for any error, framework-free: the status from its kind
 * (`toHttpStatus(classify(error))`), a problem+json body from `toProblem`, and `Retry-After` in
 * whole seconds (rounded up, at least 1) when the error says how long to wait. Never throws on
 * hostile errors.
 *
 * @example
 * const { status, headers, body } = problemReply(error, { instance: req.url });
 */
export function problemReply(error: unknown, options: ProblemReplyOptions = {}): ProblemReply {
  const body = toProblem(error, options.instance === undefined ? {} : { instance: options.instance });
  const headers: Record<string, string> = { 'content-type': 'application/problem+json', ...options.headers };
  if (body.retryAfterMs !== undefined)
    headers['retry-after'] = String(Math.max(1, Math.ceil(body.retryAfterMs / 1000)));
  return { status: body.status, headers, body };
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
  if (res.headersSent) {
    res.end();
    return;
  }
  const { status, headers, body } = problemReply(error, options);
  res.writeHead(status, headers);
  res.end(JSON.stringify(body));
}
