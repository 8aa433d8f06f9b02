import { describe, expect, it } from 'vitest';
import { classify } from '../core/classify.js';
import { isRejectedError, isResilienceError } from '../core/errors.js';
import { toProblem } from '../core/http-status.js';
import { InvalidTransitionError, isInvalidTransitionError } from './errors.js';

/** A second, separately loaded copy of this module, as a duplicate install of bulwark would be. */
const otherCopy = (): Promise<typeof import('./errors.js')> => import('./errors.js?other-copy' as string);

describe('InvalidTransitionError', () => {
  it('names the field and both states, carries them, and is a conflict refusal', () => {
    const error = new InvalidTransitionError('status', 'shipped', 'pending', { expose: true });
    expect(error.message).toBe('"status" may not move from "shipped" to "pending"');
    expect(error).toMatchObject({
      name: 'InvalidTransitionError',
      field: 'status',
      from: 'shipped',
      to: 'pending',
      code: 'ERR_INVALID_TRANSITION',
      kind: 'conflict',
      expose: true,
    });
    expect(error.retryAfterMs).toBeUndefined();
    expect(isRejectedError(error)).toBe(true);
    expect(classify(error)).toBe('conflict');
  });

  it('is not exposed unless told: a value that is no state may come from a request', () => {
    const error = new InvalidTransitionError('status', 'paid', '<script>');
    expect(error.expose).toBe(false);
    expect(error.to).toBe('<script>');
  });

  it('becomes a 409 problem whose detail is the message only when exposed', () => {
    const exposed = toProblem(new InvalidTransitionError('status', 'shipped', 'pending', { expose: true }));
    expect(exposed).toMatchObject({
      status: 409,
      detail: '"status" may not move from "shipped" to "pending"',
    });
    const internal = toProblem(new InvalidTransitionError('status', 'paid', '<script>'));
    expect(internal.status).toBe(409);
    expect(internal.detail).not.toContain('<script>');
  });

  it('shows a value that is no string as such, and keeps it as it was', () => {
    const to = { status: 'paid' };
    const error = new InvalidTransitionError('status', 'paid', to);
    expect(error.message).toBe('"status" may not move from "paid" to an object');
    expect(error.to).toBe(to);
    expect(new InvalidTransitionError('status', 'paid', undefined).message).toBe(
      '"status" may not move from "paid" to undefined',
    );
  });
});

describe('isInvalidTransitionError', () => {
  it('is true for the error only', () => {
    expect(isInvalidTransitionError(new InvalidTransitionError('s', 'a', 'b'))).toBe(true);
    for (const other of [
      new Error('"s" may not move'),
      { code: 'ERR_INVALID_TRANSITION' },
      null,
      undefined,
      'x',
    ]) {
      expect(isInvalidTransitionError(other)).toBe(false);
    }
  });

  it('recognises the error from another copy of bulwark, which instanceof does not', async () => {
    const other = await otherCopy();
    expect(other.InvalidTransitionError).not.toBe(InvalidTransitionError);
    const error = new other.InvalidTransitionError('status', 'a', 'b');
    expect(error).not.toBeInstanceOf(InvalidTransitionError);
    expect(isInvalidTransitionError(error)).toBe(true);
    expect(isResilienceError(error)).toBe(true);
    expect(other.isInvalidTransitionError(new InvalidTransitionError('status', 'a', 'b'))).toBe(true);
  });
});
