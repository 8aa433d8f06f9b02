import { describe, expect, it } from 'vitest';
import { isRejectedError } from '../core/errors.js';
import { LockLostError, LockNotAcquiredError, StaleFenceError } from './errors.js';

describe('lock errors', () => {
  it('LockNotAcquiredError says how long it waited, exposes its message, and carries the hint', () => {
    const error = new LockNotAcquiredError('k', 1_000, 250);
    expect(error.message).toBe('the lock was not acquired within 1000 ms: another owner holds it');
    expect(error).toMatchObject({
      key: 'k',
      code: 'ERR_LOCK_NOT_ACQUIRED',
      kind: 'conflict',
      retryAfterMs: 250,
      expose: true,
    });
    expect(isRejectedError(error)).toBe(true);
  });

  it('LockLostError says what happened and exposes it', () => {
    const error = new LockLostError('k');
    expect(error.message).toBe('the lock was lost before the work finished');
    expect(error).toMatchObject({ code: 'ERR_LOCK_LOST', expose: true });
  });

  it('StaleFenceError names both fences and exposes its message', () => {
    const error = new StaleFenceError('balance', 41, 42);
    expect(error.message).toBe("the write's fence 41 is lower than the highest seen, 42: its lock was lost");
    expect(error).toMatchObject({
      resource: 'balance',
      fence: 41,
      highest: 42,
      code: 'ERR_STALE_FENCE',
      kind: 'conflict',
      expose: true,
    });
  });
});
