/**
 * toProblem() field by field: the fixed title and generic detail of every kind, when a message is
 * shown, the retry summary of a RetriesExhaustedError, and the messages of its refusals.
 */
import { describe, expect, it } from 'vitest';
import { RetriesExhaustedError } from '../retry/errors.js';
import { ResilienceError } from './errors.js';
import { toHttpStatus, toProblem } from './http-status.js';
import { type Kind, kinds } from './kind.js';

const brand = Symbol.for('bulwark.ResilienceError');

/** A bulwark error as another copy of the package makes it: only the brand and the fields. */
function foreignCopy(fields: Record<string, unknown>): object {
  return { [brand]: true, message: 'x', ...fields };
}

describe('toProblem: every kind', () => {
  it.each<[Kind, string, number, string]>([
    [
      'transient',
      'Temporary failure',
      503,
      'A temporary failure occurred; the request may succeed if retried.',
    ],
    ['timeout', 'Timed out', 504, 'The operation did not complete in time.'],
    ['unavailable', 'Service unavailable', 503, 'A service needed to handle the request is unavailable.'],
    ['rate_limited', 'Too many requests', 429, 'Too many requests; slow down and retry later.'],
    ['overloaded', 'Overloaded', 503, 'The service is overloaded; retry later.'],
    ['invalid', 'Invalid request', 400, 'The request is not valid.'],
    ['unauthorized', 'Unauthorized', 401, 'Authentication is required or has failed.'],
    ['forbidden', 'Forbidden', 403, 'The request is not allowed.'],
    ['not_found', 'Not found', 404, 'The requested resource was not found.'],
    ['conflict', 'Conflict', 409, 'The request conflicts with the current state of the resource.'],
    ['canceled', 'Canceled', 499, 'The request was canceled.'],
    ['internal', 'Internal error', 500, 'An internal error occurred.'],
  ])('%s: title %j, status %i and a generic detail', (kind, title, status, detail) => {
    const error = new ResilienceError('internal text', { code: 'ERR_X', kind });
    expect(toProblem(error)).toEqual({
      type: `urn:bulwark:problem:${kind}`,
      title,
      status,
      detail,
      code: 'ERR_X',
      kind,
    });
  });
});

describe('toProblem: which messages are shown', () => {
  it('shows no message of a thrown function, even one marked expose', () => {
    const thrown = Object.assign(() => {}, { expose: true, message: 'secret' });
    expect(toProblem(thrown).detail).toBe('An internal error occurred.');
  });

  it('falls back to the generic detail when an exposed message is empty or not a string', () => {
    expect(toProblem({ status: 409, expose: true, message: 42 }).detail).toBe(
      'The request conflicts with the current state of the resource.',
    );
    expect(toProblem(Object.assign(new Error(''), { status: 404, expose: true })).detail).toBe(
      'The requested resource was not found.',
    );
    const ours = new ResilienceError('', { code: 'ERR_EMPTY', kind: 'forbidden', expose: true });
    expect(toProblem(ours).detail).toBe('The request is not allowed.');
  });

  it('gives ERR_UNKNOWN as the code of a bulwark error whose code is not a string', () => {
    expect(toProblem(foreignCopy({ kind: 'conflict', code: 42 })).code).toBe('ERR_UNKNOWN');
  });
});

describe('toProblem: the attempts of a RetriesExhaustedError', () => {
  it('says "attempt" for one attempt', () => {
    const error = new RetriesExhaustedError(1, 'elapsed', new Error('x'), 'timeout');
    expect(toProblem(error).detail).toBe('The operation did not complete in time. Gave up after 1 attempt.');
  });

  it('reads the attempts of a RetriesExhaustedError from another copy of the package', () => {
    const error = foreignCopy({ code: 'ERR_RETRIES_EXHAUSTED', kind: 'unavailable', attempts: 4 });
    expect(toProblem(error).detail).toBe(
      'A service needed to handle the request is unavailable. Gave up after 4 attempts.',
    );
  });

  it('states no attempts that are not a number', () => {
    const error = foreignCopy({ code: 'ERR_RETRIES_EXHAUSTED', kind: 'unavailable', attempts: '4' });
    expect(toProblem(error).detail).toBe('A service needed to handle the request is unavailable.');
  });

  it('states no attempts for an error with another code, whatever fields it has', () => {
    const error = Object.assign(new ResilienceError('x', { code: 'ERR_UPSTREAM', kind: 'unavailable' }), {
      attempts: 3,
    });
    expect(toProblem(error).detail).toBe('A service needed to handle the request is unavailable.');
  });
});

describe('refusals and their messages', () => {
  it('toHttpStatus names every kind it accepts', () => {
    expect(() => toHttpStatus('nope' as Kind)).toThrow(
      new TypeError(`expected "kind" to be one of ${kinds.map((k) => `"${k}"`).join(', ')}, got "nope"`),
    );
    expect(() => toHttpStatus('nope' as Kind)).toThrow(
      'expected "kind" to be one of "transient", "timeout", "unavailable", "rate_limited", "overloaded", ' +
        '"invalid", "unauthorized", "forbidden", "not_found", "conflict", "canceled", "internal", got "nope"',
    );
  });

  it('toProblem refuses an unknown option by name', () => {
    expect(() => toProblem(new Error('x'), { instanse: '/a' } as never)).toThrow(
      'unknown option "instanse" in toProblem options; did you mean "instance"?',
    );
  });

  it('toProblem says what is wrong with nowMs', () => {
    expect(() => toProblem(new Error('x'), { nowMs: Number.NaN })).toThrow(
      new TypeError('expected "nowMs" to be a finite number, got NaN'),
    );
    expect(() => toProblem(new Error('x'), { nowMs: '0' as unknown as number })).toThrow(
      'expected "nowMs" to be a finite number, got "0"',
    );
  });
});
