/**
 * `classify()`: what kind of failure anything thrown is. Retry, the circuit breaker and the HTTP
 * edge decide from the {@link Kind}, never from message strings; this module is the one place that
 * reads foreign error shapes (HTTP statuses, Node system codes, undici, PostgreSQL SQLSTATE, Redis
 * replies, gRPC statuses) so that nothing else has to. Every function here is total: it never
 * throws on hostile input (throwing getters, Proxies, cycles, null prototypes).
 */

import { children, enter, get, getString, isObject, MAX_DEPTH, newWalk, type Walk } from './error-walk.js';
import { isResilienceError } from './errors.js';
import { isKind, isTransientKind, type Kind } from './kind.js';

// ---------------------------------------------------------------------------------------------
// HTTP statuses

/** The statuses whose kind is not their class's default (`invalid` for 4xx, `internal` for 5xx). */
const statusKinds: ReadonlyMap<number, Kind> = new Map<number, Kind>([
  [401, 'unauthorized'],
  [402, 'forbidden'],
  [403, 'forbidden'],
  [404, 'not_found'],
  [407, 'unauthorized'],
  [408, 'timeout'],
  [409, 'conflict'],
  [410, 'not_found'],
  [412, 'conflict'],
  [421, 'transient'],
  [423, 'conflict'],
  [425, 'transient'],
  [429, 'rate_limited'],
  [451, 'forbidden'],
  [499, 'canceled'],
  [502, 'unavailable'],
  [503, 'unavailable'],
  [504, 'timeout'],
  [509, 'overloaded'],
  [511, 'unauthorized'],
  [521, 'unavailable'],
  [522, 'timeout'],
  [523, 'unavailable'],
  [524, 'timeout'],
  [525, 'unavailable'],
  [529, 'overloaded'],
  [598, 'timeout'],
  [599, 'timeout'],
]);

function isErrorStatus(value: unknown): value is number {
  // Number.isInteger is false for anything that is not a number.
  return Number.isInteger(value) && (value as number) >= 400 && (value as number) <= 599;
}

/**
 * The kind of an HTTP error status, or `undefined` when `status` is not an integer from 400 to 599
 * (1xx–3xx are not failures; anything else is not a status). Never throws. Internal: what
 * `classify()` reads statuses with; the public mapping is `fromHttpStatus`, which throws for a
 * status that is not an error instead of returning `undefined`.
 *
 * Notable choices: 408 and 504 are `timeout`; 421 (retry on another connection) and 425 (Too Early)
 * are `transient`; 502 and 503 are `unavailable`; 500, 501 and unlisted 5xx are `internal` (a server
 * bug is not retried); 412 and 423 are `conflict`; 410 is `not_found`; 451 and 402 are `forbidden`;
 * 407 and 511 are `unauthorized`; 499 (client closed request) is `canceled`; unlisted 4xx are
 * `invalid`. Common non-standard 5xx: 509/529 `overloaded`, 521/523/525 `unavailable`,
 * 522/524/598/599 `timeout`. The full table is in `docs/errors.md`.
 *
 * @example
 * httpStatusKind(429); // 'rate_limited'
 * httpStatusKind(200); // undefined
 */
export function httpStatusKind(status: unknown): Kind | undefined {
  if (!isErrorStatus(status)) return undefined;
  return statusKinds.get(status) ?? (status < 500 ? 'invalid' : 'internal');
}

/** The HTTP error status an error carries itself or on its response, as common clients put it. */
function statusOf(value: object): number | undefined {
  for (const key of ['status', 'statusCode']) {
    const status = get(value, key);
    if (isErrorStatus(status)) return status;
  }
  const response = get(value, 'response');
  // Stryker disable next-line ConditionalExpression: (true) get() on a primitive or undefined reads no status either; (false) is killed by the response and $metadata tests
  if (isObject(response)) {
    for (const key of ['status', 'statusCode']) {
      const status = get(response, key);
      if (isErrorStatus(status)) return status;
    }
  }
  // AWS SDK v3 service exceptions.
  const metadata = get(value, '$metadata');
  // Stryker disable next-line ConditionalExpression: (true) get() on a primitive or undefined reads no status either; (false) is killed by the response and $metadata tests
  if (isObject(metadata)) {
    const status = get(metadata, 'httpStatusCode');
    if (isErrorStatus(status)) return status;
  }
  return undefined;
}

// ---------------------------------------------------------------------------------------------
// Codes: Node system errors, Node internals, undici, axios/got, MySQL

const codeKinds: ReadonlyMap<string, Kind> = new Map<string, Kind>([
  // Node system errors (libuv)
  ['ECONNRESET', 'transient'],
  ['EPIPE', 'transient'],
  ['ECONNABORTED', 'transient'],
  ['EAI_AGAIN', 'transient'],
  ['EAGAIN', 'transient'],
  ['EBUSY', 'transient'],
  ['ECONNREFUSED', 'unavailable'],
  ['EHOSTUNREACH', 'unavailable'],
  ['EHOSTDOWN', 'unavailable'],
  ['ENETUNREACH', 'unavailable'],
  ['ENETDOWN', 'unavailable'],
  ['ENETRESET', 'unavailable'],
  ['ENOTFOUND', 'unavailable'],
  ['EAI_FAIL', 'unavailable'],
  ['EADDRINUSE', 'unavailable'],
  ['ETIMEDOUT', 'timeout'],
  ['ESOCKETTIMEDOUT', 'timeout'],
  ['EADDRNOTAVAIL', 'overloaded'],
  ['EMFILE', 'overloaded'],
  ['ENFILE', 'overloaded'],
  ['ENOBUFS', 'overloaded'],
  ['ENOMEM', 'overloaded'],
  ['EACCES', 'forbidden'],
  ['EPERM', 'forbidden'],
  ['ENOENT', 'not_found'],
  ['EEXIST', 'conflict'],
  ['EINVAL', 'invalid'],
  ['ECANCELED', 'canceled'],
  // Node internal errors
  ['ABORT_ERR', 'canceled'],
  ['ERR_INVALID_ARG_TYPE', 'invalid'],
  ['ERR_INVALID_ARG_VALUE', 'invalid'],
  ['ERR_OUT_OF_RANGE', 'invalid'],
  ['ERR_INVALID_URL', 'invalid'],
  ['ERR_STREAM_PREMATURE_CLOSE', 'transient'],
  ['ERR_HTTP2_STREAM_ERROR', 'transient'],
  ['ERR_HTTP2_GOAWAY_SESSION', 'transient'],
  ['ERR_SOCKET_CONNECTION_TIMEOUT', 'timeout'],
  // undici (and so Node's fetch)
  ['UND_ERR_CONNECT_TIMEOUT', 'timeout'],
  ['UND_ERR_HEADERS_TIMEOUT', 'timeout'],
  ['UND_ERR_BODY_TIMEOUT', 'timeout'],
  ['UND_ERR_SOCKET', 'transient'],
  ['UND_ERR_CLOSED', 'transient'],
  ['UND_ERR_RES_CONTENT_LENGTH_MISMATCH', 'transient'],
  ['UND_ERR_DESTROYED', 'unavailable'],
  ['UND_ERR_BPL_MISSING_UPSTREAM', 'unavailable'],
  ['UND_ERR_ABORTED', 'canceled'],
  ['UND_ERR_ABORT', 'canceled'],
  ['UND_ERR_INVALID_ARG', 'invalid'],
  ['UND_ERR_REQ_CONTENT_LENGTH_MISMATCH', 'invalid'],
  ['UND_ERR_NOT_SUPPORTED', 'internal'],
  ['UND_ERR_INVALID_RETURN_VALUE', 'internal'],
  ['UND_ERR_RES_EXCEEDED_MAX_SIZE', 'internal'],
  // axios, got
  ['ERR_CANCELED', 'canceled'],
  ['ERR_NETWORK', 'transient'],
  // MySQL (mysql, mysql2)
  ['ER_LOCK_DEADLOCK', 'transient'],
  ['ER_LOCK_WAIT_TIMEOUT', 'transient'],
  ['ER_DUP_ENTRY', 'conflict'],
  ['ER_CON_COUNT_ERROR', 'overloaded'],
  ['ER_TOO_MANY_USER_CONNECTIONS', 'overloaded'],
  ['ER_ACCESS_DENIED_ERROR', 'unauthorized'],
  ['PROTOCOL_CONNECTION_LOST', 'unavailable'],
  ['PROTOCOL_SEQUENCE_TIMEOUT', 'timeout'],
]);

// ---------------------------------------------------------------------------------------------
// PostgreSQL SQLSTATE

const sqlStateKinds: ReadonlyMap<string, Kind> = new Map<string, Kind>([
  ['40001', 'transient'], // serialization_failure
  ['40P01', 'transient'], // deadlock_detected
  ['55P03', 'transient'], // lock_not_available
  ['57P01', 'unavailable'], // admin_shutdown
  ['57P02', 'unavailable'], // crash_shutdown
  ['57P03', 'unavailable'], // cannot_connect_now
  ['57P05', 'unavailable'], // idle_session_timeout: the server closed the session
  ['25006', 'unavailable'], // read_only_sql_transaction: connected to a replica after a failover
  ['08P01', 'internal'], // protocol_violation: a client bug, not a connection problem
  ['53000', 'overloaded'], // insufficient_resources
  ['53200', 'overloaded'], // out_of_memory
  ['53300', 'overloaded'], // too_many_connections
  ['57014', 'timeout'], // query_canceled: statement_timeout (or pg_cancel_backend)
  ['25P03', 'timeout'], // idle_in_transaction_session_timeout
  ['23505', 'conflict'], // unique_violation
  ['23P01', 'conflict'], // exclusion_violation
  ['42501', 'forbidden'], // insufficient_privilege
]);

const sqlStateClassKinds: ReadonlyMap<string, Kind> = new Map<string, Kind>([
  ['08', 'unavailable'], // connection_exception
  ['22', 'invalid'], // data_exception
  ['23', 'invalid'], // integrity_constraint_violation
  ['28', 'unauthorized'], // invalid_authorization_specification
]);

/** SQLSTATE codes are five characters; every class we map starts with a digit (Node codes never do). */
const sqlStatePattern = /^[0-9][0-9A-Z]{4}$/;

function sqlStateKind(code: string): Kind | undefined {
  if (!sqlStatePattern.test(code)) return undefined;
  return sqlStateKinds.get(code) ?? sqlStateClassKinds.get(code.slice(0, 2));
}

// ---------------------------------------------------------------------------------------------
// gRPC status codes (@grpc/grpc-js ServiceError: numeric `code`, string `details`, `metadata`)

const grpcKinds: readonly (Kind | undefined)[] = [
  undefined, // 0 OK
  'canceled', // 1 CANCELLED
  'internal', // 2 UNKNOWN
  'invalid', // 3 INVALID_ARGUMENT
  'timeout', // 4 DEADLINE_EXCEEDED
  'not_found', // 5 NOT_FOUND
  'conflict', // 6 ALREADY_EXISTS
  'forbidden', // 7 PERMISSION_DENIED
  'rate_limited', // 8 RESOURCE_EXHAUSTED
  'conflict', // 9 FAILED_PRECONDITION
  'transient', // 10 ABORTED
  'invalid', // 11 OUT_OF_RANGE
  'internal', // 12 UNIMPLEMENTED
  'internal', // 13 INTERNAL
  'unavailable', // 14 UNAVAILABLE
  'internal', // 15 DATA_LOSS
  'unauthorized', // 16 UNAUTHENTICATED
];

/** A numeric `code` is a gRPC status only on the whole ServiceError shape (and only 1–16 index a kind). */
function grpcKind(value: object, code: number): Kind | undefined {
  if (typeof get(value, 'details') !== 'string' || !isObject(get(value, 'metadata'))) return undefined;
  return grpcKinds[code];
}

// ---------------------------------------------------------------------------------------------
// Redis replies

/**
 * Error classes that carry a Redis error reply: ioredis/redis-errors, node-redis 4 and 5. Looked up
 * with a name that may be absent, which is in no set.
 */
const redisReplyNames: ReadonlySet<string | undefined> = new Set<string | undefined>([
  'ReplyError',
  'ErrorReply',
  'SimpleError',
  'BlobError',
]);

const redisReplyKinds: ReadonlyMap<string, Kind> = new Map<string, Kind>([
  ['LOADING', 'unavailable'],
  ['MASTERDOWN', 'unavailable'],
  ['CLUSTERDOWN', 'unavailable'],
  ['READONLY', 'unavailable'],
  ['NOREPLICAS', 'unavailable'],
  ['MISCONF', 'unavailable'],
  ['BUSY', 'transient'],
  ['TRYAGAIN', 'transient'],
  ['MOVED', 'transient'],
  ['ASK', 'transient'],
  ['OOM', 'overloaded'],
  ['NOAUTH', 'unauthorized'],
  ['WRONGPASS', 'unauthorized'],
  ['NOPERM', 'forbidden'],
  ['WRONGTYPE', 'invalid'],
  ['CROSSSLOT', 'invalid'],
  ['BUSYKEY', 'conflict'],
  ['BUSYGROUP', 'conflict'],
  ['UNBLOCKED', 'canceled'],
]);

function redisReplyKind(message: string): Kind | undefined {
  let rest = message.trimStart();
  if (rest.startsWith('ERR ')) rest = rest.slice(4).trimStart();
  if (rest.startsWith('max number of clients reached')) return 'overloaded';
  const space = rest.indexOf(' ');
  return redisReplyKinds.get(space === -1 ? rest : rest.slice(0, space));
}

// ---------------------------------------------------------------------------------------------
// Exact messages of drivers that throw plain `Error`s for connection trouble

const messageKinds: ReadonlyMap<string, Kind> = new Map<string, Kind>([
  // ioredis
  ['Connection is closed.', 'unavailable'],
  ['None of startup nodes is available', 'unavailable'],
  ['Cluster is disconnected.', 'unavailable'],
  ["Stream isn't writeable and enableOfflineQueue options is false", 'unavailable'],
  ["Cluster isn't ready and enableOfflineQueue options is false", 'unavailable'],
  ['Command timed out', 'timeout'],
  // pg, pg-pool
  ['Connection terminated unexpectedly', 'unavailable'],
  ['Client has encountered a connection error and is not queryable', 'unavailable'],
  ['Connection terminated due to connection timeout', 'timeout'],
  ['timeout exceeded when trying to connect', 'timeout'],
  ['Query read timeout', 'timeout'],
  // node-redis
  ['The client is closed', 'unavailable'],
  ['Socket closed unexpectedly', 'unavailable'],
  ['Connection timeout', 'timeout'],
]);

/** By `name` (looked up with a name that may be absent, which maps to nothing). */
const nameKinds: ReadonlyMap<string | undefined, Kind> = new Map<string | undefined, Kind>([
  ['AbortError', 'canceled'],
  ['TimeoutError', 'timeout'],
  // ioredis
  ['MaxRetriesPerRequestError', 'unavailable'],
  ['ClusterAllFailedError', 'unavailable'],
]);

function constructorName(value: object): string | undefined {
  const ctor = get(value, 'constructor');
  return typeof ctor === 'function' ? getString(ctor, 'name') : undefined;
}

/** The kind of a bulwark error (from any copy of the package), or undefined for anything else. */
function resilienceKind(value: object): Kind | undefined {
  let resilience = false;
  try {
    resilience = isResilienceError(value);
  } catch {
    // a hostile object: read it as a foreign one
  }
  if (!resilience) return undefined;
  const kind = get(value, 'kind');
  return isKind(kind) ? kind : 'internal';
}

/** What one foreign object says about itself, ignoring its causes. */
function ownKind(value: object): Kind | undefined {
  const name = getString(value, 'name');
  const byName = nameKinds.get(name);
  if (byName !== undefined) return byName;

  const status = statusOf(value);
  if (status !== undefined) return httpStatusKind(status);

  const code = get(value, 'code');
  if (typeof code === 'string') {
    const kind = codeKinds.get(code) ?? sqlStateKind(code);
    if (kind !== undefined) return kind;
  } else if (typeof code === 'number') {
    const kind = grpcKind(value, code);
    if (kind !== undefined) return kind;
  }

  const retryable = get(value, '$retryable'); // AWS SDK v3
  if (isObject(retryable)) return get(retryable, 'throttling') === true ? 'rate_limited' : 'transient';

  const message = getString(value, 'message');
  if (message === undefined) return undefined;
  if (redisReplyNames.has(name) || redisReplyNames.has(constructorName(value))) {
    const kind = redisReplyKind(message);
    if (kind !== undefined) return kind;
  }
  return messageKinds.get(message);
}

function kindOf(value: unknown, depth: number, walk: Walk): Kind | undefined {
  if (!enter(value, walk)) return undefined;
  const ours = resilienceKind(value);
  if (ours !== undefined) return ours; // authoritative: its cause is not read
  const own = ownKind(value);
  if (own !== undefined && own !== 'canceled') return own;
  if (depth >= MAX_DEPTH) return own;

  // An abort whose reason says why (Node wraps `signal.reason` as the AbortError's cause) is that
  // reason: `AbortError { cause: TimeoutError }` is a timeout, not a cancellation.
  if (own === 'canceled') {
    const reason = kindOf(get(value, 'cause'), depth + 1, walk);
    return reason === undefined || reason === 'internal' ? own : reason;
  }

  // The first child that says something specific wins; `canceled` only when no child says anything
  // more useful (one canceled branch of a Promise.any is rarely the story). A child that is
  // `internal` says no more than one that says nothing: either way the answer is `internal`.
  let canceled = false;
  for (const child of children(value)) {
    const kind = kindOf(child, depth + 1, walk);
    if (kind === 'canceled') canceled = true;
    else if (kind !== undefined && kind !== 'internal') return kind;
  }
  return canceled ? 'canceled' : undefined;
}

/**
 * Maps anything thrown to a {@link Kind}. Total: never throws, whatever it is given (strings,
 * `undefined`, Proxies, throwing getters, cyclic `cause` chains); anything it does not recognise is
 * `'internal'`.
 *
 * Reads, in this order, on the thrown value and then on its `cause` chain and `AggregateError`
 * `errors` (at most 8 levels deep, 64 objects, each once):
 * 1. bulwark's own errors: their `kind` (their cause is not read; a `RetriesExhaustedError`
 *    already carries its last error's kind);
 * 2. the `name`: `AbortError` → `canceled` (unless its `cause`, the abort reason, says more, e.g. a
 *    timeout), `TimeoutError` (as from `AbortSignal.timeout()`) → `timeout`, ioredis
 *    `MaxRetriesPerRequestError`/`ClusterAllFailedError` → `unavailable`;
 * 3. an HTTP error status (400–599) in `status`/`statusCode`, `response.status`/`response.statusCode`
 *    (axios, got, undici, a thrown `Response`) or `$metadata.httpStatusCode` (AWS SDK), mapped by
 *    {@link httpStatusKind};
 * 4. `code`: Node system errors (`ECONNREFUSED`, `ETIMEDOUT`, ...), undici `UND_ERR_*`, axios/got
 *    `ERR_CANCELED`, MySQL `ER_*`, PostgreSQL SQLSTATE (`40001`, class `08`, ...); a numeric `code`
 *    with `details` and `metadata` is a gRPC status;
 * 5. AWS SDK `$retryable` → `rate_limited` when throttling, else `transient`;
 * 6. Redis error replies (`ReplyError`/`ErrorReply`) by their leading word (`LOADING`, `READONLY`,
 *    `NOAUTH`, ...; a leading `ERR ` is skipped), and a few exact messages that Redis and
 *    PostgreSQL drivers use for connection loss and timeouts (`Connection is closed.`).
 *
 * The first object that says something decides; a wrapper that says nothing (fetch's
 * `TypeError('fetch failed')`) defers to its cause. Among `errors`, the first member with a kind
 * other than `internal`/`canceled` wins. The complete tables are in `docs/errors.md`.
 *
 * @example
 * try {
 *   await fetch(url);
 * } catch (error) {
 *   classify(error); // 'unavailable' for TypeError('fetch failed', { cause: { code: 'ECONNREFUSED' } })
 * }
 * classify(new DOMException('stop', 'AbortError')); // 'canceled'
 * classify({ code: '40001' }); // 'transient' (PostgreSQL serialization_failure)
 * classify('boom'); // 'internal'
 */
export function classify(error: unknown): Kind {
  let kind: Kind | undefined;
  try {
    kind = kindOf(error, 0, newWalk());
  } catch {
    // Not expected (every read above goes through get()), but classify stays total.
  }
  return kind ?? 'internal';
}

/**
 * True when the error is worth trying again after a pause: `isTransientKind(classify(error))`, that
 * is kind `transient`, `timeout`, `unavailable`, `rate_limited` or `overloaded`. Never throws.
 *
 * @example
 * isTransient(Object.assign(new Error('reset'), { code: 'ECONNRESET' })); // true
 * isTransient(new TypeError('x is not a function')); // false
 */
export function isTransient(error: unknown): boolean {
  return isTransientKind(classify(error));
}
