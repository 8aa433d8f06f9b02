/**
 * `limiter.wait` behind other waiters: every waiter's chance is estimated from its queue position
 * (the units queued ahead plus its own cost, at the rule's rate), so it is refused at once when its
 * turn comes after its `maxWaitMs`, and a waiter that leaves at its deadline says how long it would
 * still have needed (never `retryAfterMs: 0`). Also: the deadline is judged from when the store was
 * asked, so a round trip never refuses a waiter that needs exactly its `maxWaitMs`; and waiters
 * share one abort listener per signal.
 */
import { getEventListeners } from 'node:events';
import { describe, expect, it } from 'vitest';
import { track } from '../../test/support/track.js';
import { FakeClock } from '../testing/fake-clock.js';
import { isRateLimitedError, type RateLimitedError } from './errors.js';
import { memoryRateLimitStore } from './memory-store.js';
import { rateLimiter } from './rate-limiter.js';
import type { RateLimitResult, RateLimitRule, RateLimitStore } from './store.js';

/**
 * A remote store on the FakeClock: the request travels `legMs`, the memory store decides at that
 * (fractional) moment, and the reply travels `legMs` back, as Redis decides on its own clock
 * between the client's send and its receipt.
 */
function remoteStore(clock: FakeClock, legMs: number): RateLimitStore {
  const inner = memoryRateLimitStore({ clock });
  const trip = async <T>(decide: () => T): Promise<T> => {
    await clock.sleep(legMs);
    const result = decide();
    await clock.sleep(legMs);
    return result;
  };
  return {
    take: (key: string, cost: number, rule: RateLimitRule): Promise<RateLimitResult> =>
      trip(() => inner.takeSync(key, cost, rule)),
    peek: (key: string, rule: RateLimitRule) => trip(() => inner.takeSync(key, 0, rule)),
    reset: (key: string, rule: RateLimitRule) => trip(() => inner.reset(key, rule)).then(() => undefined),
  };
}

describe('limiter.wait: estimates from the queue position', () => {
  it('maxWaitMs 0 behind a waiting head refuses at once, with the estimate of its turn', async () => {
    const clock = new FakeClock();
    const limiter = rateLimiter({ limit: 1, periodMs: 1_000, clock });
    limiter.takeSync('k');
    const head = track(limiter.wait('k'));
    const error = (await limiter.wait('k', { maxWaitMs: 0 }).catch((e: unknown) => e)) as RateLimitedError;
    expect(isRateLimitedError(error)).toBe(true);
    // The head gets the unit back at 1 000 ms, this waiter the next one at 2 000 ms.
    expect(error.retryAfterMs).toBe(2_000);
    expect(clock.now()).toBe(0);
    await clock.advance(1_000);
    expect(head.value).toMatchObject({ allowed: true });
    expect(clock.pendingTimers).toBe(0);
  });

  it('a policy with wait: true past its deadline refuses at once behind a waiting head', async () => {
    const clock = new FakeClock();
    const limiter = rateLimiter({ limit: 1, periodMs: 1_000, clock });
    limiter.takeSync('api');
    const head = track(limiter.wait('api'));
    const policy = limiter.policy('api', { wait: true });
    let runs = 0;
    const late = track(policy.execute(() => ++runs, { deadline: clock.now() - 1 }));
    await clock.advance(0);
    expect(isRateLimitedError(late.error)).toBe(true);
    expect((late.error as RateLimitedError).retryAfterMs).toBe(2_000);
    expect(runs).toBe(0);
    await clock.advance(1_000);
    expect(head.value).toMatchObject({ allowed: true });
  });

  it('refuses at once a waiter whose turn comes after its maxWaitMs, counting the units queued ahead', async () => {
    const clock = new FakeClock();
    const limiter = rateLimiter({ limit: 10, periodMs: 1_000, burst: 5, clock });
    limiter.takeSync('k', 5); // empty; one unit per 100 ms
    const head = track(limiter.wait('k', { cost: 3, maxWaitMs: 10_000 })); // at 300 ms
    const second = track(limiter.wait('k', { cost: 2, maxWaitMs: 10_000 })); // at 500 ms
    // Needs 4 more units after those: 900 ms. With 850 ms it is refused now, not at 850 ms.
    const tooLate = (await limiter
      .wait('k', { cost: 4, maxWaitMs: 850 })
      .catch((e: unknown) => e)) as RateLimitedError;
    expect(isRateLimitedError(tooLate)).toBe(true);
    expect(tooLate.retryAfterMs).toBe(900);
    expect(clock.now()).toBe(0);
    // With 900 ms it fits, and is served at 900 ms, after the two ahead of it.
    const fits = track(limiter.wait('k', { cost: 4, maxWaitMs: 900 }));
    await clock.advance(300);
    expect(head.value).toMatchObject({ allowed: true });
    await clock.advance(200);
    expect(second.value).toMatchObject({ allowed: true });
    await clock.advance(399);
    expect(fits.settled).toBe(false);
    await clock.advance(1);
    expect(fits.value).toMatchObject({ allowed: true });
    expect(clock.pendingTimers).toBe(0);
  });

  it('the sliding window estimates whole windows: limit units per periodMs', async () => {
    const clock = new FakeClock();
    const limiter = rateLimiter({ algorithm: 'sliding-window', limit: 2, periodMs: 1_000, clock });
    limiter.takeSync('k', 2); // both units come back when their sub-window slides out, at 1 100 ms
    const head = track(limiter.wait('k', { maxWaitMs: 10_000 }));
    const second = track(limiter.wait('k', { maxWaitMs: 10_000 })); // the same window: 1 100 ms
    // A third unit after those two cannot come before the next window, at 2 100 ms.
    const third = (await limiter
      .wait('k', { maxWaitMs: 1_500 })
      .catch((e: unknown) => e)) as RateLimitedError;
    expect(isRateLimitedError(third)).toBe(true);
    expect(third.retryAfterMs).toBe(2_100);
    await clock.advance(1_100);
    expect(head.value).toMatchObject({ allowed: true });
    expect(second.value).toMatchObject({ allowed: true });
  });

  it("the sliding window serves up to limit units in one window: waiters within them share the head's turn", async () => {
    const clock = new FakeClock();
    const limiter = rateLimiter({ algorithm: 'sliding-window', limit: 3, periodMs: 1_000, clock });
    limiter.takeSync('k', 3); // the three units come back together, at 1 100 ms
    const head = track(limiter.wait('k', { maxWaitMs: 10_000 }));
    // Two more units fit the same window as the head's: their turn is 1 100 ms too, not later.
    const second = track(limiter.wait('k', { cost: 2, maxWaitMs: 1_100 }));
    await clock.advance(0);
    expect(second.settled).toBe(false);
    await clock.advance(1_100);
    expect(head.value).toMatchObject({ allowed: true });
    expect(second.value).toMatchObject({ allowed: true, remaining: 0 });
  });

  it('a waiter that leaves at its deadline carries a real estimate, never retryAfterMs 0', async () => {
    const clock = new FakeClock();
    const limiter = rateLimiter({ limit: 1, periodMs: 1_000, clock });
    limiter.takeSync('k');
    // Another caller takes the unit that comes back at 1 000 ms just before the head can.
    clock.setTimer(() => limiter.takeSync('k'), 1_000);
    const head = track(limiter.wait('k', { maxWaitMs: 5_000 }));
    // Estimated at 2 000 ms, 1 ms after its deadline (within the store's rounding): it queues.
    const impatient = track(limiter.wait('k', { maxWaitMs: 1_999 }));
    await clock.advance(1_999);
    expect(head.settled).toBe(false); // delayed to 2 000 ms by the other taker
    const error = impatient.error as RateLimitedError;
    expect(isRateLimitedError(error)).toBe(true);
    // Its turn is now after the head's, at 3 000 ms.
    expect(error.retryAfterMs).toBe(1_001);
    expect(error.remaining).toBe(0);
    expect(error.message).toBe(
      "rate limit exceeded: no quota came back within the wait limit; this waiter's turn comes in 1001 ms",
    );
    expect(error.limit).toBe(1);
    await clock.advance(1);
    expect(head.value).toMatchObject({ allowed: true });
    expect(clock.pendingTimers).toBe(0);
  });

  it('on a remote store, a waiter that needs exactly maxWaitMs is served despite the round trip', async () => {
    const clock = new FakeClock();
    const limiter = rateLimiter({ limit: 1, periodMs: 2_500, clock, store: remoteStore(clock, 0.4) });
    const first = track(limiter.take('k'));
    await clock.advance(0.8);
    expect(first.value).toMatchObject({ allowed: true });
    // The default maxWaitMs is one refill: 2 500 ms, exactly what this waiter needs.
    const waiting = track(limiter.wait('k'));
    await clock.advance(2_600);
    expect(waiting.error).toBeUndefined();
    expect(waiting.value).toMatchObject({ allowed: true });
    expect(clock.pendingTimers).toBe(0);
  });

  it('on a remote store, a waiter queued while the head is being asked is refused once the head is known to wait', async () => {
    const clock = new FakeClock();
    const store = remoteStore(clock, 1);
    const limiter = rateLimiter({ limit: 2, periodMs: 2_000, clock, store });
    await Promise.all([limiter.take('k', 2), clock.advance(2)]);
    const head = track(limiter.wait('k'));
    // Both could fit a full bucket, so while the head's answer is out this one queues.
    const quick = track(limiter.wait('k', { maxWaitMs: 0 }));
    await clock.advance(0);
    expect(quick.settled).toBe(false);
    await clock.advance(2); // the head's refusal arrives: it waits till ~1 000 ms, this one ~2 000
    expect(isRateLimitedError(quick.error)).toBe(true);
    expect((quick.error as RateLimitedError).retryAfterMs).toBeGreaterThan(1_900);
    expect(head.settled).toBe(false);
    await clock.advance(1_100);
    expect(head.value).toMatchObject({ allowed: true });
  });

  it('on a remote store, a waiter arriving while the head is being asked is refused at once when the rate alone rules it out', async () => {
    const clock = new FakeClock();
    const limiter = rateLimiter({ limit: 1, periodMs: 1_000, clock, store: remoteStore(clock, 1) });
    await Promise.all([limiter.take('k'), clock.advance(2)]);
    const head = track(limiter.wait('k'));
    // Two units on a burst of 1: the second cannot come before 1 000 ms from now.
    const error = (await limiter.wait('k', { maxWaitMs: 500 }).catch((e: unknown) => e)) as RateLimitedError;
    expect(isRateLimitedError(error)).toBe(true);
    expect(error.retryAfterMs).toBe(1_000);
    await clock.advance(1_100);
    expect(head.value).toMatchObject({ allowed: true });
  });
});

describe('limiter.wait: the error of a waiter that gives up', () => {
  it('refused by the store past its limit: says when quota for its cost comes back, with the store numbers', async () => {
    const clock = new FakeClock();
    const limiter = rateLimiter({ limit: 2, periodMs: 1_000, burst: 3, clock });
    limiter.takeSync('k', 2); // one unit left; two more need one unit back, 500 ms away
    const error = (await limiter
      .wait('k', { cost: 2, maxWaitMs: 100 })
      .catch((e: unknown) => e)) as RateLimitedError;
    expect(error.message).toBe(
      'rate limit exceeded: quota for this cost comes back in 500 ms, after the wait limit',
    );
    expect(error).toMatchObject({ key: 'k', retryAfterMs: 500, limit: 3, remaining: 1 });
  });

  it('refused for its place in the queue: says when its turn comes', async () => {
    const clock = new FakeClock();
    const limiter = rateLimiter({ limit: 1, periodMs: 1_000, burst: 2, clock });
    limiter.takeSync('k', 2);
    const head = track(limiter.wait('k'));
    const error = (await limiter.wait('k', { maxWaitMs: 0 }).catch((e: unknown) => e)) as RateLimitedError;
    expect(error.message).toBe(
      "rate limit exceeded: this waiter's turn comes in 2000 ms, after the wait limit",
    );
    expect(error).toMatchObject({ key: 'k', retryAfterMs: 2_000, limit: 2, remaining: 0 });
    await clock.advance(1_000);
    expect(head.value).toMatchObject({ allowed: true });
  });
});

describe('limiter.wait: abort listeners', () => {
  it('20 concurrent waits sharing one signal add at most one abort listener, and none is left after', async () => {
    const clock = new FakeClock();
    const limiter = rateLimiter({ limit: 1, periodMs: 10, clock });
    const controller = new AbortController();
    const { signal } = controller;
    limiter.takeSync('k');
    const waits = Array.from({ length: 20 }, (_, i) =>
      limiter.wait(i % 2 === 0 ? 'k' : `other-${i % 4}`, { signal, maxWaitMs: 10_000 }),
    );
    await clock.advance(0);
    expect(getEventListeners(signal, 'abort').length).toBeLessThanOrEqual(1);
    await clock.advance(1_000);
    await Promise.all(waits);
    expect(getEventListeners(signal, 'abort')).toHaveLength(0);
    expect(clock.pendingTimers).toBe(0);
  });

  it('an abort shared by 20 waiters rejects them all with the reason and leaves no listener', async () => {
    const clock = new FakeClock();
    const limiter = rateLimiter({ limit: 1, periodMs: 1_000, clock });
    const controller = new AbortController();
    limiter.takeSync('k');
    const waits = Array.from({ length: 20 }, () =>
      limiter.wait('k', { signal: controller.signal, maxWaitMs: 60_000 }).catch((e: unknown) => e),
    );
    await clock.advance(10);
    expect(getEventListeners(controller.signal, 'abort').length).toBeLessThanOrEqual(1);
    const reason = new Error('client went away');
    controller.abort(reason);
    expect(await Promise.all(waits)).toEqual(Array.from({ length: 20 }, () => reason));
    expect(getEventListeners(controller.signal, 'abort')).toHaveLength(0);
    expect(clock.pendingTimers).toBe(0);
  });
});
