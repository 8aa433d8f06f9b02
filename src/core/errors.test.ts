import { describe, expect, it } from 'vitest';
import {
  defineErrorGuard,
  isRejectedError,
  isResilienceError,
  isStoreUnavailableError,
  isTimeoutError,
  RejectedError,
  ResilienceError,
  StoreUnavailableError,
  TimeoutError,
} from './errors.js';

/** A second, separately loaded copy of this module, as a duplicate install of bulwark would be. */
const otherCopy = (): Promise<typeof import('./errors.js')> => import('./errors.js?other-copy' as string);

class QuotaError extends RejectedError {}

describe('ResilienceError', () => {
  it('carries its message, code, kind and the name of the class constructed', () => {
    const error = new QuotaError('quota used up', { code: 'ERR_QUOTA', kind: 'rate_limited' });
    expect(error).toBeInstanceOf(Error);
    expect(error.message).toBe('quota used up');
    expect(error.code).toBe('ERR_QUOTA');
    expect(error.kind).toBe('rate_limited');
    expect(error.name).toBe('QuotaError');
    expect(new ResilienceError('x', { code: 'ERR_X', kind: 'internal' }).name).toBe('ResilienceError');
  });

  it('keeps a cause when given and has none otherwise', () => {
    const cause = new Error('socket hang up');
    expect(new ResilienceError('x', { code: 'ERR_X', kind: 'transient', cause }).cause).toBe(cause);
    const bare = new ResilienceError('x', { code: 'ERR_X', kind: 'transient' });
    expect('cause' in bare).toBe(false);
    expect('cause' in new ResilienceError('x', { code: 'ERR_X', kind: 'transient', cause: undefined })).toBe(
      false,
    );
  });

  it('carries retryAfterMs when given', () => {
    expect(
      new ResilienceError('x', { code: 'ERR_X', kind: 'rate_limited', retryAfterMs: 250 }).retryAfterMs,
    ).toBe(250);
    expect(new ResilienceError('x', { code: 'ERR_X', kind: 'rate_limited' }).retryAfterMs).toBeUndefined();
  });

  it('is not exposed unless expose is true', () => {
    expect(new ResilienceError('x', { code: 'ERR_X', kind: 'internal' }).expose).toBe(false);
    expect(new ResilienceError('x', { code: 'ERR_X', kind: 'internal', expose: false }).expose).toBe(false);
    expect(new ResilienceError('x', { code: 'ERR_X', kind: 'internal', expose: true }).expose).toBe(true);
  });
});

describe('guards', () => {
  it('tell bulwark errors and refusals from anything else', () => {
    const base = new ResilienceError('x', { code: 'ERR_X', kind: 'internal' });
    const refusal = new QuotaError('x', { code: 'ERR_QUOTA', kind: 'rate_limited' });
    expect(isResilienceError(base)).toBe(true);
    expect(isResilienceError(refusal)).toBe(true);
    expect(isRejectedError(refusal)).toBe(true);
    expect(isRejectedError(base)).toBe(false);
    for (const other of [new Error('x'), null, undefined, 'ERR_X', 5, {}, { code: 'ERR_X' }]) {
      expect(isResilienceError(other)).toBe(false);
      expect(isRejectedError(other)).toBe(false);
    }
  });

  it('recognise errors from another copy of bulwark, which instanceof does not', async () => {
    const other = await otherCopy();
    expect(other.TimeoutError).not.toBe(TimeoutError);
    const timeout = new other.TimeoutError(10);
    expect(timeout).not.toBeInstanceOf(TimeoutError);
    expect(isResilienceError(timeout)).toBe(true);
    expect(isRejectedError(timeout)).toBe(true);
    expect(isTimeoutError(timeout)).toBe(true);
    expect(other.isTimeoutError(new TimeoutError(10))).toBe(true);
    expect(isRejectedError(new other.ResilienceError('x', { code: 'ERR_X', kind: 'internal' }))).toBe(false);
  });

  it('recognise the brands other versions of bulwark set, which are registered symbols', () => {
    const foreign = Object.assign(new Error('x'), {
      code: 'ERR_TIMEOUT',
      [Symbol.for('bulwark.ResilienceError')]: true,
      [Symbol.for('bulwark.RejectedError')]: true,
    });
    expect(isResilienceError(foreign)).toBe(true);
    expect(isRejectedError(foreign)).toBe(true);
    expect(isTimeoutError(foreign)).toBe(true);
  });

  it('check the code of a bulwark error, and only of a bulwark error', () => {
    const isQuotaError = defineErrorGuard<QuotaError>('ERR_QUOTA');
    expect(isQuotaError(new QuotaError('x', { code: 'ERR_QUOTA', kind: 'rate_limited' }))).toBe(true);
    expect(isQuotaError(new QuotaError('x', { code: 'ERR_OTHER', kind: 'rate_limited' }))).toBe(false);
    expect(isQuotaError(Object.assign(new Error('x'), { code: 'ERR_QUOTA' }))).toBe(false);
    expect(isTimeoutError(new StoreUnavailableError('down'))).toBe(false);
    expect(isStoreUnavailableError(new TimeoutError(5))).toBe(false);
  });
});

describe('TimeoutError', () => {
  it('says how long the limit was and may be shown to clients', () => {
    const error = new TimeoutError(1500);
    expect(error.message).toBe('operation timed out after 1500 ms');
    expect(error.timeoutMs).toBe(1500);
    expect(error.code).toBe('ERR_TIMEOUT');
    expect(error.kind).toBe('timeout');
    expect(error.name).toBe('TimeoutError');
    expect(error.expose).toBe(true);
    expect('cause' in error).toBe(false);
    expect(isTimeoutError(error)).toBe(true);
    expect(isRejectedError(error)).toBe(true);
  });

  it('takes a custom message and a cause', () => {
    const cause = new Error('slow upstream');
    const error = new TimeoutError(20, { message: 'lookup took too long', cause });
    expect(error.message).toBe('lookup took too long');
    expect(error.cause).toBe(cause);
    expect(error.timeoutMs).toBe(20);
    expect(error.expose).toBe(true);
  });
});

describe('StoreUnavailableError', () => {
  it('keeps the driver message and cause, is a refusal of kind unavailable, and is not exposed', () => {
    const cause = new Error('ECONNREFUSED 10.0.0.5:6379');
    const error = new StoreUnavailableError('redis unavailable: ECONNREFUSED 10.0.0.5:6379', cause);
    expect(error.message).toBe('redis unavailable: ECONNREFUSED 10.0.0.5:6379');
    expect(error.cause).toBe(cause);
    expect(error.code).toBe('ERR_STORE_UNAVAILABLE');
    expect(error.kind).toBe('unavailable');
    expect(error.name).toBe('StoreUnavailableError');
    expect(error.expose).toBe(false);
    expect(isStoreUnavailableError(error)).toBe(true);
    expect(isRejectedError(error)).toBe(true);
    expect('cause' in new StoreUnavailableError('down')).toBe(false);
  });
});
