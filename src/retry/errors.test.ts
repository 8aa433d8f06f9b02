import { describe, expect, it } from 'vitest';
import { ResilienceError } from '../core/errors.js';
import { FakeClock } from '../testing/fake-clock.js';
import { constant } from './backoff.js';
import { isRetriesExhaustedError, RetriesExhaustedError } from './errors.js';
import type { RetryOptions } from './options.js';
import { retry, retryAll } from './retry.js';

const transient = (message: string) => new ResilienceError(message, { code: 'E_FLAKY', kind: 'transient' });

/** The error a retry gives up with when every attempt fails with `transient(message)` after `takesMs`. */
async function givenUp(options: RetryOptions, deadline?: number, takesMs = 0) {
  const clock = new FakeClock();
  const call = retry({ clock, backoff: constant(100), ...options })
    .execute(
      async () => {
        if (takesMs > 0) await clock.sleep(takesMs);
        throw transient('connection reset');
      },
      deadline === undefined ? {} : { deadline },
    )
    .catch((e: unknown) => e);
  await clock.advance(10_000);
  const error = await call;
  expect(isRetriesExhaustedError(error)).toBe(true);
  return error as RetriesExhaustedError;
}

describe('RetriesExhaustedError messages say how many attempts ran, why it stopped, and the last error', () => {
  it.each([
    [1, 'gave up after 1 attempt; last error: connection reset'],
    [3, 'gave up after 3 attempts; last error: connection reset'],
  ])('attempts spent (maxAttempts %i)', async (maxAttempts, message) => {
    const error = await givenUp({ maxAttempts });
    expect(error.message).toBe(message);
    expect(error.attempts).toBe(maxAttempts);
  });

  it.each([
    [50, 1, 'gave up after 1 attempt: maxElapsedMs spent; last error: connection reset'],
    [250, 3, 'gave up after 3 attempts: maxElapsedMs spent; last error: connection reset'],
  ])('maxElapsedMs %i spent', async (maxElapsedMs, attempts, message) => {
    const error = await givenUp({ maxAttempts: 10, maxElapsedMs });
    expect(error.message).toBe(message);
    expect(error.attempts).toBe(attempts);
  });

  it.each([
    [
      100,
      1,
      'gave up after 1 attempt: the deadline cannot fit another attempt; last error: connection reset',
    ],
    [
      150,
      2,
      'gave up after 2 attempts: the deadline cannot fit another attempt; last error: connection reset',
    ],
  ])('deadline %i cannot fit another attempt', async (deadline, attempts, message) => {
    // Each attempt takes 10 ms and the backoff is 100 ms: after attempt 1 another would end at 120, after attempt 2 at 230.
    const error = await givenUp({ maxAttempts: 10 }, deadline, 10);
    expect(error.message).toBe(message);
    expect(error.attempts).toBe(attempts);
  });

  it('shows a last error that is not an Error as a string', async () => {
    const clock = new FakeClock();
    const call = retryAll({ clock, maxAttempts: 2, backoff: constant(1) })
      .execute(() => {
        throw 'socket hang up';
      })
      .catch((e: unknown) => e);
    await clock.advance(10);
    const error = (await call) as RetriesExhaustedError;
    expect(error.message).toBe('gave up after 2 attempts; last error: socket hang up');
    expect(error.cause).toBe('socket hang up');
  });

  it('built directly, it carries the reason, the cause and its kind', () => {
    const cause = new Error('503');
    const error = new RetriesExhaustedError(4, 'elapsed', cause, 'unavailable');
    expect(error.message).toBe('gave up after 4 attempts: maxElapsedMs spent; last error: 503');
    expect(error).toMatchObject({
      attempts: 4,
      reason: 'elapsed',
      kind: 'unavailable',
      code: 'ERR_RETRIES_EXHAUSTED',
    });
    expect(error.cause).toBe(cause);
  });
});
