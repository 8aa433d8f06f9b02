import { describe, expect, it } from 'vitest';
import { deferred } from '../../../test/support/deferred.js';
import { track } from '../../../test/support/track.js';
import type { TimerHandle } from '../../core/clock.js';
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

  it.each(['reconnecting', 'close', 'end', 'disconnecting'])(
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

  it('a call that answered in time leaves no timer keeping the process alive', async () => {
    const clock = new FakeClock();
    const deadline = new StoreDeadline(clock, 100);
    const reply = deferred<string>();
    const call = deadline.run(ready, () => reply.promise);
    expect(clock.aliveTimers).toBe(1);
    reply.resolve('PONG');
    expect(await call).toBe('PONG');
    expect(clock.aliveTimers).toBe(0);
    const failing = deferred<string>();
    const failed = deadline.run(ready, () => failing.promise).catch((e: unknown) => e);
    expect(clock.aliveTimers).toBe(1);
    failing.reject(new Error('ECONNRESET'));
    expect(isStoreUnavailableError(await failed)).toBe(true);
    expect(clock.aliveTimers).toBe(0);
  });

  it('names the failure of the call in its message, an Error by its message, anything else as a string', async () => {
    const deadline = new StoreDeadline(new FakeClock(), 100);
    await expect(deadline.run(ready, () => Promise.reject(new Error('ECONNRESET')))).rejects.toThrow(
      'Redis failed: ECONNRESET',
    );
    await expect(deadline.run(ready, () => Promise.reject('LOADING'))).rejects.toThrow(
      'Redis failed: LOADING',
    );
    const unavailable = deadline.timeoutError();
    await expect(deadline.run(ready, () => Promise.reject(unavailable))).rejects.toBe(unavailable);
  });

  it('names the store given in its messages', async () => {
    const clock = new FakeClock();
    const deadline = new StoreDeadline(clock, 50, 'Valkey');
    await expect(deadline.run({ status: 'end' }, () => Promise.resolve(1))).rejects.toThrow(
      'Valkey connection is end',
    );
    await expect(deadline.run(ready, () => Promise.reject(new Error('x')))).rejects.toThrow(
      'Valkey failed: x',
    );
    const late = deadline.run(ready, () => new Promise<never>(() => {})).catch((e: unknown) => e);
    await clock.advance(50);
    expect(((await late) as Error).message).toBe('Valkey did not answer within 50 ms');
  });

  it('a deadline earlier than the last one queued (the clock stepped back) still fires at its own time', async () => {
    const fake = new FakeClock(1_000);
    let offset = 0;
    const clock = {
      now: () => fake.now() + offset,
      sleep: (ms: number) => fake.sleep(ms),
      setTimer: (callback: () => void, ms: number) => fake.setTimer(callback, ms),
      clearTimer: (handle: TimerHandle) => fake.clearTimer(handle),
    };
    const deadline = new StoreDeadline(clock, 100);
    const first = track(deadline.run(ready, () => new Promise<never>(() => {}))); // due at 1 100
    offset = -500; // the clock steps back: the next deadlines (600 on it) come before the first's
    const answered = deferred<string>();
    const second = deadline.run(ready, () => answered.promise);
    const third = track(deadline.run(ready, () => new Promise<never>(() => {})));
    answered.resolve('PONG');
    expect(await second).toBe('PONG');
    expect(fake.pendingTimers).toBe(2); // the shared timer and the third call's own; the second's is gone
    await fake.advance(99);
    expect(third.settled).toBe(false);
    await fake.advance(1);
    expect(third.error).toMatchObject({ message: 'Redis did not answer within 100 ms' });
    expect(first.settled).toBe(false); // 1 100 on the clock that stepped back: 500 ms more
    await fake.advance(500);
    expect(isStoreUnavailableError(first.error)).toBe(true);
    expect(fake.pendingTimers).toBe(0);
  });

  it('defaults to 100 ms', () => {
    expect(DEFAULT_STORE_TIMEOUT_MS).toBe(100);
  });
});
