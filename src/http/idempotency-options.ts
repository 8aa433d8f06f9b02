/**
 * The options of the idempotency adapters (`idempotencyMiddleware`, `fastifyIdempotency`): types,
 * defaults and validation, read once when the adapter is created.
 */
import type { Clock } from '../core/clock.js';
import {
  boolean,
  clockField,
  func,
  nonNegativeInt,
  optional,
  positiveInt,
  required,
  type Schema,
  withDefault,
} from '../core/read-options.js';
import { show } from '../core/validate.js';
import type { Idempotency } from '../idempotency/idempotency.js';
import { readAdapterOptions } from './adapter-options.js';
import { type Skip, skipField } from './skip.js';

/** The headers a replay sends by default (besides `Idempotent-Replayed: true`). */
export const DEFAULT_REPLAY_HEADERS: readonly string[] = [
  'content-type',
  'content-language',
  'content-location',
  'content-disposition',
  'location',
  'etag',
  'last-modified',
  'link',
  'cache-control',
];

/**
 * Headers a replay never copies: per-response or per-connection ones (recomputed or meaningless
 * the second time), cookies (a session must never be handed to whoever replays), and
 * `content-encoding` (the stored bytes are the route's, before any compression middleware).
 */
const neverReplayed = new Set([
  'set-cookie',
  'date',
  'content-length',
  'transfer-encoding',
  'connection',
  'keep-alive',
  'content-encoding',
  'idempotent-replayed',
]);

/** Options of `idempotencyMiddleware` and `fastifyIdempotency`. */
export interface IdempotencyHttpOptions<Req> {
  /** The `idempotency()` instance deciding (its store, lease, retention, `wait`, `maxWaitMs`). Required. */
  readonly idempotency: Pick<Idempotency<unknown>, 'run'>;
  /**
   * Whether a request with one of `methods` must carry an `Idempotency-Key`: `true` answers one
   * without it 400; `false` passes it through untouched (not deduplicated).
   * @default true
   */
  readonly required?: boolean | undefined;
  /** The methods deduplicated (upper case); any other passes straight through. @default ['POST', 'PATCH'] */
  readonly methods?: readonly string[] | undefined;
  /**
   * Who is asking (an account or API-key id from the authenticated request): part of the key's
   * scope, so two tenants sending the same `Idempotency-Key` never share a result. May return a
   * promise. It must give a non-empty string; anything else, a throw or a rejection fails the
   * request (500) rather than scope it to nobody.
   * @default none: keys are scoped by method and path only
   */
  readonly tenant?: ((request: Req) => string | Promise<string>) | undefined;
  /**
   * The largest request body accepted, in bytes: a larger one is answered 413 before the route
   * runs (a declared `Content-Length` at once, a streamed body the moment it passes the limit).
   * @default 1_048_576 (1 MiB)
   */
  readonly maxBodyBytes?: number | undefined;
  /**
   * The response headers stored and replayed (lower or mixed case). `set-cookie`, `date`,
   * `content-length`, `transfer-encoding`, `connection`, `keep-alive`, `content-encoding` and
   * `idempotent-replayed` are refused.
   * @default content-type, content-language, content-location, content-disposition, location, etag, last-modified, link, cache-control
   */
  readonly replayHeaders?: readonly string[] | undefined;
  /**
   * How long a request whose client went away before its response ended keeps the key, waiting for
   * its route to end the response (which is then stored as usual, for the client's retry). After
   * that the call is aborted and the key released. 0 releases it as the connection closes.
   * @default 30_000
   */
  readonly abandonAfterMs?: number | undefined;
  /** The clock of the `abandonAfterMs` timer. @default systemClock */
  readonly clock?: Clock | undefined;
  /**
   * Requests passed through untouched (`true`), as in every adapter. May return a promise; anything
   * but a boolean fails the request. @default none
   */
  readonly skip?: Skip<Req> | undefined;
}

function idempotencyCheck(name: string, value: unknown): Pick<Idempotency<unknown>, 'run'> {
  if (typeof value !== 'object' || value === null || typeof (value as Idempotency).run !== 'function') {
    throw new TypeError(`expected "${name}" to be an idempotency() instance (with run), got ${show(value)}`);
  }
  return value as Idempotency<unknown>;
}

/** A non-empty array of non-empty strings, each checked by `each`, as a set. */
function nameList(each: (name: string, item: string) => string) {
  return (name: string, value: unknown): ReadonlySet<string> => {
    if (!Array.isArray(value) || value.length === 0) {
      throw new TypeError(`expected "${name}" to be a non-empty array of strings, got ${show(value)}`);
    }
    const names = new Set<string>();
    for (const item of value) {
      if (typeof item !== 'string' || !/^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/.test(item)) {
        throw new TypeError(`expected "${name}" to hold HTTP tokens (like "POST"), got ${show(item)}`);
      }
      names.add(each(name, item));
    }
    return names;
  };
}

const methodsCheck = nameList((_name, item) => item.toUpperCase());
const replayHeadersCheck = nameList((name, item) => {
  const lower = item.toLowerCase();
  if (neverReplayed.has(lower))
    throw new TypeError(`expected "${name}" not to hold "${lower}": it is never replayed`);
  return lower;
});

/** The options read: every default filled in, `methods` and `replayHeaders` as sets. */
export type IdempotencySettings<Req> = ReturnType<typeof readIdempotencyHttpOptions<Req>>;

/** Reads and checks `options` (a `TypeError` names a missing, bad or unknown option). */
export function readIdempotencyHttpOptions<Req>(
  options: IdempotencyHttpOptions<Req> | undefined,
  what: string,
) {
  const schema = {
    idempotency: required(idempotencyCheck),
    required: withDefault(true, boolean),
    methods: withDefault<ReadonlySet<string>>(new Set(['POST', 'PATCH']), methodsCheck),
    tenant: optional(func<(request: Req) => string | Promise<string>>()),
    maxBodyBytes: withDefault(1_048_576, positiveInt),
    replayHeaders: withDefault<ReadonlySet<string>>(new Set(DEFAULT_REPLAY_HEADERS), replayHeadersCheck),
    abandonAfterMs: withDefault(30_000, nonNegativeInt),
    clock: clockField,
    skip: skipField<Req>(),
  } satisfies Schema<IdempotencyHttpOptions<Req>>;
  return readAdapterOptions(what, options, schema);
}
