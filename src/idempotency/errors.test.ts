import { describe, expect, it } from 'vitest';
import { ResilienceError, toProblem } from '../index.js';
import {
  IdempotencyConflictError,
  IdempotencyInProgressError,
  isIdempotencyConflictError,
  isIdempotencyInProgressError,
  isLeaseLostError,
  isStoredFailureError,
  LeaseLostError,
  StoredFailureError,
} from './errors.js';

describe('idempotency errors', () => {
  it.each([
    [
      () => new IdempotencyConflictError('k'),
      'ERR_IDEMPOTENCY_CONFLICT',
      'this idempotency key was already used for a different request',
    ],
    [
      () => new IdempotencyInProgressError('k', 1_500),
      'ERR_IDEMPOTENCY_IN_PROGRESS',
      'a request with this idempotency key is still in progress',
    ],
    [
      () => new LeaseLostError('k'),
      'ERR_LEASE_LOST',
      'the idempotency lease was lost before the result was stored',
    ],
  ])('%#: a conflict with a stable code, a message safe to show (never the key)', (make, code, message) => {
    const error = make();
    expect(error).toMatchObject({ code, kind: 'conflict', key: 'k', message, expose: true });
    expect(toProblem(error).detail).toBe(message);
    expect(isIdempotencyConflictError(error)).toBe(code === 'ERR_IDEMPOTENCY_CONFLICT');
    expect(isIdempotencyInProgressError(error)).toBe(code === 'ERR_IDEMPOTENCY_IN_PROGRESS');
    expect(isLeaseLostError(error)).toBe(code === 'ERR_LEASE_LOST');
    expect(isStoredFailureError(error)).toBe(false);
  });

  it('an in-progress error says when to retry; a lease loss keeps its cause', () => {
    expect(new IdempotencyInProgressError('k', 1_500).retryAfterMs).toBe(1_500);
    const cause = new Error('down');
    expect(new LeaseLostError('k', cause).cause).toBe(cause);
  });

  it('a stored failure replays the original kind, code, name and status; exposed only if the original was', () => {
    const replayed = new StoredFailureError(
      { name: 'CardDeclined', message: 'declined', kind: 'invalid', code: 'E_CARD', status: 402 },
      true,
    );
    expect(replayed).toMatchObject({
      message: 'declined',
      kind: 'invalid',
      code: 'E_CARD',
      originalName: 'CardDeclined',
      status: 402,
      expose: true,
    });
    const bare = new StoredFailureError(
      { name: 'Error', message: 'internal detail', kind: 'not_found' },
      false,
    );
    expect(bare).toMatchObject({ code: 'ERR_STORED_FAILURE', status: undefined, expose: false });
    expect(isStoredFailureError(replayed)).toBe(true);
    expect(
      isStoredFailureError(new ResilienceError('x', { code: 'ERR_STORED_FAILURE', kind: 'invalid' })),
    ).toBe(false);
    expect(isStoredFailureError({ code: 'E_CARD' })).toBe(false);
    expect(isStoredFailureError({ [Symbol.for('bulwark.StoredFailureError')]: true })).toBe(false);
    expect(isStoredFailureError(null)).toBe(false);
  });
});
