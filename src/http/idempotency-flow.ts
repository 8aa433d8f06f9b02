/**
 * One request through the idempotency adapters, whatever the framework: pick the requests to
 * deduplicate, read the key, the tenant and the body, then let `idempotency.run` decide. The first
 * request with a key runs the route while its response is recorded (idempotency-capture.ts) and
 * stored once it ends; a duplicate gets the stored response replayed; refusals are answered
 * (idempotency-replies.ts). No pattern logic: claiming, leases, waiting and fingerprints are the
 * pattern's.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { TimerHandle } from '../core/clock.js';
import { ResilienceError } from '../core/errors.js';
import { show } from '../core/validate.js';
import type { IdempotentHandlerContext } from '../idempotency/handler.js';
import type { RequestHandler } from './adapter.js';
import { asking, type Continuation } from './ask.js';
import type { Edge } from './edge.js';
import type { BodyRead } from './idempotency-body.js';
import {
  captureResponse,
  isStorableStatus,
  type ResponseCapture,
  type StoredResponse,
} from './idempotency-capture.js';
import { parseIdempotencyKey } from './idempotency-key.js';
import type { IdempotencySettings } from './idempotency-options.js';
import {
  bodyTooLargeReply,
  malformedKeyError,
  missingKeyError,
  refusalReply,
} from './idempotency-replies.js';
import { problemReply } from './problem-response.js';
import { skipping } from './skip.js';

/** What the flow reads of a request, in every framework. */
export interface HttpRequestLike {
  readonly method?: string | undefined;
  readonly url?: string | undefined;
  readonly headers: Readonly<Record<string, string | string[] | undefined>>;
}

/** What differs between node:http / Express and Fastify. */
export interface Framework<Req> {
  /** The node:http request under `request`. */
  raw(request: Req): IncomingMessage;
  /** The request's body for the fingerprint, bounded by `maxBodyBytes` (idempotency-body.ts). */
  body(request: Req, maxBodyBytes: number): BodyRead | Promise<BodyRead>;
  /** Whether a 413 must close the connection (the body was left unread). */
  readonly closeOnTooLarge: boolean;
  /** Sends a stored response as a replay (its headers plus `idempotent-replayed: true`). */
  replay(reply: unknown, stored: StoredResponse): void;
}

/**
 * The marker a call fails with when its response must not be stored (a 5xx, a 408/409/425/429):
 * the pattern then releases the key, so the client's retry runs the route again. Kind `internal`,
 * which no `storeErrors` can keep. Never answered: the route's own response was already sent.
 */
export class ResponseNotStoredError extends ResilienceError {
  /** The status that was not stored. */
  readonly status: number;
  constructor(status: number) {
    super(`a ${status} response is not stored: the key is released for a retry`, {
      code: 'ERR_RESPONSE_NOT_STORED',
      kind: 'internal',
    });
    this.status = status;
  }
}

/** Why a call was aborted: the client left (before the route ran, or for longer than `abandonAfterMs`). */
function clientGone(): ResilienceError {
  return new ResilienceError('the client closed the connection before the response ended', {
    code: 'ERR_CLIENT_GONE',
    kind: 'canceled',
  });
}

/** Whether a replayed value is a stored response (another use of the store could hold anything). */
function isStoredResponse(value: unknown): value is StoredResponse {
  const v = value as Partial<StoredResponse> | null;
  return (
    typeof v === 'object' &&
    v !== null &&
    Number.isInteger(v.status) &&
    v.body instanceof Uint8Array &&
    typeof v.headers === 'object' &&
    v.headers !== null
  );
}

/** The request URL as the client sent it (Express's `originalUrl` when mounted). */
function urlOf(request: HttpRequestLike): string {
  // Stryker disable next-line StringLiteral: node:http, Express and Fastify always set `url`; the fallback only satisfies its optional type
  return (request as { readonly originalUrl?: string }).originalUrl ?? request.url ?? '/';
}

/** Resolves with the recorded response once it ends; rejects with `signal`'s reason if it aborts first. */
function untilEnded(capture: ResponseCapture, signal: AbortSignal): Promise<StoredResponse> {
  // Stryker disable next-line ConditionalExpression: (false) the handler checked the signal just before, and nothing since (recording, the route's synchronous start) can abort it: a close or a lost lease comes on a later tick
  if (signal.aborted) return Promise.reject(signal.reason);
  return new Promise<StoredResponse>((resolve, reject) => {
    const onAbort = (): void => reject(signal.reason);
    // Stryker disable next-line ObjectLiteral,BooleanLiteral: a signal aborts once, so its listener runs once either way
    signal.addEventListener('abort', onAbort, { once: true });
    capture.ended.then((stored) => {
      // Stryker disable next-line StringLiteral: (listener left) a later abort rejects a settled promise, which ignores it
      signal.removeEventListener('abort', onAbort);
      resolve(stored);
    });
  });
}

/**
 * Runs one keyed request through `idempotency.run`. The route runs inside the call (`edge.proceed`)
 * and the call resolves when its response ends: a storable status is stored, any other fails the
 * call with {@link ResponseNotStoredError} (the key is released). The call's signal aborts when the
 * client leaves: at once while the call is still claiming or waiting (the route never runs), or
 * `abandonAfterMs` after the close when the route runs and has not ended its response.
 */
function claim<Req extends HttpRequestLike, Reply, Next>(
  o: IdempotencySettings<Req>,
  framework: Framework<Req>,
  scope: string,
  fingerprinted: { readonly method: string; readonly path: string; readonly body: unknown },
  instance: string,
  reply: Reply,
  next: Next,
  edge: Edge<Reply, Next>,
): void {
  const response: ServerResponse = edge.response(reply);
  if (response.closed) return; // the client left before the key was claimed: nothing runs
  const controller = new AbortController();
  let capture: ResponseCapture | undefined;
  let timer: TimerHandle | undefined;
  const onClose = (): void => {
    if (capture === undefined || o.abandonAfterMs === 0) controller.abort(clientGone());
    else if (!capture.isEnded()) {
      timer = o.clock.setTimer(() => controller.abort(clientGone()), o.abandonAfterMs);
      o.clock.keepAlive?.(timer, false);
    }
  };
  response.once('close', onClose);
  const handler = ({ signal }: IdempotentHandlerContext<unknown>): Promise<StoredResponse> => {
    // Claimed after the client left: never start the route (the key is released at once).
    if (signal.aborted) return Promise.reject(signal.reason);
    capture = captureResponse(response, o.replayHeaders);
    edge.proceed(reply, next);
    return untilEnded(capture, signal).then((stored) => {
      if (!isStorableStatus(stored.status)) throw new ResponseNotStoredError(stored.status);
      return stored;
    });
  };
  const settle = (): void => {
    if (timer !== undefined) o.clock.clearTimer(timer);
    response.off('close', onClose);
  };
  let call: Promise<{ readonly value: unknown; readonly replayed: boolean }>;
  try {
    call = o.idempotency.run(scope, fingerprinted, handler, { signal: controller.signal });
  } catch (error) {
    call = Promise.reject(error);
  }
  call.then(
    (outcome) => {
      settle();
      if (!outcome.replayed || response.closed) return; // the route answered itself, or nobody is left
      if (isStoredResponse(outcome.value)) framework.replay(reply, outcome.value);
      else
        edge.fail(
          next,
          new TypeError(`expected the replayed value to be a stored response, got ${show(outcome.value)}`),
        );
    },
    (error: unknown) => {
      settle();
      // Once the route ran, the response is its own (sent, being sent, or the client gone): a
      // release, a lost lease or an abort has nothing more to say to the client.
      if (capture !== undefined || response.closed) return;
      const refusal = refusalReply(error, instance);
      if (refusal === undefined) edge.fail(next, error);
      else edge.answer(reply, refusal);
    },
  );
}

/**
 * The adapter's request handler: `skip`, then the method filter, the tenant (asked through the
 * kit, so a throw or rejection fails the request), the key, the body, and the call.
 */
export function idempotentRequests<Req extends HttpRequestLike>(
  o: IdempotencySettings<Req>,
  framework: Framework<Req>,
): RequestHandler<Req> {
  const keyed: Continuation<Req> = (tenant, request, reply, next, edge) => {
    if (o.tenant !== undefined && (typeof tenant !== 'string' || tenant === '')) {
      edge.fail(
        next,
        new TypeError(`expected the "tenant" function to return a non-empty string, got ${show(tenant)}`),
      );
      return;
    }
    const instance = urlOf(request);
    const parsed = parseIdempotencyKey(
      framework.raw(request).headersDistinct?.['idempotency-key'] ?? request.headers['idempotency-key'],
    );
    if (parsed.status === 'missing') {
      if (o.required) edge.answer(reply, problemReply(missingKeyError(), { instance }));
      else edge.proceed(reply, next);
      return;
    }
    if (parsed.status === 'malformed') {
      edge.answer(reply, problemReply(malformedKeyError(parsed.reason), { instance }));
      return;
    }
    // Stryker disable next-line StringLiteral: only a request whose method is in `methods` gets here
    const method = (request.method ?? '').toUpperCase();
    const path = instance.split('?', 1)[0]!;
    // Injective: no two (tenant, method, path, key) give the same scope.
    const scope = JSON.stringify([tenant ?? null, method, path, parsed.key]);
    const withBody = (read: BodyRead): void => {
      if (read.status === 'too-large') {
        edge.answer(reply, bodyTooLargeReply(o.maxBodyBytes, instance, framework.closeOnTooLarge));
        return;
      }
      claim(o, framework, scope, { method, path, body: read.body }, instance, reply, next, edge);
    };
    let read: BodyRead | Promise<BodyRead>;
    try {
      read = framework.body(request, o.maxBodyBytes);
    } catch (error) {
      edge.fail(next, error);
      return;
    }
    if (!(read instanceof Promise)) withBody(read);
    else
      read.then(withBody, (error: unknown) => {
        if (!edge.response(reply).closed) edge.fail(next, error);
      });
  };
  const tenanted: RequestHandler<Req> =
    o.tenant === undefined
      ? (request, reply, next, edge) => keyed(undefined, request, reply, next, edge)
      : asking(o.tenant, true, keyed);
  return skipping(o.skip, (request, reply, next, edge) => {
    // Stryker disable next-line StringLiteral: (any other string) a request without a method is in no `methods` either way: they hold only HTTP tokens, and this one has a space
    if (o.methods.has((request.method ?? '').toUpperCase())) tenanted(request, reply, next, edge);
    else edge.proceed(reply, next);
  });
}
