import fc from 'fast-check';
import pg from 'pg';
import { describe, expect, it } from 'vitest';
import { RetriesExhaustedError } from '../retry/errors.js';
import { RejectedError } from './errors.js';
import { parseRetryAfter, retryAfterOf } from './retry-after.js';

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
