import { describe, expect, it } from 'vitest';
import { isRejectedError, TimeoutError } from '../core/errors.js';
import { isOutboxPublishError, OutboxPublishError } from './errors.js';

describe('OutboxPublishError', () => {
  it('says how many events failed, maps each to its error, and is a transient refusal caused by the first', () => {
    const first = new Error('too big');
    const failures = new Map<string, unknown>([
      ['e1', first],
      ['e2', new Error('no stream')],
    ]);
    const error = new OutboxPublishError(failures);
    expect(error).toMatchObject({ code: 'ERR_OUTBOX_PUBLISH', kind: 'transient', cause: first });
    expect(error.message).toBe('2 event(s) of the batch were not confirmed');
    expect(error.failures).toBe(failures);
    expect(error.name).toBe('OutboxPublishError');
    expect(isRejectedError(error)).toBe(true);
  });

  it('the guard works across copies (by code), and refuses look-alikes', () => {
    expect(isOutboxPublishError(new OutboxPublishError(new Map([['e1', 'nack']])))).toBe(true);
    // Another copy of bulwark: the same brand and code, another class.
    const copy = Object.assign(new Error('1 event(s) of the batch were not confirmed'), {
      code: 'ERR_OUTBOX_PUBLISH',
      [Symbol.for('bulwark.ResilienceError')]: true,
    });
    expect(isOutboxPublishError(copy)).toBe(true);
    expect(isOutboxPublishError(new TimeoutError(1_000))).toBe(false);
    expect(isOutboxPublishError({ code: 'ERR_OUTBOX_PUBLISH' })).toBe(false);
    expect(isOutboxPublishError(new Error('not confirmed'))).toBe(false);
  });
});
