import { createServer } from 'node:http';
import { setTimeout as sleep } from 'node:timers/promises';
import fc from 'fast-check';
import { ReplyError } from 'ioredis';
import pg from 'pg';
import { describe, expect, it } from 'vitest';
import { RetriesExhaustedError } from '../retry/errors.js';
import { classify, httpStatusKind, isTransient } from './classify.js';
import { RejectedError, ResilienceError, StoreUnavailableError, TimeoutError } from './errors.js';
import { isTransientKind, type Kind, kinds } from './kind.js';
import { retryAfterOf } from './retry-after.js';

/** An Error with extra fields, as drivers build them. */
function err(fields: Record<string, unknown>, message = 'boom'): Error {
  return Object.assign(new Error(message), fields);
}

/** A real pg DatabaseError (name 'error', as pg-protocol makes it) with a SQLSTATE. */
function pgError(code: string): Error {
  const error = new pg.DatabaseError('database said no', 0, 'error');
  Object.assign(error, { code, severity: 'ERROR' });
  return error;
}

describe('classify: our own errors', () => {
  it('returns the kind of a ResilienceError without reading its cause', () => {
    const error = new ResilienceError('nope', {
      code: 'ERR_X',
      kind: 'conflict',
      cause: err({ code: 'ECONNRESET' }),
    });
    expect(classify(error)).toBe('conflict');
  });

  it('keeps a canceled ResilienceError canceled whatever its cause', () => {
    const error = new ResilienceError('stopped', {
      code: 'ERR_STOPPED',
      kind: 'canceled',
      cause: new TimeoutError(5),
    });
    expect(classify(error)).toBe('canceled');
  });

  it('knows TimeoutError, StoreUnavailableError and RetriesExhaustedError', () => {
    expect(classify(new TimeoutError(100))).toBe('timeout');
    expect(classify(new StoreUnavailableError('redis down'))).toBe('unavailable');
    const last = err({ code: 'ECONNREFUSED' });
    expect(classify(new RetriesExhaustedError(3, 'attempts', last, 'unavailable'))).toBe('unavailable');
    expect(classify(new RejectedError('full', { code: 'ERR_FULL', kind: 'overloaded' }))).toBe('overloaded');
  });

  it('reads the kind of a bulwark error from another copy of the package (brand, not instanceof)', () => {
    const foreignCopy = { [Symbol.for('bulwark.ResilienceError')]: true, kind: 'rate_limited', message: 'x' };
    expect(classify(foreignCopy)).toBe('rate_limited');
    const unknownKind = { [Symbol.for('bulwark.ResilienceError')]: true, kind: 'weird' };
    expect(classify(unknownKind)).toBe('internal');
  });

  it('finds our error as the cause of a foreign wrapper', () => {
    expect(classify(new Error('wrapped', { cause: new TimeoutError(5) }))).toBe('timeout');
  });
});

describe('classify: aborts and timeouts', () => {
  it('classifies a DOMException AbortError as canceled', () => {
    expect(classify(new DOMException('stop', 'AbortError'))).toBe('canceled');
    expect(classify(AbortSignal.abort().reason)).toBe('canceled');
  });

  it('classifies any error named AbortError as canceled', () => {
    const error = new Error('aborted');
    error.name = 'AbortError';
    expect(classify(error)).toBe('canceled');
  });

  it('classifies a DOMException TimeoutError (AbortSignal.timeout) as timeout', async () => {
    expect(classify(new DOMException('slow', 'TimeoutError'))).toBe('timeout');
    const signal = AbortSignal.timeout(1);
    await new Promise((resolve) => signal.addEventListener('abort', resolve));
    expect(classify(signal.reason)).toBe('timeout');
  });

  it('reads the reason of a Node AbortError: aborted by a timeout is a timeout', async () => {
    const timedOut = await sleep(1_000, undefined, { signal: AbortSignal.timeout(1) }).catch(
      (e: unknown) => e,
    );
    expect((timedOut as Error).name).toBe('AbortError');
    expect(classify(timedOut)).toBe('timeout');

    const canceled = await sleep(1_000, undefined, { signal: AbortSignal.abort() }).catch((e: unknown) => e);
    expect(classify(canceled)).toBe('canceled');

    const byOurTimeout = new Error('aborted', { cause: new TimeoutError(10) });
    byOurTimeout.name = 'AbortError';
    expect(classify(byOurTimeout)).toBe('timeout');
  });

  it('keeps canceled when the abort reason is unknown', () => {
    const error = new Error('aborted', { cause: 'because' });
    error.name = 'AbortError';
    expect(classify(error)).toBe('canceled');
    const withBug = new Error('aborted', { cause: new TypeError('bug') });
    withBug.name = 'AbortError';
    expect(classify(withBug)).toBe('canceled');
  });

  it('classifies any error named TimeoutError (got, p-timeout) as timeout', () => {
    const error = err({ code: 'ETIMEDOUT' });
    error.name = 'TimeoutError';
    expect(classify(error)).toBe('timeout');
  });
});

describe('classify: HTTP statuses', () => {
  it.each<[string, unknown, Kind]>([
    ['status', { status: 503 }, 'unavailable'],
    ['statusCode', { statusCode: 429 }, 'rate_limited'],
    ['response.status (axios)', err({ response: { status: 404 } }), 'not_found'],
    ['response.statusCode (got)', err({ response: { statusCode: 409 } }), 'conflict'],
    ['$metadata.httpStatusCode (AWS SDK)', err({ $metadata: { httpStatusCode: 403 } }), 'forbidden'],
    ['a thrown Response', new Response(null, { status: 504 }), 'timeout'],
    ['500 is internal', { status: 500 }, 'internal'],
    ['408', { status: 408 }, 'timeout'],
    ['401', { statusCode: 401 }, 'unauthorized'],
    ['422', { status: 422 }, 'invalid'],
  ])('reads %s', (_, error, kind) => {
    expect(classify(error)).toBe(kind);
  });

  it('prefers the status over a code on the same error', () => {
    expect(classify(err({ code: 'ERR_BAD_RESPONSE', response: { status: 503 } }))).toBe('unavailable');
  });

  it('ignores statuses that are not error statuses, and non-numeric ones', () => {
    expect(classify({ status: 200 })).toBe('internal');
    expect(classify({ status: 302, code: 'ECONNRESET' })).toBe('transient');
    expect(classify({ status: '503' })).toBe('internal');
    expect(classify({ status: 503.5 })).toBe('internal');
    expect(classify({ status: 'error', code: 'ETIMEDOUT' })).toBe('timeout');
  });
});

describe('classify: Node system and library codes', () => {
  it.each<[string, Kind]>([
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
    ['ABORT_ERR', 'canceled'],
    ['ERR_INVALID_ARG_TYPE', 'invalid'],
    ['ERR_INVALID_ARG_VALUE', 'invalid'],
    ['ERR_OUT_OF_RANGE', 'invalid'],
    ['ERR_INVALID_URL', 'invalid'],
    ['ERR_STREAM_PREMATURE_CLOSE', 'transient'],
    ['ERR_HTTP2_STREAM_ERROR', 'transient'],
    ['ERR_HTTP2_GOAWAY_SESSION', 'transient'],
    ['ERR_SOCKET_CONNECTION_TIMEOUT', 'timeout'],
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
    ['ERR_CANCELED', 'canceled'],
    ['ERR_NETWORK', 'transient'],
    ['ER_LOCK_DEADLOCK', 'transient'],
    ['ER_LOCK_WAIT_TIMEOUT', 'transient'],
    ['ER_DUP_ENTRY', 'conflict'],
    ['ER_CON_COUNT_ERROR', 'overloaded'],
    ['ER_TOO_MANY_USER_CONNECTIONS', 'overloaded'],
    ['ER_ACCESS_DENIED_ERROR', 'unauthorized'],
    ['PROTOCOL_CONNECTION_LOST', 'unavailable'],
    ['PROTOCOL_SEQUENCE_TIMEOUT', 'timeout'],
  ])('%s → %s', (code, kind) => {
    expect(classify(err({ code }))).toBe(kind);
  });

  it('leaves unknown codes internal', () => {
    expect(classify(err({ code: 'ERR_SOMETHING_ELSE' }))).toBe('internal');
    expect(classify(err({ code: 'EPIPE2' }))).toBe('internal');
  });

  it('classifies a real ECONNREFUSED from fetch (TypeError with a cause)', async () => {
    const server = createServer();
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const { port } = server.address() as { port: number };
    await new Promise((resolve) => server.close(resolve));
    const error = await fetch(`http://127.0.0.1:${port}/`).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(TypeError);
    expect(classify(error)).toBe('unavailable');
    expect(isTransient(error)).toBe(true);
  });

  it('classifies fetch-shaped errors with undici causes', () => {
    const connectTimeout = err({ code: 'UND_ERR_CONNECT_TIMEOUT' }, 'Connect Timeout Error');
    connectTimeout.name = 'ConnectTimeoutError';
    expect(classify(new TypeError('fetch failed', { cause: connectTimeout }))).toBe('timeout');
    const socket = err({ code: 'UND_ERR_SOCKET' }, 'other side closed');
    socket.name = 'SocketError';
    expect(classify(new TypeError('fetch failed', { cause: socket }))).toBe('transient');
  });

  it('classifies undici RequestAbortedError (name AbortError) as canceled', () => {
    const error = err({ code: 'UND_ERR_ABORTED' }, 'Request aborted');
    error.name = 'AbortError';
    expect(classify(error)).toBe('canceled');
  });
});

describe('classify: PostgreSQL SQLSTATE', () => {
  it.each<[string, Kind]>([
    ['40001', 'transient'],
    ['40P01', 'transient'],
    ['55P03', 'transient'],
    ['57P01', 'unavailable'],
    ['57P02', 'unavailable'],
    ['57P03', 'unavailable'],
    ['57P05', 'unavailable'],
    ['25006', 'unavailable'],
    ['08000', 'unavailable'],
    ['08003', 'unavailable'],
    ['08006', 'unavailable'],
    ['08001', 'unavailable'],
    ['08004', 'unavailable'],
    ['08P01', 'internal'],
    ['53000', 'overloaded'],
    ['53200', 'overloaded'],
    ['53300', 'overloaded'],
    ['57014', 'timeout'],
    ['25P03', 'timeout'],
    ['23505', 'conflict'],
    ['23P01', 'conflict'],
    ['23502', 'invalid'],
    ['23503', 'invalid'],
    ['23514', 'invalid'],
    ['22001', 'invalid'],
    ['22P02', 'invalid'],
    ['42501', 'forbidden'],
    ['28000', 'unauthorized'],
    ['28P01', 'unauthorized'],
    ['42P01', 'internal'],
    ['42601', 'internal'],
    ['XX000', 'internal'],
    ['53100', 'internal'],
  ])('%s → %s', (code, kind) => {
    expect(classify(pgError(code))).toBe(kind);
  });

  it('reads a pg error shape that is a plain object', () => {
    expect(classify({ name: 'error', code: '40001', severity: 'ERROR' })).toBe('transient');
  });

  it('is a real pg DatabaseError named "error"', () => {
    const error = pgError('40P01');
    expect(error.name).toBe('error');
    expect(isTransient(error)).toBe(true);
  });

  it.each<[string, Kind]>([
    ['Connection terminated unexpectedly', 'unavailable'],
    ['Client has encountered a connection error and is not queryable', 'unavailable'],
    ['Connection terminated due to connection timeout', 'timeout'],
    ['timeout exceeded when trying to connect', 'timeout'],
    ['Query read timeout', 'timeout'],
  ])('knows the pg message %j', (message, kind) => {
    expect(classify(new Error(message))).toBe(kind);
  });

  it('does not match driver messages by substring', () => {
    expect(classify(new Error('Connection terminated unexpectedly, said the user'))).toBe('internal');
  });
});

describe('classify: Redis', () => {
  it.each<[string, Kind]>([
    ['LOADING Redis is loading the dataset in memory', 'unavailable'],
    ['MASTERDOWN Link with MASTER is down', 'unavailable'],
    ['CLUSTERDOWN The cluster is down', 'unavailable'],
    ["READONLY You can't write against a read only replica.", 'unavailable'],
    ['NOREPLICAS Not enough good replicas to write.', 'unavailable'],
    ['MISCONF Redis is configured to save RDB snapshots', 'unavailable'],
    ['BUSY Redis is busy running a script.', 'transient'],
    ['TRYAGAIN Multiple keys request during rehashing of slot', 'transient'],
    ['MOVED 3999 127.0.0.1:6381', 'transient'],
    ['ASK 3999 127.0.0.1:6381', 'transient'],
    ["OOM command not allowed when used memory > 'maxmemory'.", 'overloaded'],
    ['NOAUTH Authentication required.', 'unauthorized'],
    ['WRONGPASS invalid username-password pair or user is disabled.', 'unauthorized'],
    ["NOPERM this user has no permissions to run the 'set' command", 'forbidden'],
    ['WRONGTYPE Operation against a key holding the wrong kind of value', 'invalid'],
    ["CROSSSLOT Keys in request don't hash to the same slot", 'invalid'],
    ['BUSYKEY Target key name already exists.', 'conflict'],
    ['BUSYGROUP Consumer Group name already exists', 'conflict'],
    ['UNBLOCKED client unblocked via CLIENT UNBLOCK', 'canceled'],
    ['ERR max number of clients reached', 'overloaded'],
    ['ERR LOADING Redis is loading', 'unavailable'],
    ['ERR unknown command', 'internal'],
    ['NOSCRIPT No matching script.', 'internal'],
    ['BUSY', 'transient'],
  ])('ioredis ReplyError %j → %s', (message, kind) => {
    const error = new ReplyError(message) as Error;
    expect(error.name).toBe('ReplyError');
    expect(classify(error)).toBe(kind);
  });

  it('reads node-redis ErrorReply by constructor name', () => {
    class ErrorReply extends Error {}
    expect(classify(new ErrorReply('READONLY replica'))).toBe('unavailable');
  });

  it('does not read reply codes from arbitrary errors', () => {
    expect(classify(new Error('BUSY doing things'))).toBe('internal');
    expect(classify(new Error('LOADING'))).toBe('internal');
  });

  it('knows ioredis connection errors', () => {
    const maxRetries = new Error('Reached the max retries per request limit (which is 20).');
    maxRetries.name = 'MaxRetriesPerRequestError';
    expect(classify(maxRetries)).toBe('unavailable');
    const clusterFailed = new Error('Failed to refresh slots cache.');
    clusterFailed.name = 'ClusterAllFailedError';
    expect(classify(clusterFailed)).toBe('unavailable');
    expect(classify(new Error('Connection is closed.'))).toBe('unavailable');
    expect(classify(new Error('None of startup nodes is available'))).toBe('unavailable');
    expect(classify(new Error('Cluster is disconnected.'))).toBe('unavailable');
    expect(classify(new Error("Stream isn't writeable and enableOfflineQueue options is false"))).toBe(
      'unavailable',
    );
    expect(classify(new Error("Cluster isn't ready and enableOfflineQueue options is false"))).toBe(
      'unavailable',
    );
    expect(classify(new Error('Command timed out'))).toBe('timeout');
  });

  it('knows node-redis connection errors', () => {
    expect(classify(new Error('The client is closed'))).toBe('unavailable');
    expect(classify(new Error('Socket closed unexpectedly'))).toBe('unavailable');
    expect(classify(new Error('Connection timeout'))).toBe('timeout');
  });
});

describe('classify: gRPC and AWS', () => {
  const grpc = (code: number) => err({ code, details: 'x', metadata: {} });
  it.each<[number, Kind]>([
    [1, 'canceled'],
    [2, 'internal'],
    [3, 'invalid'],
    [4, 'timeout'],
    [5, 'not_found'],
    [6, 'conflict'],
    [7, 'forbidden'],
    [8, 'rate_limited'],
    [9, 'conflict'],
    [10, 'transient'],
    [11, 'invalid'],
    [12, 'internal'],
    [13, 'internal'],
    [14, 'unavailable'],
    [15, 'internal'],
    [16, 'unauthorized'],
  ])('gRPC status %i → %s', (code, kind) => {
    expect(classify(grpc(code))).toBe(kind);
  });

  it('needs the whole gRPC shape for a numeric code', () => {
    expect(classify(err({ code: 14 }))).toBe('internal');
    expect(classify(grpc(0))).toBe('internal');
    expect(classify(grpc(17))).toBe('internal');
  });

  it('reads AWS SDK $retryable', () => {
    expect(classify(err({ $retryable: { throttling: true } }))).toBe('rate_limited');
    expect(classify(err({ $retryable: {} }))).toBe('transient');
  });
});

describe('classify: walking causes', () => {
  it('walks a cause chain to the first error that says something', () => {
    const root = err({ code: 'ECONNRESET' });
    const error = new Error('a', { cause: new Error('b', { cause: new Error('c', { cause: root }) }) });
    expect(classify(error)).toBe('transient');
  });

  it('lets the outermost signal win', () => {
    const error = err({ status: 404 }, 'upstream');
    error.cause = err({ code: 'ECONNRESET' });
    expect(classify(error)).toBe('not_found');
  });

  it('reads at most 8 levels below the thrown value', () => {
    const chain = (levels: number): unknown => {
      let error: unknown = err({ code: 'ETIMEDOUT' });
      for (let i = 0; i < levels; i++) error = new Error(`level ${i}`, { cause: error });
      return error;
    };
    expect(classify(chain(8))).toBe('timeout');
    expect(classify(chain(9))).toBe('internal');
  });

  it('survives cycles in cause', () => {
    const a = new Error('a');
    const b = new Error('b', { cause: a });
    a.cause = b;
    expect(classify(a)).toBe('internal');
    const self = new Error('self');
    self.cause = self;
    expect(classify(self)).toBe('internal');
    const withSignal = err({ code: 'EPIPE' });
    const loop = new Error('loop', { cause: new Error('x', { cause: withSignal }) });
    withSignal.cause = loop;
    expect(classify(loop)).toBe('transient');
  });

  it('reads AggregateError members (happy eyeballs)', () => {
    const error = new AggregateError(
      [err({ code: 'ECONNREFUSED' }), err({ code: 'ECONNREFUSED' })],
      'connect',
    );
    expect(classify(error)).toBe('unavailable');
    expect(classify(new TypeError('fetch failed', { cause: error }))).toBe('unavailable');
  });

  it('takes the first member that says something specific', () => {
    const error = new AggregateError([new Error('plain'), { status: 500 }, err({ code: 'ETIMEDOUT' })]);
    expect(classify(error)).toBe('timeout');
    const canceledFirst = new AggregateError([
      new DOMException('x', 'AbortError'),
      err({ code: 'ECONNRESET' }),
    ]);
    expect(classify(canceledFirst)).toBe('transient');
    expect(classify(new AggregateError([{ status: 500 }, new DOMException('x', 'AbortError')]))).toBe(
      'canceled',
    );
    expect(classify(new AggregateError([{ status: 500 }, new Error('plain')]))).toBe('internal');
    expect(classify(new AggregateError([]))).toBe('internal');
  });

  it('survives an AggregateError that contains itself', () => {
    const errors: unknown[] = [];
    const error = new AggregateError(errors);
    errors.push(error);
    (error as { errors: unknown[] }).errors = [error, err({ code: 'ENOTFOUND' })];
    expect(classify(error)).toBe('unavailable');
  });

  it('bounds wide aggregates', () => {
    const many = Array.from({ length: 10_000 }, () => new Error('plain'));
    many.push(err({ code: 'ECONNRESET' }));
    expect(classify(new AggregateError(many))).toBe('internal');
  });
});

describe('classify: anything at all', () => {
  it.each([undefined, null, 'boom', 42, 0n, true, Symbol('x'), () => 1, [], {}, Object.create(null)])(
    'returns internal for %s',
    (value) => {
      expect(classify(value)).toBe('internal');
    },
  );

  it('reads null-prototype objects', () => {
    expect(classify(Object.assign(Object.create(null), { code: 'ECONNRESET' }))).toBe('transient');
  });

  it('survives throwing getters and still reads the other fields', () => {
    const hostile = {
      get name(): string {
        throw new Error('name');
      },
      get status(): number {
        throw new Error('status');
      },
      get cause(): unknown {
        throw new Error('cause');
      },
      code: 'ECONNREFUSED',
    };
    expect(classify(hostile)).toBe('unavailable');
    const allThrow = new Proxy(
      {},
      {
        get() {
          throw new Error('get');
        },
        has() {
          throw new Error('has');
        },
        getPrototypeOf() {
          throw new Error('proto');
        },
        ownKeys() {
          throw new Error('keys');
        },
      },
    );
    expect(classify(allThrow)).toBe('internal');
    expect(classify(new Error('x', { cause: allThrow }))).toBe('internal');
  });

  it('survives revoked proxies and hostile errors arrays', () => {
    const { proxy, revoke } = Proxy.revocable({}, {});
    revoke();
    expect(classify(proxy)).toBe('internal');
    expect(classify({ errors: proxy })).toBe('internal');
    const lengthThrows = new Proxy([], {
      get(target, key) {
        if (key === 'length') throw new Error('length');
        return Reflect.get(target, key);
      },
    });
    expect(classify({ errors: lengthThrows })).toBe('internal');
  });

  it('survives a cause getter that makes a new error every time', () => {
    const endless = (): object => ({
      get cause() {
        return endless();
      },
    });
    expect(classify(endless())).toBe('internal');
  });

  it('never throws, and always returns a kind (property)', () => {
    fc.assert(
      fc.property(
        fc.anything({ withBigInt: true, withMap: true, withSet: true, withNullPrototype: true }),
        (value) => {
          expect(kinds).toContain(classify(value));
          expect(typeof isTransient(value)).toBe('boolean');
          expect(() => retryAfterOf(value, 0)).not.toThrow();
        },
      ),
    );
  });

  it('never throws on error-shaped random objects (property)', () => {
    const field = fc.oneof(fc.anything(), fc.integer({ min: 0, max: 700 }), fc.string());
    const shape = fc.record(
      {
        name: fc.oneof(fc.constantFrom('AbortError', 'TimeoutError', 'ReplyError'), fc.string()),
        code: fc.oneof(fc.constantFrom('ECONNRESET', '40001', 'UND_ERR_SOCKET', 14), field),
        status: field,
        message: fc.string(),
        cause: fc.anything(),
        errors: fc.array(fc.anything()),
        response: fc.record({ status: field, headers: fc.dictionary(fc.string(), fc.string()) }),
      },
      { requiredKeys: [] },
    );
    fc.assert(
      fc.property(shape, (value) => {
        expect(kinds).toContain(classify(value));
      }),
    );
  });
});

describe('isTransient', () => {
  it('is isTransientKind(classify(error))', () => {
    for (const kind of kinds) {
      const error = new ResilienceError('x', { code: 'ERR_X', kind });
      expect(isTransient(error)).toBe(isTransientKind(kind));
    }
    expect(isTransient(err({ code: 'ECONNRESET' }))).toBe(true);
    expect(isTransient({ status: 500 })).toBe(false);
    expect(isTransient(new DOMException('x', 'AbortError'))).toBe(false);
    expect(isTransient('boom')).toBe(false);
  });
});

describe('httpStatusKind', () => {
  it('is undefined for anything but an integer from 400 to 599', () => {
    for (const status of [100, 200, 204, 302, 399, 600, 0, -1, 404.5, Number.NaN, '404', null, undefined]) {
      expect(httpStatusKind(status)).toBeUndefined();
    }
    expect(httpStatusKind(400)).toBe('invalid');
    expect(httpStatusKind(599)).toBe('timeout');
  });
});
