/**
 * classify() at the edges of each rule: which shapes a rule needs before it speaks, which rule wins
 * when several could, and how far the walk over causes goes.
 */
import { ReplyError } from 'ioredis';
import { describe, expect, it } from 'vitest';
import { classify } from './classify.js';
import { ResilienceError, TimeoutError } from './errors.js';
import type { Kind } from './kind.js';

/** An Error with extra fields, as drivers build them. */
function err(fields: Record<string, unknown>, message = 'boom'): Error {
  return Object.assign(new Error(message), fields);
}

function abortError(cause?: unknown): Error {
  const error = new Error('This operation was aborted', cause === undefined ? {} : { cause });
  error.name = 'AbortError';
  return error;
}

describe('classify: statuses that are not error statuses', () => {
  it('ignores a success status in $metadata (an AWS error sent with HTTP 200) and reads the code', () => {
    expect(classify(err({ $metadata: { httpStatusCode: 200 }, code: 'ECONNRESET' }))).toBe('transient');
  });

  it('ignores a success status on the response and reads the code', () => {
    expect(classify(err({ response: { status: 200, statusCode: 204 }, code: 'ETIMEDOUT' }))).toBe('timeout');
  });

  it('maps 400 to invalid and 500 and 501 to internal by their class', () => {
    expect(classify({ status: 400 })).toBe('invalid');
    expect(classify({ status: 500 })).toBe('internal');
    expect(classify({ status: 501 })).toBe('internal');
    expect(classify({ status: 499 })).toBe('canceled');
  });
});

describe('classify: codes', () => {
  it.each(['08', '0800', '080000', '08000000', '23', '2300', '22000X', '28P01Z'])(
    'does not read %j as a SQLSTATE (those are exactly five characters)',
    (code) => {
      expect(classify(err({ code }))).toBe('internal');
    },
  );

  it.each(['UND_ERR_NOT_SUPPORTED', 'UND_ERR_INVALID_RETURN_VALUE', 'UND_ERR_RES_EXCEEDED_MAX_SIZE'])(
    'takes undici %s as internal, whatever its cause says',
    (code) => {
      expect(classify(err({ code, cause: err({ code: 'ECONNRESET' }) }))).toBe('internal');
    },
  );

  it('reads the rest of an error whose string code means nothing', () => {
    expect(classify(err({ code: 'ERR_BAD_RESPONSE' }, 'Connection is closed.'))).toBe('unavailable');
    expect(classify(err({ code: 'E_SOMETHING', $retryable: {} }))).toBe('transient');
  });

  it('reads the rest of an error whose numeric code is not a gRPC status', () => {
    expect(classify(err({ code: 1040, $retryable: { throttling: true } }))).toBe('rate_limited');
    expect(classify(err({ code: 2 }, 'Command timed out'))).toBe('timeout');
  });
});

describe('classify: gRPC needs the whole ServiceError shape', () => {
  it('is not a gRPC status without metadata, or without details', () => {
    expect(classify(err({ code: 14, details: 'connection refused' }))).toBe('internal');
    expect(classify(err({ code: 14, metadata: {} }))).toBe('internal');
    expect(classify(err({ code: 14, details: 42, metadata: {} }))).toBe('internal');
    expect(classify(err({ code: 14, details: 'x', metadata: 'x' }))).toBe('internal');
  });

  it.each<[string, unknown]>([
    ['a fraction', 14.5],
    ['NaN', Number.NaN],
    ['a negative number', -1],
    ['Infinity', Number.POSITIVE_INFINITY],
    ['a bigint', 14n],
  ])('is not a gRPC status when the code is %s', (_, code) => {
    expect(classify(err({ code, details: 'x', metadata: {} }))).toBe('internal');
  });
});

describe('classify: Redis replies', () => {
  it.each<[string, Kind]>([
    ['  LOADING Redis is loading the dataset in memory', 'unavailable'],
    ['ERR  READONLY replica', 'unavailable'],
    ['ERR max number of clients reached (maxclients 4)', 'overloaded'],
  ])('reads the leading word of %j past blanks', (message, kind) => {
    expect(classify(new ReplyError(message))).toBe(kind);
  });

  it('reads a reply by its name alone (an error rebuilt from its fields)', () => {
    expect(classify({ name: 'ReplyError', message: 'LOADING Redis is loading' })).toBe('unavailable');
    expect(classify(err({ name: 'ErrorReply' }, 'NOAUTH Authentication required.'))).toBe('unauthorized');
  });

  it('reads node-redis 5 SimpleError and BlobError by constructor name', () => {
    class SimpleError extends Error {}
    class BlobError extends Error {}
    expect(classify(new SimpleError('MASTERDOWN Link with MASTER is down'))).toBe('unavailable');
    expect(classify(new BlobError('WRONGTYPE Operation against a key'))).toBe('invalid');
  });

  it('does not take a `constructor` field that is data for an error class', () => {
    expect(classify({ constructor: { name: 'ReplyError' }, message: 'READONLY replica' })).toBe('internal');
  });

  it('still knows the exact driver messages on a reply error with an unknown leading word', () => {
    expect(classify(new ReplyError('Connection is closed.'))).toBe('unavailable');
  });

  it('defers to the cause of a reply error that has no message', () => {
    const error = { name: 'ReplyError', message: 42, cause: err({ code: 'ECONNRESET' }) };
    expect(classify(error)).toBe('transient');
  });
});

describe('classify: aborts', () => {
  it('keeps canceled when the abort reason is itself internal', () => {
    expect(classify(abortError({ status: 500 }))).toBe('canceled');
    expect(classify(abortError(new ResilienceError('bug', { code: 'ERR_BUG', kind: 'internal' })))).toBe(
      'canceled',
    );
  });

  it('reads abort reasons at most 8 levels below the thrown value', () => {
    const chain = (levels: number): unknown => {
      let error: unknown = new TimeoutError(10);
      for (let i = 0; i < levels; i++) error = abortError(error);
      return error;
    };
    expect(classify(chain(8))).toBe('timeout');
    expect(classify(chain(9))).toBe('canceled');
  });
});

describe('classify: AggregateError members', () => {
  it('prefers a canceled member to an internal one in either order', () => {
    const abort = new DOMException('x', 'AbortError');
    expect(classify(new AggregateError([abort, { status: 500 }]))).toBe('canceled');
    expect(classify(new AggregateError([{ status: 500 }, abort]))).toBe('canceled');
  });

  it('reads at most 64 objects in one call', () => {
    const wide = (plain: number) =>
      new AggregateError([
        ...Array.from({ length: plain }, () => new Error('plain')),
        err({ code: 'ECONNRESET' }),
      ]);
    expect(classify(wide(62))).toBe('transient'); // the 64th object read
    expect(classify(wide(63))).toBe('internal'); // the 65th is not read
  });
});

describe('classify: hostile objects', () => {
  it('reads the fields of an object whose symbol-keyed reads throw', () => {
    const hostile = new Proxy(
      { code: 'ECONNRESET' },
      {
        get(target, key) {
          if (typeof key === 'symbol') throw new Error('no symbols here');
          return Reflect.get(target, key);
        },
      },
    );
    expect(classify(hostile)).toBe('transient');
  });
});

describe('classify: what the walk reads', () => {
  it('reads nothing from a thrown function, whatever its fields', () => {
    expect(classify(Object.assign(() => {}, { code: 'ECONNRESET' }))).toBe('internal');
    expect(classify(new Error('x', { cause: Object.assign(() => {}, { status: 503 }) }))).toBe('internal');
  });

  it('reads an object met again only once, and counts it once toward the bound', () => {
    const plain = new Error('plain');
    // With 63 different plain errors the last member would be the 65th object (see above).
    const repeated = new AggregateError([
      ...Array.from({ length: 63 }, () => plain),
      err({ code: 'ECONNRESET' }),
    ]);
    expect(classify(repeated)).toBe('transient');
  });

  it('reads only the first 64 members of errors', () => {
    const wide = (strings: number) =>
      new AggregateError([
        ...Array.from({ length: strings }, (_, i) => `reason ${i}`),
        err({ code: 'ECONNRESET' }),
      ]);
    expect(classify(wide(63))).toBe('transient');
    expect(classify(wide(64))).toBe('internal');
    expect(classify(wide(70))).toBe('internal');
  });

  it('reads errors only when it is an array', () => {
    expect(classify({ errors: { length: 1, 0: err({ code: 'ECONNRESET' }) } })).toBe('internal');
    const lengthIsText = new Proxy([err({ code: 'ECONNRESET' })], {
      get(target, key) {
        return key === 'length' ? '1' : Reflect.get(target, key);
      },
    });
    expect(classify({ errors: lengthIsText })).toBe('internal');
  });

  it('takes a null $retryable or gRPC metadata as absent', () => {
    expect(classify(err({ $retryable: null }))).toBe('internal');
    expect(classify(err({ code: 14, details: 'x', metadata: null }))).toBe('internal');
  });
});
