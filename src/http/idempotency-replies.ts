/**
 * The answers of the idempotency adapters, as draft-ietf-httpapi-idempotency-key-header asks:
 * 400 for a missing or malformed key, 413 for a body over the limit, 409 with `Retry-After` while
 * a request with the key is in flight, 422 for a key reused with another payload, 503 with a
 * jittered `Retry-After` when the store is down. Every one is RFC 9457 problem+json.
 */
import { isRejectedError, isStoreUnavailableError, RejectedError } from '../core/errors.js';
import { toProblem } from '../core/http-status.js';
import { readOptions } from '../core/read-options.js';
import {
  isIdempotencyConflictError,
  isIdempotencyInProgressError,
  isStoredFailureError,
} from '../idempotency/errors.js';
import { overloadReplier, overloadReplyFields } from './overload-reply.js';
import { type ProblemReply, problemAnswer, problemReply } from './problem-response.js';

/** The request needs an `Idempotency-Key` header and has none. Answered 400. */
export function missingKeyError(): RejectedError {
  return new RejectedError('this request requires an Idempotency-Key header', {
    code: 'ERR_IDEMPOTENCY_KEY_MISSING',
    kind: 'invalid',
    expose: true,
  });
}

/** The `Idempotency-Key` header is not a key (`reason` says why; it never quotes the value). Answered 400. */
export function malformedKeyError(reason: string): RejectedError {
  return new RejectedError(reason, { code: 'ERR_IDEMPOTENCY_KEY_INVALID', kind: 'invalid', expose: true });
}

/** The request body is over `maxBodyBytes`. Answered 413. */
export function bodyTooLargeError(maxBodyBytes: number): RejectedError {
  return new RejectedError(`the request body is larger than ${maxBodyBytes} bytes`, {
    code: 'ERR_BODY_TOO_LARGE',
    kind: 'invalid',
    expose: true,
  });
}

/**
 * The answer to a store outage: 503 with a jittered `Retry-After` of 1–2 s, as the rate-limit
 * adapter answers one, so the clients refused during an outage do not all return together.
 */
// Stryker disable next-line StringLiteral: the label names these options in an error, and no options are given here
const storeDown = overloadReplier(readOptions('store outage reply', undefined, overloadReplyFields));

/** `error`'s problem with another status (and its title): 413 and 422 have no kind of their own. */
function withStatus(error: unknown, status: number, title: string, instance: string): ProblemReply {
  return problemAnswer({ ...toProblem(error, { instance }), status, title }, undefined, undefined);
}

/**
 * The 413 answer to {@link bodyTooLargeError}. With `closeConnection` (node:http, whose body was
 * left unread) it says `connection: close`, so the rest of the body is never read.
 */
export function bodyTooLargeReply(
  maxBodyBytes: number,
  instance: string,
  closeConnection: boolean,
): ProblemReply {
  const reply = withStatus(bodyTooLargeError(maxBodyBytes), 413, 'Content too large', instance);
  return closeConnection ? { ...reply, headers: { ...reply.headers, connection: 'close' } } : reply;
}

/**
 * The answer to what `idempotency.run` rejected with before the route ran, or `undefined` for an
 * error that is not a refusal (a bug: the adapter fails the request with it, 500):
 * `IdempotencyConflictError` 422; `IdempotencyInProgressError` 409 with `Retry-After` (whole
 * seconds, rounded up, from its `retryAfterMs`); `StoreUnavailableError` 503 with a jittered
 * `Retry-After`; any other `RejectedError` or bulwark error (a replayed `StoredFailureError`) its
 * kind's status through `problemReply`. Never throws.
 */
export function refusalReply(error: unknown, instance: string): ProblemReply | undefined {
  if (isIdempotencyConflictError(error)) return withStatus(error, 422, 'Unprocessable content', instance);
  if (isIdempotencyInProgressError(error)) {
    return problemAnswer(toProblem(error, { instance }), undefined, error.retryAfterMs);
  }
  if (isStoreUnavailableError(error)) return storeDown.reply(error, instance);
  if (isRejectedError(error) || isStoredFailureError(error)) {
    return problemReply(error, { instance });
  }
  return undefined;
}
