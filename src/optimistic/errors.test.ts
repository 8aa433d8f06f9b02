import { describe, expect, it } from 'vitest';
import { isRejectedError } from '../core/errors.js';
import { toHttpStatus, toProblem } from '../core/http-status.js';
import {
  isOptimisticConflictError,
  isOptimisticNotFoundError,
  OptimisticConflictError,
  OptimisticNotFoundError,
} from './errors.js';

describe('optimistic update errors', () => {
  it('OptimisticConflictError counts the attempts, carries the hint, and keeps the key out of the message', () => {
    const error = new OptimisticConflictError('account:42', 5, 160);
    expect(error.message).toBe('the record was changed by another writer during each of 5 attempts');
    expect(error.message).not.toContain('account:42');
    expect(error).toMatchObject({
      name: 'OptimisticConflictError',
      key: 'account:42',
      attempts: 5,
      code: 'ERR_OPTIMISTIC_CONFLICT',
      kind: 'conflict',
      retryAfterMs: 160,
      expose: true,
    });
    expect(new OptimisticConflictError(7, 1, 0).message).toBe(
      'the record was changed by another writer during each of 1 attempt',
    );
    expect(isRejectedError(error)).toBe(true);
    expect(toHttpStatus(error.kind)).toBe(409);
    expect(toProblem(error)).toMatchObject({
      status: 409,
      detail: error.message,
      code: 'ERR_OPTIMISTIC_CONFLICT',
    });
  });

  it('OptimisticNotFoundError is kind not_found (404) and names no key in its message', () => {
    const error = new OptimisticNotFoundError({ id: 'u1' }, 2);
    expect(error.message).toBe('the record to update does not exist');
    expect(error).toMatchObject({
      key: { id: 'u1' },
      attempts: 2,
      code: 'ERR_OPTIMISTIC_NOT_FOUND',
      kind: 'not_found',
      expose: true,
      retryAfterMs: undefined,
    });
    expect(toProblem(error)).toMatchObject({ status: 404 });
  });

  it('the guards tell the two apart, and work across copies (by brand and code, not instanceof)', () => {
    const conflict = new OptimisticConflictError('k', 3, 10);
    const missing = new OptimisticNotFoundError('k', 1);
    expect([isOptimisticConflictError(conflict), isOptimisticConflictError(missing)]).toEqual([true, false]);
    expect([isOptimisticNotFoundError(missing), isOptimisticNotFoundError(conflict)]).toEqual([true, false]);
    expect(isOptimisticConflictError({ code: 'ERR_OPTIMISTIC_CONFLICT' })).toBe(false);
    expect(isOptimisticConflictError(new Error('conflict'))).toBe(false);
    // An error from another copy of bulwark: its own class, the same global brand and code.
    const fromOtherCopy = { [Symbol.for('bulwark.ResilienceError')]: true, code: 'ERR_OPTIMISTIC_CONFLICT' };
    expect(isOptimisticConflictError(fromOtherCopy)).toBe(true);
  });
});
