import { describe, expect, it } from 'vitest';
import { track } from '../../test/support/track.js';
import { FakeClock } from '../testing/fake-clock.js';
import { decision } from './algorithm.js';
import { isRateLimitedError } from './errors.js';
import { rateLimiter } from './rate-limiter.js';
import type { RateLimitStore } from './store.js';

/** Lets `ms` pass, then checks that every wait was served and no timer is left. */
async function expectAllServed(clock: FakeClock, waits: Promise<unknown>[], ms: number): Promise<void> {
  await clock.advance(ms);
  const results = await Promise.allSettled(waits);
  expect(results.every((r) => r.status === 'fulfilled')).toBe(true);
  expect(clock.pendingTimers).toBe(0);
}

describe('limiter.wait: one shared deadline timer (the waiting room)', () => {
  it('100 waiters of one key with deadlines in arrival order share one deadline timer', async () => {
    const clock = new FakeClock();
    const limiter = rateLimiter({ limit: 1, periodMs: 10, clock });
    await limiter.wait('k');
    const waits = Array.from({ length: 100 }, () => limiter.wait('k', { maxWaitMs: 10_000 }));
    // The head's sleep until its refill, and one timer for all 100 deadlines.
    expect(clock.pendingTimers).toBe(2);
    await expectAllServed(clock, waits, 1_000);
  });

  it('waiters of different keys share the same deadline timer', async () => {
    const clock = new FakeClock();
    const limiter = rateLimiter({ limit: 1, periodMs: 1_000, clock });
    const keys = Array.from({ length: 10 }, (_, i) => `k${i}`);
    for (const key of keys) await limiter.wait(key);
    const waits = keys.flatMap((key) => [
      limiter.wait(key, { maxWaitMs: 5_000 }),
      limiter.wait(key, { maxWaitMs: 5_000 }),
    ]);
    // One pump sleep per key, one deadline timer for all 20 waiters.
    expect(clock.pendingTimers).toBe(keys.length + 1);
    await expectAllServed(clock, waits, 2_000);
  });

  it('a deadline earlier than the last queued one still fires at its own time, and nothing is left after', async () => {
    const clock = new FakeClock();
    // A store that never admits: every waiter leaves at its own deadline.
    const refusing: RateLimitStore = {
      take: (_key, _cost, rule) => Promise.resolve(decision(false, 0, 1_000, 1_000, rule.burst)),
      peek: (_key, rule) => Promise.resolve(decision(true, 0, 0, 1_000, rule.burst)),
      reset: () => Promise.resolve(),
    };
    const limiter = rateLimiter({ limit: 1, periodMs: 1_000, clock, store: refusing });
    const head = track(limiter.wait('k', { maxWaitMs: 10_000 }));
    await clock.advance(0);
    const later = track(limiter.wait('k', { maxWaitMs: 5_000 }));
    const sooner = track(limiter.wait('k', { maxWaitMs: 3_000 })); // due before the one ahead of it
    await clock.advance(2_999);
    expect(sooner.settled).toBe(false);
    await clock.advance(1);
    expect(isRateLimitedError(sooner.error)).toBe(true);
    await clock.advance(1_999);
    expect(later.settled).toBe(false);
    await clock.advance(1);
    expect(isRateLimitedError(later.error)).toBe(true);
    await clock.advance(5_000);
    expect(isRateLimitedError(head.error)).toBe(true);
    expect(clock.pendingTimers).toBe(0);
  });

  it('an abort in the middle of 1 000 waiters leaves the order of the others intact', async () => {
    const clock = new FakeClock();
    const limiter = rateLimiter({ limit: 1, periodMs: 1, clock });
    await limiter.wait('k');
    const controllers = Array.from({ length: 1_000 }, () => new AbortController());
    const order: number[] = [];
    const waits = controllers.map((c, i) =>
      limiter.wait('k', { signal: c.signal, maxWaitMs: 100_000 }).then(
        () => order.push(i),
        () => {},
      ),
    );
    for (let i = 1; i < 1_000; i += 2) controllers[i]!.abort();
    await clock.advance(1_000);
    await Promise.all(waits);
    expect(order).toEqual(Array.from({ length: 500 }, (_, i) => 2 * i));
    expect(clock.pendingTimers).toBe(0);
  });
});
