/**
 * The HTTP edge of the error vocabulary: a {@link Kind} as a status code and back, and any error as
 * an RFC 9457 problem details object. `http/` adapters build responses from these; nothing here
 * touches a request or response.
 */
import { classify, httpStatusKind } from './classify.js';
import { get, isObject } from './error-walk.js';
import { isResilienceError, type ResilienceError } from './errors.js';
import { isTransientKind, type Kind, kinds } from './kind.js';
import { clampRetryAfterMs, retryAfterOf } from './retry-after.js';
import { optionKeys, refuseUnknownKeys, show } from './validate.js';

const statuses: Readonly<Record<Kind, number>> = {
  invalid: 400,
  unauthorized: 401,
  forbidden: 403,
  not_found: 404,
  conflict: 409,
  rate_limited: 429,
  canceled: 499,
  internal: 500,
  unavailable: 503,
  overloaded: 503,
  timeout: 504,
  transient: 503,
};

/**
 * The HTTP status to answer with for a failure of this kind: `invalid` 400, `unauthorized` 401,
 * `forbidden` 403, `not_found` 404, `conflict` 409, `rate_limited` 429, `canceled` 499 (nginx's
 * "client closed request"), `internal` 500, `unavailable`/`overloaded`/`transient` 503,
 * `timeout` 504.
 *
 * Throws a `TypeError` for anything that is not a {@link Kind}.
 *
 * @example
 * res.statusCode = toHttpStatus(classify(error));
 */
export function toHttpStatus(kind: Kind): number {
  const status = Object.hasOwn(statuses, kind) ? statuses[kind] : undefined;
  if (status === undefined) {
    throw new TypeError(
      `expected "kind" to be one of ${kinds.map((k) => `"${k}"`).join(', ')}, got ${show(kind)}`,
    );
  }
  return status;
}

/**
 * The {@link Kind} of an HTTP error response's status, for clients that turn a non-2xx response into
 * an error: 408/504 `timeout`, 429 `rate_limited`, 502/503 `unavailable`, 421/425 `transient`,
 * 401/407/511 `unauthorized`, 402/403/451 `forbidden`, 404/410 `not_found`, 409/412/423 `conflict`,
 * 499 `canceled`, other 4xx `invalid`, 500/501 and other 5xx `internal` (plus a few common
 * non-standard 5xx; the full table is in `docs/errors.md`).
 *
 * Only error statuses have a kind. Throws a `TypeError` for anything that is not an integer from
 * 400 to 599: a 1xx, 2xx or 3xx is not a failure, and mapping it to some kind would hide the
 * caller's bug (it checked the wrong thing) behind a plausible-looking answer (`classify()` reads
 * statuses on errors the same way and ignores non-error ones).
 *
 * @example
 * const res = await fetch(url, { signal });
 * if (!res.ok) throw new ResilienceError(`GET ${url}: ${res.status}`, { code: 'ERR_UPSTREAM', kind: fromHttpStatus(res.status) });
 */
export function fromHttpStatus(status: number): Kind {
  const kind = httpStatusKind(status);
  if (kind === undefined) {
    throw new TypeError(
      `expected "status" to be an HTTP error status (an integer from 400 to 599), got ${show(status)}`,
    );
  }
  return kind;
}

/**
 * An RFC 9457 problem details object, ready for `JSON.stringify` as `application/problem+json`.
 * `code`, `kind` and `retryAfterMs` are extension members.
 */
export interface Problem {
  /** A stable URI for the kind of problem: `urn:bulwark:problem:<kind>`. */
  readonly type: string;
  /** A short summary that is the same for every problem of this `type`. */
  readonly title: string;
  /** The HTTP status: `toHttpStatus(kind)`. */
  readonly status: number;
  /** A human-readable explanation of this occurrence, safe to show to a client. */
  readonly detail: string;
  /** bulwark's stable error code (`ERR_RATE_LIMITED`), only for bulwark's own errors. */
  readonly code?: string | undefined;
  /** What kind of failure this is (see `classify`). */
  readonly kind: Kind;
  /**
   * How long the client should wait before retrying, for transient kinds when known: whole
   * milliseconds, at most 24 h.
   */
  readonly retryAfterMs?: number | undefined;
  /** A URI reference for this occurrence, when the caller passed one. */
  readonly instance?: string | undefined;
}

/** Options for {@link toProblem}. */
export interface ToProblemOptions {
  /** A URI reference identifying this occurrence (for example the request path or a request id). */
  readonly instance?: string | undefined;
  /**
   * The current time, needed only to read a `Retry-After` header given as an HTTP-date. Without it
   * only delay-seconds headers and `retryAfterMs` are read.
   */
  readonly nowMs?: number | undefined;
}

// Stryker disable next-line BooleanLiteral: optionKeys reads only the keys (the type asks for `true`)
const toProblemOptionKeys = optionKeys<ToProblemOptions>({ instance: true, nowMs: true });

const titles: Readonly<Record<Kind, string>> = {
  transient: 'Temporary failure',
  timeout: 'Timed out',
  unavailable: 'Service unavailable',
  rate_limited: 'Too many requests',
  overloaded: 'Overloaded',
  invalid: 'Invalid request',
  unauthorized: 'Unauthorized',
  forbidden: 'Forbidden',
  not_found: 'Not found',
  conflict: 'Conflict',
  canceled: 'Canceled',
  internal: 'Internal error',
};

const details: Readonly<Record<Kind, string>> = {
  transient: 'A temporary failure occurred; the request may succeed if retried.',
  timeout: 'The operation did not complete in time.',
  unavailable: 'A service needed to handle the request is unavailable.',
  rate_limited: 'Too many requests; slow down and retry later.',
  overloaded: 'The service is overloaded; retry later.',
  invalid: 'The request is not valid.',
  unauthorized: 'Authentication is required or has failed.',
  forbidden: 'The request is not allowed.',
  not_found: 'The requested resource was not found.',
  conflict: 'The request conflicts with the current state of the resource.',
  canceled: 'The request was canceled.',
  internal: 'An internal error occurred.',
};

/**
 * The message of an error marked `expose: true` (bulwark's `ResilienceError` option, and the
 * `http-errors` convention of Express and Koa), or undefined. Only the error itself is read, never
 * its causes: a cause's message is not the wrapper's to show.
 */
function exposedMessage(error: unknown): string | undefined {
  if (!isObject(error) || get(error, 'expose') !== true) return undefined;
  const message = get(error, 'message');
  return typeof message === 'string' && message !== '' ? message : undefined;
}

/**
 * The attempts of a retry policy's `RetriesExhaustedError` (code `ERR_RETRIES_EXHAUSTED`, defined in
 * retry/errors.ts, which core does not import), or undefined for any other error.
 */
function givenUpAfter(error: ResilienceError): number | undefined {
  if (error.code !== 'ERR_RETRIES_EXHAUSTED') return undefined;
  const attempts = (error as { readonly attempts?: unknown }).attempts;
  return typeof attempts === 'number' ? attempts : undefined;
}

/** Our error's code and the detail to show, or undefined for a foreign error. */
function ownDetail(error: unknown, kind: Kind): { code: string; detail: string } | undefined {
  try {
    if (!isResilienceError(error)) return undefined;
    const code = typeof error.code === 'string' ? error.code : 'ERR_UNKNOWN';
    const n = givenUpAfter(error);
    if (n !== undefined) {
      // Its message quotes the last error's message, which is foreign: keep only our part.
      return { code, detail: `${details[kind]} Gave up after ${n} attempt${n === 1 ? '' : 's'}.` };
    }
    return { code, detail: exposedMessage(error) ?? details[kind] };
  } catch {
    // a hostile object: describe it as a foreign one
  }
  return undefined;
}

/**
 * Describes any error as an RFC 9457 problem details object: `type` is
 * `urn:bulwark:problem:<kind>` (a URN, so it points at no web host), `title` a fixed summary per
 * kind, `status` is `toHttpStatus(classify(error))`, `kind` the kind.
 *
 * What reaches the client, decided so that nothing internal leaks by default: `detail` is the
 * error's own message only when the error is marked `expose: true`, otherwise a generic sentence for
 * its kind. Causes are never read for the detail.
 * - bulwark's refusals whose messages bulwark writes (circuit open, bulkhead full, concurrency
 *   limit, rate limited, load shed, timeout) are exposed; they name no key and no user input.
 * - a `ResilienceError` you create is not, unless you pass `expose: true`: its message may quote an
 *   upstream URL with credentials in it. `StoreUnavailableError` is not (it quotes the driver). A
 *   `RetriesExhaustedError` gets the generic detail plus the attempt count.
 * - bulwark's errors carry their `code`; any other error has none, and its message is used only
 *   when it is marked `expose: true` (the `http-errors` convention of Express and Koa): driver
 *   messages carry host names, SQL, constraint and table names.
 * - `retryAfterMs` (see `retryAfterOf`) only for transient kinds, where retrying makes sense: whole
 *   milliseconds (rounded up), at most `MAX_RETRY_AFTER_MS` (24 h) whatever an upstream asked.
 *   HTTP-date `Retry-After` headers are read only when `options.nowMs` is given.
 *
 * The upstream's exact status is not forwarded: an upstream 502 is a 503 here. Never throws on
 * hostile errors; throws a `TypeError` only for a bad `options.nowMs`.
 *
 * @example
 * const problem = toProblem(error, { instance: req.url, nowMs: clock.now() });
 * res.writeHead(problem.status, { 'content-type': 'application/problem+json' });
 * res.end(JSON.stringify(problem));
 */
export function toProblem(error: unknown, options: ToProblemOptions = {}): Problem {
  refuseUnknownKeys('toProblem options', options, toProblemOptionKeys);
  const { instance, nowMs } = options;
  if (nowMs !== undefined && !Number.isFinite(nowMs)) {
    throw new TypeError(`expected "nowMs" to be a finite number, got ${show(nowMs)}`);
  }
  const kind = classify(error);
  const own = ownDetail(error, kind);
  const found = isTransientKind(kind) ? retryAfterOf(error, nowMs) : undefined;
  const retryAfterMs = found === undefined ? undefined : clampRetryAfterMs(found);
  return {
    type: `urn:bulwark:problem:${kind}`,
    title: titles[kind],
    status: statuses[kind],
    detail: own === undefined ? (exposedMessage(error) ?? details[kind]) : own.detail,
    ...(own === undefined ? {} : { code: own.code }),
    kind,
    ...(retryAfterMs === undefined ? {} : { retryAfterMs }),
    ...(typeof instance === 'string' ? { instance } : {}),
  };
}
