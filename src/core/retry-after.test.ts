import fc from 'fast-check';
import pg from 'pg';
import { describe, expect, it } from 'vitest';
import { RetriesExhaustedError } from '../retry/errors.js';
import { RejectedError } from './errors.js';
import {
  clampRetryAfterMs,
  MAX_RETRY_AFTER_MS,
  parseRetryAfter,
  retryAfterOf,
  retryAfterSeconds,
} from './retry-after.js';

/** An Error with extra fields, as drivers build them. */
function err(fields: Record<string, unknown>, message = 'boom'): Error {
  return Object.assign(new Error(message), fields);
}

/** A real pg DatabaseError (name 'error', as pg-protocol makes it) with a SQLSTATE. */
function _pgError(code: string): Error {
  const error = new pg.DatabaseError('database said no', 0, 'error');
  Object.assign(error, { code, severity: 'ERROR' });
  return error;
}

describe('parseRetryAfter', () => {
  const now = Date.UTC(2015, 9, 21, 7, 27, 30);

  it('reads delay-seconds', () => {
    expect(parseRetryAfter('120', now)).toBe(120_000);
    expect(parseRetryAfter('0', now)).toBe(0);
    expect(parseRetryAfter(' 5 ', now)).toBe(5_000);
    expect(parseRetryAfter('007', now)).toBe(7_000);
    expect(parseRetryAfter('1.5', now)).toBe(1_500);
    expect(parseRetryAfter('.25', now)).toBe(250);
    expect(parseRetryAfter('0.1', now)).toBe(100);
    expect(parseRetryAfter(3, now)).toBe(3_000);
    expect(parseRetryAfter(0.5, now)).toBe(500);
  });

  it('reads an IMF-fixdate relative to nowMs', () => {
    expect(parseRetryAfter('Wed, 21 Oct 2015 07:28:00 GMT', now)).toBe(30_000);
    expect(parseRetryAfter('wed, 21 oct 2015 07:28:00 gmt', now)).toBe(30_000);
    expect(parseRetryAfter('21 Oct 2015 07:28:00 GMT', now)).toBe(30_000);
    expect(parseRetryAfter('Wed, 21 Oct 2015 07:28:00 UTC', now)).toBe(30_000);
    expect(parseRetryAfter('Thu, 1 Jan 2016 00:00:00 GMT', now)).toBe(Date.UTC(2016, 0, 1) - now);
  });

  it('reads the obsolete RFC 850 and asctime forms', () => {
    expect(parseRetryAfter('Wednesday, 21-Oct-15 07:28:00 GMT', now)).toBe(30_000);
    expect(parseRetryAfter('Wednesday, 21-Oct-2015 07:28:00 GMT', now)).toBe(30_000);
    expect(parseRetryAfter('Wed Oct 21 07:28:00 2015', now)).toBe(30_000);
    expect(parseRetryAfter('Sun Nov  6 08:49:37 1994', Date.UTC(1994, 10, 6, 8, 49, 0))).toBe(37_000);
  });

  it('reads two-digit RFC 850 years as RFC 9110 says (more than 50 years ahead is the past century)', () => {
    const in2040 = Date.UTC(2040, 0, 1);
    expect(parseRetryAfter('Monday, 01-Jan-90 00:00:00 GMT', in2040)).toBe(Date.UTC(2090, 0, 1) - in2040);
    expect(parseRetryAfter('Friday, 01-Jan-99 00:00:00 GMT', in2040)).toBe(0); // 1999, in the past
  });

  it('never returns a negative wait for a date in the past', () => {
    expect(parseRetryAfter('Wed, 21 Oct 2015 07:00:00 GMT', now)).toBe(0);
    expect(parseRetryAfter('Sun, 06 Nov 1994 08:49:37 GMT', now)).toBe(0);
  });

  it.each([
    '',
    '   ',
    'soon',
    '-1',
    '+5',
    '1e3',
    '0x10',
    '5 seconds',
    '2015-10-21T07:28:00Z',
    'Wed, 21 Oct 2015 07:28:00',
    'Wed, 31 Feb 2015 07:28:00 GMT',
    'Wed, 21 Foo 2015 07:28:00 GMT',
    'Wed, 21 Oct 2015 25:28:00 GMT',
    'Oct 21 2015',
    '1'.repeat(400),
  ])('returns undefined for garbage %j', (value) => {
    expect(parseRetryAfter(value, now)).toBeUndefined();
  });

  it('returns undefined for absent values and bad numbers', () => {
    expect(parseRetryAfter(undefined, now)).toBeUndefined();
    expect(parseRetryAfter(null, now)).toBeUndefined();
    expect(parseRetryAfter(-1, now)).toBeUndefined();
    expect(parseRetryAfter(Number.NaN, now)).toBeUndefined();
    expect(parseRetryAfter(Number.POSITIVE_INFINITY, now)).toBeUndefined();
  });

  it('throws a TypeError for a bad nowMs', () => {
    expect(() => parseRetryAfter('1', Number.NaN)).toThrow(TypeError);
    expect(() => parseRetryAfter('1', undefined as unknown as number)).toThrow(
      'expected "nowMs" to be a finite number',
    );
  });

  it('is never negative (property)', () => {
    fc.assert(
      fc.property(
        fc.oneof(
          fc.string(),
          fc.double(),
          fc.date().map((d) => d.toUTCString()),
        ),
        fc.integer(),
        (v, n) => {
          const ms = parseRetryAfter(v, n);
          expect(ms === undefined || ms >= 0).toBe(true);
        },
      ),
    );
  });
});

describe('retryAfterOf', () => {
  const now = Date.UTC(2015, 9, 21, 7, 27, 30);

  it('reads retryAfterMs of our errors, never negative', () => {
    const limited = new RejectedError('slow down', {
      code: 'ERR_RATE_LIMITED',
      kind: 'rate_limited',
      retryAfterMs: 250,
    });
    expect(retryAfterOf(limited, now)).toBe(250);
    const negative = new RejectedError('x', { code: 'ERR_X', kind: 'rate_limited', retryAfterMs: -5 });
    expect(retryAfterOf(negative, now)).toBe(0);
  });

  it('reads Retry-After from plain header objects in any case', () => {
    expect(retryAfterOf(err({ headers: { 'retry-after': '2' } }), now)).toBe(2_000);
    expect(retryAfterOf(err({ headers: { 'Retry-After': '3' } }), now)).toBe(3_000);
    expect(retryAfterOf(err({ response: { headers: { 'RETRY-AFTER': 4 } } }), now)).toBe(4_000);
    expect(retryAfterOf(err({ response: { headers: { 'retry-after': ['5', '6'] } } }), now)).toBe(5_000);
    expect(retryAfterOf(err({ headers: { 'retry-after': 'Wed, 21 Oct 2015 07:28:00 GMT' } }), now)).toBe(
      30_000,
    );
  });

  it('reads Retry-After from Headers-like objects', () => {
    const response = new Response(null, { status: 503, headers: { 'Retry-After': '7' } });
    expect(retryAfterOf(response, now)).toBe(7_000);
    expect(retryAfterOf(err({ response }), now)).toBe(7_000);
    expect(retryAfterOf(err({ headers: new Headers({ 'retry-after': '1' }) }), now)).toBe(1_000);
    const map = new Map([['retry-after', '8']]);
    expect(retryAfterOf(err({ headers: map }), now)).toBe(8_000);
  });

  it('walks causes and aggregates', () => {
    const limited = err({ response: { status: 429, headers: { 'retry-after': '9' } } });
    const exhausted = new RetriesExhaustedError(3, 'attempts', limited, 'rate_limited');
    expect(retryAfterOf(exhausted, now)).toBe(9_000);
    expect(retryAfterOf(new AggregateError([new Error('x'), limited]), now)).toBe(9_000);
  });

  it('returns undefined when nothing asks for a wait, or the header is garbage', () => {
    expect(retryAfterOf(new Error('x'), now)).toBeUndefined();
    expect(retryAfterOf(err({ headers: { 'retry-after': 'later' } }), now)).toBeUndefined();
    expect(retryAfterOf(undefined, now)).toBeUndefined();
    expect(retryAfterOf('boom', now)).toBeUndefined();
  });

  it('survives hostile headers and cycles', () => {
    const headers = new Proxy(
      {},
      {
        get() {
          throw new Error('get');
        },
        ownKeys() {
          throw new Error('keys');
        },
      },
    );
    expect(retryAfterOf(err({ headers }), now)).toBeUndefined();
    const throwingGet = {
      get: () => {
        throw new Error('get');
      },
      'retry-after': '3',
    };
    expect(retryAfterOf(err({ headers: throwingGet }), now)).toBe(3_000);
    const a = new Error('a');
    a.cause = a;
    expect(retryAfterOf(a, now)).toBeUndefined();
  });

  it('throws a TypeError for a bad nowMs', () => {
    expect(() => retryAfterOf(new Error('x'), Number.POSITIVE_INFINITY)).toThrow(TypeError);
  });
});

describe('parseRetryAfter: the edges of each form', () => {
  const now = Date.UTC(2015, 9, 21, 7, 27, 30);

  it('reads decimals with any number of places, and a number 0 as no wait', () => {
    expect(parseRetryAfter('1.25', now)).toBe(1_250);
    expect(parseRetryAfter('2.', now)).toBe(2_000);
    expect(parseRetryAfter('0.125', now)).toBe(125);
    expect(parseRetryAfter(0, now)).toBe(0);
  });

  const monthNames = ['Jan', 'Feb', 'Mar', 'Apr', 'May', 'Jun', 'Jul', 'Aug', 'Sep', 'Oct', 'Nov', 'Dec'];
  it.each(monthNames.map((name, index) => [name, index] as const))('knows the month %s', (name, index) => {
    const start = Date.UTC(2016, 0, 1);
    expect(parseRetryAfter(`02 ${name} 2016 00:00:00 GMT`, start)).toBe(Date.UTC(2016, index, 2) - start);
  });

  it('accepts the last hour and minute of a day and a leap second', () => {
    expect(parseRetryAfter('Wed, 21 Oct 2015 23:59:59 GMT', now)).toBe(
      Date.UTC(2015, 9, 21, 23, 59, 59) - now,
    );
    expect(parseRetryAfter('Wed, 21 Oct 2015 07:27:60 GMT', now)).toBe(30_000); // rolls into 07:28:00
  });

  it.each([
    'Wed, 21 Oct 2015 24:00:00 GMT',
    'Wed, 21 Oct 2015 07:60:00 GMT',
    'Wed, 21 Oct 2015 07:28:61 GMT',
    'Wed, 00 Oct 2015 07:28:00 GMT',
  ])('refuses the out-of-range field in %j', (value) => {
    expect(parseRetryAfter(value, now)).toBeUndefined();
  });

  it('reads the RFC 850 and asctime forms in any case', () => {
    expect(parseRetryAfter('WEDNESDAY, 21-OCT-15 07:28:00 GMT', now)).toBe(30_000);
    expect(parseRetryAfter('wed oct 21 07:28:00 2015', now)).toBe(30_000);
  });
});

describe('retryAfterOf: where it looks', () => {
  const now = Date.UTC(2015, 9, 21, 7, 27, 30);
  const brand = Symbol.for('bulwark.ResilienceError');

  it('reads an object whose get() does not know the header by its keys', () => {
    expect(retryAfterOf(err({ headers: { get: () => undefined, 'Retry-After': '3' } }), now)).toBe(3_000);
    expect(retryAfterOf(err({ headers: { get: () => null, 'retry-after': '4' } }), now)).toBe(4_000);
  });

  it('reads no headers from functions', () => {
    expect(
      retryAfterOf(err({ headers: Object.assign(() => {}, { 'retry-after': '3' }) }), now),
    ).toBeUndefined();
    const response = Object.assign(() => {}, { headers: { 'retry-after': '3' } });
    expect(retryAfterOf(err({ response }), now)).toBeUndefined();
  });

  it("moves on to the response when the error's own headers cannot be listed", () => {
    const unlistable = new Proxy(
      {},
      {
        ownKeys() {
          throw new Error('keys');
        },
      },
    );
    const error = err({ headers: unlistable, response: { headers: { 'retry-after': '5' } } });
    expect(retryAfterOf(error, now)).toBe(5_000);
  });

  it("reads retryAfterMs only on bulwark's errors, from any copy of the package", () => {
    expect(retryAfterOf(err({ retryAfterMs: 500 }), now)).toBeUndefined();
    expect(retryAfterOf({ [brand]: true, retryAfterMs: 500 }, now)).toBe(500);
    const symbolsThrow = new Proxy(
      { retryAfterMs: 500 },
      {
        get(target, key) {
          if (typeof key === 'symbol') throw new Error('no symbols here');
          return Reflect.get(target, key);
        },
      },
    );
    expect(retryAfterOf(symbolsThrow, now)).toBeUndefined();
  });

  it('passes over a retryAfterMs that is NaN or absent and reads the causes', () => {
    const cause = err({ headers: { 'retry-after': '2' } });
    const nan = new RejectedError('x', {
      code: 'ERR_X',
      kind: 'rate_limited',
      retryAfterMs: Number.NaN,
      cause,
    });
    expect(retryAfterOf(nan, now)).toBe(2_000);
    expect(retryAfterOf(new RejectedError('x', { code: 'ERR_X', kind: 'rate_limited', cause }), now)).toBe(
      2_000,
    );
    expect(
      retryAfterOf(
        new RejectedError('x', { code: 'ERR_X', kind: 'rate_limited', retryAfterMs: Number.NaN }),
        now,
      ),
    ).toBeUndefined();
  });

  it('reads at most 8 levels below the thrown value', () => {
    const chain = (levels: number): unknown => {
      let error: unknown = err({ headers: { 'retry-after': '6' } });
      for (let i = 0; i < levels; i++) error = new Error(`level ${i}`, { cause: error });
      return error;
    };
    expect(retryAfterOf(chain(8), now)).toBe(6_000);
    expect(retryAfterOf(chain(9), now)).toBeUndefined();
  });

  it('reads at most 64 objects in one call', () => {
    const wide = (plain: number) =>
      new AggregateError([
        ...Array.from({ length: plain }, () => new Error('plain')),
        err({ headers: { 'retry-after': '7' } }),
      ]);
    expect(retryAfterOf(wide(62), now)).toBe(7_000);
    expect(retryAfterOf(wide(63), now)).toBeUndefined();
  });

  it('states no wait, and does not throw, for a header value whose reads throw', () => {
    const hostile = new Proxy(['3'], {
      get() {
        throw new Error('trap');
      },
    });
    const error = err({ headers: { 'retry-after': hostile } });
    expect(retryAfterOf(error, now)).toBeUndefined();
    expect(retryAfterOf(error)).toBeUndefined();
  });
});

describe('clampRetryAfterMs and retryAfterSeconds', () => {
  it('states NaN, negative waits and -0 as 0', () => {
    expect(clampRetryAfterMs(-5)).toBe(0);
    expect(clampRetryAfterMs(Number.NaN)).toBe(0);
    expect(clampRetryAfterMs(Number.NEGATIVE_INFINITY)).toBe(0);
    expect(Object.is(clampRetryAfterMs(-0), 0)).toBe(true);
    expect(clampRetryAfterMs(0)).toBe(0);
  });

  it('rounds up to whole milliseconds, at most 24 h', () => {
    expect(clampRetryAfterMs(0.2)).toBe(1);
    expect(clampRetryAfterMs(1_000.5)).toBe(1_001);
    expect(clampRetryAfterMs(MAX_RETRY_AFTER_MS - 0.5)).toBe(MAX_RETRY_AFTER_MS);
    expect(clampRetryAfterMs(MAX_RETRY_AFTER_MS)).toBe(MAX_RETRY_AFTER_MS);
    expect(clampRetryAfterMs(MAX_RETRY_AFTER_MS + 1)).toBe(MAX_RETRY_AFTER_MS);
    expect(clampRetryAfterMs(Number.POSITIVE_INFINITY)).toBe(MAX_RETRY_AFTER_MS);
  });

  it('gives whole seconds, rounded up, from 1 to 86 400', () => {
    expect(retryAfterSeconds(0)).toBe(1);
    expect(retryAfterSeconds(Number.NaN)).toBe(1);
    expect(retryAfterSeconds(1_000)).toBe(1);
    expect(retryAfterSeconds(1_001)).toBe(2);
    expect(retryAfterSeconds(9_999.738)).toBe(10);
    expect(retryAfterSeconds(1e25)).toBe(86_400);
  });
});
