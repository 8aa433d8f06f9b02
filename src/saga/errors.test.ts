import { describe, expect, it } from 'vitest';
import { isRejectedError } from '../core/errors.js';
import { isSagaFailedError, SagaFailedError } from './errors.js';

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
