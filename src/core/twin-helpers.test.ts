/**
 * One public helper per job: `fromHttpStatus` maps a status to a kind (no `httpStatusKind` twin),
 * `retryAfterOf` finds the wait an error asks for, with or without the time (no `findRetryAfter`
 * twin), and `parseRetryAfter` reads one header value.
 */
import { describe, expect, it } from 'vitest';
import * as root from '../index.js';
import { retryAfterOf } from './retry-after.js';

function withHeader(value: string): Error {
  return Object.assign(new Error('upstream said no'), { status: 429, headers: { 'retry-after': value } });
}

describe('one helper per job', () => {
  it('exports fromHttpStatus, retryAfterOf and parseRetryAfter, and no twins', () => {
    const names = Object.keys(root);
    expect(names).toEqual(expect.arrayContaining(['fromHttpStatus', 'retryAfterOf', 'parseRetryAfter']));
    expect(names).not.toContain('httpStatusKind');
    expect(names).not.toContain('findRetryAfter');
  });

  it('retryAfterOf without the time reads delay-seconds and skips HTTP-dates', () => {
    expect(retryAfterOf(withHeader('2'))).toBe(2_000);
    expect(retryAfterOf(withHeader('Wed, 21 Oct 2015 07:28:00 GMT'))).toBeUndefined();
    expect(retryAfterOf(withHeader('Wed, 21 Oct 2015 07:28:00 GMT'), Date.UTC(2015, 9, 21, 7, 27, 30))).toBe(
      30_000,
    );
  });

  it('retryAfterOf still refuses a time that is not a finite number', () => {
    for (const bad of [Number.NaN, Infinity, '0']) {
      expect(() => retryAfterOf(withHeader('2'), bad as number)).toThrow(
        /expected "nowMs" to be a finite number/,
      );
    }
  });

  it('retryAfterOf never throws on a hostile error', () => {
    const hostile = new Proxy(
      {},
      {
        get() {
          throw new Error('trap');
        },
      },
    );
    expect(retryAfterOf(hostile)).toBeUndefined();
    expect(retryAfterOf(hostile, 0)).toBeUndefined();
  });
});
