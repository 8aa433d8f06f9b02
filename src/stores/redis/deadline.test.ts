import { describe, expect, it } from 'vitest';
import { deferred } from '../../../test/support/deferred.js';
import { isStoreUnavailableError, isTimeoutError, type StoreUnavailableError } from '../../core/errors.js';
import { FakeClock } from '../../testing/fake-clock.js';
import { DEFAULT_STORE_TIMEOUT_MS, StoreDeadline } from './deadline.js';

const ready = { status: 'ready' };

describe('StoreDeadline', () => {
  it('passes a reply that arrives in time and leaves no live deadline', async () => {
    const clock = new FakeClock();
    const deadline = new StoreDeadline(clock, 100);
    expect(await deadline.run(ready, () => Promise.resolve('PONG'))).toBe('PONG');
    await clock.advance(100); // the shared timer fires with nothing to expire
    expect(clock.pendingTimers).toBe(0);
  });

  it('rejects with StoreUnavailableError (cause TimeoutError) at the deadline; the late reply is dropped', async () => {
    const clock = new FakeClock();
    const deadline = new StoreDeadline(clock, 100);
    const reply = deferred<string>();
    const outcome = deadline
      .run(ready, () => reply.promise)
      .then(
        () => 'resolved',
        (error: unknown) => error,
      );
    await clock.advance(99);
    await clock.advance(1);
    const error = (await outcome) as StoreUnavailableError;
    expect(isStoreUnavailableError(error)).toBe(true);
    expect(error.message).toBe('Redis did not answer within 100 ms');
    expect(isTimeoutError(error.cause)).toBe(true);
    reply.resolve('late'); // nothing observes it
    await clock.advance(0);
    expect(await outcome).toBe(error);
  });

  it('calls in flight together share one timer', async () => {
    const clock = new FakeClock();
    const deadline = new StoreDeadline(clock, 100);
    const replies = Array.from({ length: 50 }, () => deferred<number>());
    const outcomes = replies.map((r, i) =>
      deadline
        .run(ready, () => r.promise)
        .then(
          (v) => v,
          () => -i,
        ),
    );
    expect(clock.pendingTimers).toBe(1);
    replies.forEach((r, i) => {
      if (i % 2 === 0) r.resolve(i);
    });
    await clock.advance(100);
    const results = await Promise.all(outcomes);
    expect(results.filter((v) => v >= 0 && v % 2 === 0)).toHaveLength(25);
    expect(results.filter((v) => v < 0)).toHaveLength(25);
    expect(clock.pendingTimers).toBe(0);
  });

  it('wraps a failure of the call in StoreUnavailableError with the original as cause', async () => {
    const deadline = new StoreDeadline(new FakeClock(), 100);
    const cause = new Error('ECONNRESET');
    const error = (await deadline.run(ready, () => Promise.reject(cause)).catch((e: unknown) => e)) as Error;
    expect(isStoreUnavailableError(error)).toBe(true);
    expect(error.cause).toBe(cause);
    const thrown = (await deadline
      .run(ready, () => {
        throw cause;
      })
      .catch((e: unknown) => e)) as Error;
    expect(thrown.cause).toBe(cause);
  });

  it.each(['reconnecting', 'close', 'end'])(
    'refuses at once, without calling, while the connection is %s (no offline queueing)',
    async (status) => {
      const clock = new FakeClock();
      const deadline = new StoreDeadline(clock, 100);
      let called = false;
      const error = await deadline
        .run({ status }, () => {
          called = true;
          return Promise.resolve(1);
        })
        .catch((e: unknown) => e);
      expect(isStoreUnavailableError(error)).toBe(true);
      expect((error as Error).message).toBe(`Redis connection is ${status}`);
      expect(called).toBe(false);
      expect(clock.pendingTimers).toBe(0);
    },
  );

  it.each(['wait', 'connecting', 'connect', 'ready', undefined])(
    'sends the command while the status is %s',
    async (status) => {
      const deadline = new StoreDeadline(new FakeClock(), 100);
      expect(await deadline.run(status === undefined ? {} : { status }, () => Promise.resolve('ok'))).toBe(
        'ok',
      );
    },
  );

  it('defaults to 100 ms', () => {
    expect(DEFAULT_STORE_TIMEOUT_MS).toBe(100);
  });
});
