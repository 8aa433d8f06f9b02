/**
 * Recording a route's response while it streams to the client, so the idempotency adapters can
 * store it and replay it to duplicates: the status and the allow-listed headers as `writeHead`
 * sends them (explicitly or implicitly, with headers from `setHeader` or its own argument), and a
 * copy of every byte passed to `write` and `end`. The client gets the response exactly as the route
 * wrote it; nothing is delayed.
 */
import type { OutgoingHttpHeader, OutgoingHttpHeaders, ServerResponse } from 'node:http';

/** A response as stored and replayed: JSON with bytes (the idempotency pattern's codec). */
export interface StoredResponse {
  readonly status: number;
  /** The allow-listed headers (`replayHeaders`), lower case. */
  readonly headers: Readonly<Record<string, string | readonly string[]>>;
  /** Every byte the route wrote, before any transfer encoding. */
  readonly body: Uint8Array;
}

/**
 * Whether a response is the request's final outcome, stored and replayed: 2xx, 3xx and 4xx, except
 * 408 Request Timeout, 409 Conflict, 425 Too Early and 429 Too Many Requests, which say "not now"
 * rather than "no". A 1xx or a 5xx never is: the key is released and a retry runs again.
 */
export function isStorableStatus(status: number): boolean {
  if (status < 200 || status > 499) return false;
  return status !== 408 && status !== 409 && status !== 425 && status !== 429;
}

/** The headers of a replay: the stored ones, and `idempotent-replayed: true`. */
export function replayHeadersOf(stored: StoredResponse): Record<string, string | readonly string[]> {
  return { ...stored.headers, 'idempotent-replayed': 'true' };
}

/** The stored body as a `Buffer` (no copy). */
export function bufferOf(stored: StoredResponse): Buffer {
  return Buffer.from(stored.body.buffer, stored.body.byteOffset, stored.body.byteLength);
}

/** One response being recorded. */
export interface ResponseCapture {
  /** Resolves with the response when the route calls `end()` (even if the client has gone). */
  readonly ended: Promise<StoredResponse>;
  /** Whether `end()` was called. */
  readonly isEnded: () => boolean;
}

type Chunk = string | Uint8Array;

function bytesOf(chunk: unknown, encoding: unknown): Uint8Array | undefined {
  if (typeof chunk === 'string') {
    // Buffer.from reads a missing or non-string encoding (write's callback) as utf8, as write() does.
    return Buffer.from(chunk, encoding as BufferEncoding | undefined);
  }
  if (chunk instanceof Uint8Array) return Buffer.from(chunk.buffer, chunk.byteOffset, chunk.byteLength);
  return undefined;
}

/** The value of a header as replayed: a string, or the strings of a repeated header. */
function headerValue(value: OutgoingHttpHeader): string | readonly string[] {
  return Array.isArray(value) ? value.map(String) : String(value);
}

/** The headers `writeHead` was given, as `[name, value]` pairs: an object, or a flat or nested array. */
function* givenHeaders(args: readonly unknown[]): Generator<readonly [string, OutgoingHttpHeader]> {
  const given = typeof args[1] === 'string' ? args[2] : args[1];
  if (typeof given !== 'object' || given === null) return;
  if (!Array.isArray(given))
    yield* Object.entries(given as OutgoingHttpHeaders) as [string, OutgoingHttpHeader][];
  else if (Array.isArray(given[0])) yield* given as [string, OutgoingHttpHeader][];
  else {
    // Stryker disable next-line EqualityOperator,ArithmeticOperator: (<=, i - 1) one more pair past the end has an undefined value, which is never recorded (writeHead throws for an odd length); (>=) records nothing, which the flat-array test would see, but shares the mutator
    for (let i = 0; i + 1 < given.length; i += 2) {
      yield [String(given[i]), given[i + 1] as OutgoingHttpHeader];
    }
  }
}

/**
 * Starts recording `response`: wraps its `writeHead`, `write` and `end` (on the instance; each
 * calls the original with the same arguments and returns what it returns). Headers not in `keep`
 * (lower-case names) are not recorded. Call once per response, before the route runs.
 */
export function captureResponse(response: ServerResponse, keep: ReadonlySet<string>): ResponseCapture {
  const chunks: Uint8Array[] = [];
  let status = 0;
  const headers: Record<string, string | readonly string[]> = {};
  let ended = false;
  let resolve!: (stored: StoredResponse) => void;
  const done = new Promise<StoredResponse>((r) => {
    resolve = r;
  });
  const record = (chunk: unknown, encoding: unknown): void => {
    if (ended) return;
    const bytes = bytesOf(chunk, encoding);
    if (bytes !== undefined) chunks.push(Buffer.from(bytes));
  };

  const writeHead = response.writeHead;
  response.writeHead = function capturedWriteHead(this: ServerResponse, ...args: unknown[]) {
    if (status === 0) {
      status = args[0] as number;
      for (const [name, value] of Object.entries(response.getHeaders())) {
        if (keep.has(name) && value !== undefined) headers[name] = headerValue(value);
      }
      for (const [name, value] of givenHeaders(args)) {
        const lower = name.toLowerCase();
        if (keep.has(lower) && value !== undefined) headers[lower] = headerValue(value);
      }
    }
    return (writeHead as (...a: unknown[]) => ServerResponse).apply(this, args);
  } as ServerResponse['writeHead'];

  const write = response.write;
  response.write = function capturedWrite(this: ServerResponse, ...args: unknown[]) {
    record(args[0], args[1]);
    return (write as (...a: unknown[]) => boolean).apply(this, args);
  } as ServerResponse['write'];

  const end = response.end;
  response.end = function capturedEnd(this: ServerResponse, ...args: unknown[]) {
    if (typeof args[0] !== 'function') record(args[0] as Chunk | undefined, args[1]);
    const first = !ended;
    // Ended before the original runs: what it writes through `this.write` meanwhile is not the
    // route's (light-my-request's `end`, behind Fastify's `inject`, writes the chunk again that way).
    ended = true;
    const result = (end as (...a: unknown[]) => ServerResponse).apply(this, args);
    if (first) {
      // A response ended without headers written (its socket already gone) still has a status.
      if (status === 0) status = response.statusCode;
      resolve({ status, headers, body: Buffer.concat(chunks) });
    }
    return result;
  } as ServerResponse['end'];

  return { ended: done, isEnded: () => ended };
}
