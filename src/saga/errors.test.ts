import { describe, expect, it } from 'vitest';
import { isRejectedError } from '../core/errors.js';
import {
  DuplicateSagaError,
  isDuplicateSagaError,
  isSagaFailedError,
  isSagaLeaseLostError,
  SagaFailedError,
  SagaLeaseLostError,
} from './errors.js';

describe('SagaFailedError', () => {
  it('carries the step, the cause, what was compensated and what failed; its kind follows the outcome', () => {
    const cause = Object.assign(new Error('unavailable'), { status: 503 });
    const clean = new SagaFailedError('s', 'pay', cause, ['reserve'], []);
    expect(clean).toMatchObject({
      sagaId: 's',
      step: 'pay',
      cause,
      compensated: ['reserve'],
      compensationErrors: [],
    });
    expect(clean.kind).toBe('unavailable');
    expect(clean.message).toBe('the saga failed at step "pay"; 1 step(s) compensated');
    const dirty = new SagaFailedError('s', 'pay', cause, [], [{ step: 'reserve', error: new Error('x') }]);
    expect(dirty.kind).toBe('internal');
    expect(dirty.expose).toBe(false);
    expect(isRejectedError(clean)).toBe(true);
  });

  it('the guard works across copies (by code), and refuses look-alikes', () => {
    expect(isSagaFailedError(new SagaFailedError('s', 'a', undefined, [], []))).toBe(true);
    expect(isSagaFailedError(new Error('the saga failed'))).toBe(false);
    expect(isSagaFailedError({ code: 'ERR_SAGA_FAILED' })).toBe(false);
  });
});

describe('DuplicateSagaError and SagaLeaseLostError', () => {
  it('carry the run id, a stable code, kind conflict, and an exposed message', () => {
    const duplicate = new DuplicateSagaError('o-1');
    expect(duplicate).toMatchObject({
      sagaId: 'o-1',
      code: 'ERR_SAGA_DUPLICATE',
      kind: 'conflict',
      expose: true,
    });
    expect(duplicate.message).toBe('a saga run with id "o-1" is already in the log');
    const cause = new Error('renewal refused');
    const lost = new SagaLeaseLostError('o-2', cause);
    expect(lost).toMatchObject({
      sagaId: 'o-2',
      code: 'ERR_SAGA_LEASE_LOST',
      kind: 'conflict',
      expose: true,
      cause,
    });
    expect(lost.message).toBe('the saga run "o-2" lost its lease on the log');
    expect([isDuplicateSagaError(duplicate), isDuplicateSagaError(lost)]).toEqual([true, false]);
    expect([isSagaLeaseLostError(lost), isSagaLeaseLostError(duplicate)]).toEqual([true, false]);
  });
});
