/**
 * The bound of `wait()`'s queue per key (`maxQueue`): one waiter more than the bound is refused at
 * once with a `RateLimitedError` whose `reason` is `queue-full`, per key, and through the policy.
 */
import { describe, expect, it } from 'vitest';
import { SwitchableStore } from '../../test/rate-limit/support/switchable-store.js';
import { track } from '../../test/support/track.js';
import { FakeClock } from '../testing/fake-clock.js';
import { isRateLimitedError, RateLimitedError } from './errors.js';
import { rateLimiter } from './rate-limiter.js';

/** 10 per second, burst 1, `maxQueue` 2, its key `k` emptied. */
function emptied(maxQueue = 2) {
  const clock = new FakeClock();
  const limiter = rateLimiter({ limit: 10, periodMs: 1_000, burst: 1, maxQueue, clock });
  limiter.takeSync('k');
  return { clock, limiter };
}

describe('wait: maxQueue', () => {
  it.each([0, -1, 1.5, Number.NaN, '2'])('refuses maxQueue %s with a TypeError', (maxQueue) => {
    expect(() => rateLimiter({ limit: 1, periodMs: 1, maxQueue: maxQueue as number })).toThrow(
      /"maxQueue" to be a positive integer or Infinity/,
    );
  });

  it('refuses the waiter beyond maxQueue at once, with reason queue-full and its turn as retryAfterMs', async () => {
    const { clock, limiter } = emptied();
    const first = track(limiter.wait('k'));
    const second = track(limiter.wait('k', { maxWaitMs: 1_000 }));
    const third = await limiter.wait('k', { maxWaitMs: 60_000 }).catch((e: unknown) => e);
    expect(third).toBeInstanceOf(RateLimitedError);
    expect(third).toMatchObject({
      reason: 'queue-full',
      code: 'ERR_RATE_LIMITED',
      key: 'k',
      limit: 1,
      remaining: 0,
      retryAfterMs: 300, // two ahead at 100 ms each, after the head's 100 ms
    });
    expect((third as Error).message).toBe(
      "rate limit exceeded: the wait queue of this key is full (maxQueue); this waiter's turn would come in 300 ms",
    );
    await clock.advance(200);
    expect(first.value).toMatchObject({ allowed: true });
    expect(second.value).toMatchObject({ allowed: true });
    // Drained: the queue takes waiters again.
    const again = limiter.wait('k');
    await clock.advance(100);
    expect(await again).toMatchObject({ allowed: true });
  });

  it('a refusal on quota keeps reason rate-limited', async () => {
    const { limiter } = emptied();
    const error = await limiter.wait('k', { maxWaitMs: 10 }).catch((e: unknown) => e);
    expect(isRateLimitedError(error) && error.reason).toBe('rate-limited');
  });

  it('bounds each key apart, and a waiter that leaves frees its place', async () => {
    const { clock, limiter } = emptied(1);
    limiter.takeSync('other');
    const controller = new AbortController();
    const leaving = limiter.wait('k', { signal: controller.signal }).catch((e: unknown) => e);
    const other = track(limiter.wait('other'));
    await expect(limiter.wait('k')).rejects.toMatchObject({ reason: 'queue-full' });
    controller.abort(new Error('gone'));
    expect(await leaving).toEqual(new Error('gone'));
    const next = track(limiter.wait('k'));
    await clock.advance(100);
    expect(next.value).toMatchObject({ allowed: true });
    expect(other.value).toMatchObject({ allowed: true });
  });

  it('Infinity (the default) queues as many as their deadlines allow', async () => {
    const clock = new FakeClock();
    const limiter = rateLimiter({ limit: 10, periodMs: 1_000, burst: 1, clock });
    limiter.takeSync('k');
    const waits = Array.from({ length: 50 }, () => limiter.wait('k', { maxWaitMs: 10_000 }));
    await clock.advance(5_000);
    expect((await Promise.all(waits)).every((r) => r.allowed)).toBe(true);
  });

  it('counts the head while its take is with a remote store', async () => {
    const clock = new FakeClock();
    const store = new SwitchableStore(clock);
    const limiter = rateLimiter({ limit: 10, periodMs: 1_000, burst: 1, maxQueue: 1, store, clock });
    const head = limiter.wait('k');
    await expect(limiter.wait('k')).rejects.toMatchObject({ reason: 'queue-full' });
    expect(await head).toMatchObject({ allowed: true });
  });

  it('policy({ wait: true }) refuses with onRejected reason queue-full, the call not run', async () => {
    const { clock, limiter } = emptied(1);
    const policy = limiter.policy('k', { wait: true });
    const reasons: string[] = [];
    policy.onRejected((e) => reasons.push(e.reason));
    const first = policy.execute(() => 'first');
    let ran = false;
    await expect(
      policy.execute(() => {
        ran = true;
      }),
    ).rejects.toMatchObject({ reason: 'queue-full' });
    expect(ran).toBe(false);
    expect(reasons).toEqual(['queue-full']);
    await clock.advance(100);
    expect(await first).toBe('first');
  });
});
