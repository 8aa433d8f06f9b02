import { describe, expect, it } from 'vitest';
import { track } from '../../test/support/track.js';
import { isStoreUnavailableError } from '../core/errors.js';
import { FakeClock } from '../testing/fake-clock.js';
import { isRateLimitedError, type RateLimitedError } from './errors.js';
import { memoryRateLimitStore } from './memory-store.js';
import { rateLimiter } from './rate-limiter.js';
import type { RateLimitResult, RateLimitRule, RateLimitStore } from './store.js';

/** Counts store calls (an in-process async store over the memory store). */
function countingStore(clock: FakeClock) {
  const inner = memoryRateLimitStore({ clock });
  const store = {
    calls: 0,
    failing: undefined as Error | undefined,
    take(key: string, cost: number, rule: RateLimitRule): Promise<RateLimitResult> {
      store.calls++;
      if (store.failing) return Promise.reject(store.failing);
      return inner.take(key, cost, rule);
    },
    peek: (key: string, rule: RateLimitRule) => inner.peek(key, rule),
    reset: (key: string, rule: RateLimitRule) => inner.reset(key, rule),
  };
  return store satisfies RateLimitStore;
}

describe('limiter.wait', () => {
  it('resolves at once when quota is there', async () => {
    const clock = new FakeClock();
    const limiter = rateLimiter({ limit: 2, periodMs: 1_000, clock });
    expect(await limiter.wait('k')).toMatchObject({ allowed: true, remaining: 1 });
    expect(clock.pendingTimers).toBe(0);
  });

  it('sleeps exactly until the quota comes back, then takes it', async () => {
    const clock = new FakeClock();
    const limiter = rateLimiter({ limit: 10, periodMs: 1_000, burst: 1, clock });
    limiter.takeSync('k');
    const waiting = track(limiter.wait('k'));
    await clock.advance(99);
    expect(waiting.settled).toBe(false);
    await clock.advance(1);
    expect(waiting.value).toMatchObject({ allowed: true, remaining: 0 });
    expect(clock.pendingTimers).toBe(0);
  });

  it('serves waiters of one key in arrival order with one store call per refill', async () => {
    const clock = new FakeClock();
    const store = countingStore(clock);
    const limiter = rateLimiter({ limit: 10, periodMs: 1_000, burst: 1, clock, store, maxKeys: 10 });
    await limiter.take('k');
    const order: number[] = [];
    const waits = Array.from({ length: 5 }, (_, i) =>
      limiter.wait('k', { maxWaitMs: 10_000 }).then(() => order.push(i)),
    );
    await clock.advance(0);
    const callsBefore = store.calls;
    await clock.advance(500);
    await Promise.all(waits);
    expect(order).toEqual([0, 1, 2, 3, 4]);
    // One call when each waiter reaches the head, plus one per refusal while it waits: never one
    // call per waiter per refill.
    expect(store.calls - callsBefore).toBeLessThanOrEqual(10);
    expect(clock.pendingTimers).toBe(0);
  });

  it('rejects at once with RateLimitedError when the next chance is after maxWaitMs', async () => {
    const clock = new FakeClock();
    const limiter = rateLimiter({ limit: 1, periodMs: 1_000, clock });
    limiter.takeSync('k');
    const error = (await limiter.wait('k', { maxWaitMs: 999 }).catch((e: unknown) => e)) as RateLimitedError;
    expect(isRateLimitedError(error)).toBe(true);
    expect(error.retryAfterMs).toBe(1_000);
    expect(error.kind).toBe('rate_limited');
    expect(clock.now()).toBe(0); // it did not sleep in vain
    expect(clock.pendingTimers).toBe(0);
  });

  it('a wait of exactly the time needed succeeds', async () => {
    const clock = new FakeClock();
    const limiter = rateLimiter({ limit: 1, periodMs: 1_000, clock });
    limiter.takeSync('k');
    const waiting = track(limiter.wait('k', { maxWaitMs: 1_000 }));
    await clock.advance(1_000);
    expect(waiting.value).toMatchObject({ allowed: true });
  });

  it('maxWaitMs 0 takes or refuses without sleeping', async () => {
    const limiter = rateLimiter({ limit: 1, periodMs: 1_000, clock: new FakeClock() });
    expect(await limiter.wait('k', { maxWaitMs: 0 })).toMatchObject({ allowed: true });
    await expect(limiter.wait('k', { maxWaitMs: 0 })).rejects.toSatisfy(isRateLimitedError);
  });

  it('the default maxWaitMs is the longest an uncontended key can need', async () => {
    const clock = new FakeClock();
    const limiter = rateLimiter({ limit: 2, periodMs: 1_000, burst: 4, clock });
    limiter.takeSync('k', 4);
    // 4 units need 2 000 ms: allowed by default. 5 would not fit the burst at all.
    const waiting = track(limiter.wait('k', { cost: 4 }));
    await clock.advance(2_000);
    expect(waiting.value).toMatchObject({ allowed: true });

    const window = rateLimiter({ algorithm: 'sliding-window', limit: 2, periodMs: 1_000, buckets: 4, clock });
    window.takeSync('k', 2);
    const windowWait = track(window.wait('k', { cost: 2 }));
    await clock.advance(1_250);
    expect(windowWait.value).toMatchObject({ allowed: true });
  });

  it('the default maxWaitMs is burst × periodMs / limit: a turn later than that is refused at once', async () => {
    const clock = new FakeClock();
    const limiter = rateLimiter({ limit: 2, periodMs: 1_000, burst: 4, clock });
    limiter.takeSync('k', 4);
    const head = track(limiter.wait('k', { cost: 4 })); // 2 000 ms: the default allows it
    // One more unit after those four: 2 500 ms, past the default of 2 000 ms.
    const error = (await limiter.wait('k').catch((e: unknown) => e)) as RateLimitedError;
    expect(isRateLimitedError(error)).toBe(true);
    expect(error.retryAfterMs).toBe(2_500);
    await clock.advance(2_000);
    expect(head.value).toMatchObject({ allowed: true });

    const single = rateLimiter({ name: 'single', limit: 1, periodMs: 1_000, clock });
    single.takeSync('k');
    const first = track(single.wait('k')); // one refill: 1 000 ms
    await expect(single.wait('k')).rejects.toMatchObject({ retryAfterMs: 2_000 }); // two refills
    await clock.advance(1_000);
    expect(first.value).toMatchObject({ allowed: true });

    // The sliding window's default is periodMs + one sub-window: 1 250 ms here.
    const window = rateLimiter({ algorithm: 'sliding-window', limit: 2, periodMs: 1_000, buckets: 4, clock });
    window.takeSync('k', 2);
    const windowHead = track(window.wait('k', { cost: 2 })); // 1 250 ms: the default allows it
    const late = (await window.wait('k').catch((e: unknown) => e)) as RateLimitedError;
    expect(isRateLimitedError(late)).toBe(true); // its turn is later than 1 250 ms: refused at once
    expect(late.retryAfterMs).toBeGreaterThan(1_250);
    await clock.advance(1_250);
    expect(windowHead.value).toMatchObject({ allowed: true });
  });

  it('an abort ends the wait at once with the reason, leaving no timer; later waiters move up', async () => {
    const clock = new FakeClock();
    const limiter = rateLimiter({ limit: 1, periodMs: 1_000, clock });
    limiter.takeSync('k');
    const controller = new AbortController();
    const first = track(limiter.wait('k', { signal: controller.signal }));
    // Its turn is estimated after the first's, at 2 000 ms: it needs a limit that allows that.
    const second = track(limiter.wait('k', { maxWaitMs: 2_000 }));
    await clock.advance(100);
    controller.abort(new Error('client went away'));
    await clock.advance(0);
    expect((first.error as Error).message).toBe('client went away');
    expect(second.settled).toBe(false);
    await clock.advance(900);
    expect(second.value).toMatchObject({ allowed: true });
    expect(clock.pendingTimers).toBe(0);
  });

  it('an already aborted signal rejects without taking anything', async () => {
    const limiter = rateLimiter({ limit: 1, periodMs: 1_000, clock: new FakeClock() });
    const reason = new Error('gone');
    await expect(limiter.wait('k', { signal: AbortSignal.abort(reason) })).rejects.toBe(reason);
    expect((await limiter.peek('k')).remaining).toBe(1);
  });

  it('a waiter behind the head leaves at its own deadline', async () => {
    const clock = new FakeClock();
    const limiter = rateLimiter({ limit: 1, periodMs: 1_000, clock });
    limiter.takeSync('k');
    const head = track(limiter.wait('k', { maxWaitMs: 5_000 }));
    const impatient = track(limiter.wait('k', { maxWaitMs: 300 }));
    await clock.advance(300);
    expect(isRateLimitedError(impatient.error)).toBe(true);
    expect(head.settled).toBe(false);
    await clock.advance(700);
    expect(head.value).toMatchObject({ allowed: true });
    expect(clock.pendingTimers).toBe(0);
  });

  it('a store failure under fail-closed rejects the waiter with StoreUnavailableError', async () => {
    const clock = new FakeClock();
    const store = countingStore(clock);
    const limiter = rateLimiter({ limit: 1, periodMs: 1_000, clock, store });
    store.failing = new Error('down');
    await expect(limiter.wait('k')).rejects.toSatisfy(isStoreUnavailableError);
  });

  it('maxWaitMs: Infinity waits as long as the quota takes, behind the head too', async () => {
    const clock = new FakeClock();
    const limiter = rateLimiter({ limit: 1, periodMs: 3_600_000, clock });
    limiter.takeSync('k');
    const head = track(limiter.wait('k', { maxWaitMs: Infinity }));
    const behind = track(limiter.wait('k', { maxWaitMs: Infinity }));
    await clock.advance(3_600_000);
    expect(head.value).toMatchObject({ allowed: true });
    expect(behind.settled).toBe(false);
    await clock.advance(3_600_000);
    expect(behind.value).toMatchObject({ allowed: true });
    expect(clock.pendingTimers).toBe(0);
  });

  it('a policy with wait: true and maxWaitMs: Infinity waits as long as the quota takes', async () => {
    const clock = new FakeClock();
    const limiter = rateLimiter({ limit: 1, periodMs: 3_600_000, clock });
    limiter.takeSync('k');
    const call = track(limiter.policy('k', { wait: true, maxWaitMs: Infinity }).execute(() => 'ran'));
    await clock.advance(3_599_999);
    expect(call.settled).toBe(false);
    await clock.advance(1);
    expect(call.value).toBe('ran');
  });

  it('rejects bad options with a TypeError', async () => {
    const limiter = rateLimiter({ limit: 1, periodMs: 1_000 });
    await expect(limiter.wait('k', { maxWaitMs: -1 })).rejects.toThrow(/"maxWaitMs".*-1/);
    await expect(limiter.wait('k', { maxWaitMs: Number.NaN })).rejects.toThrow(/"maxWaitMs".*NaN/);
    await expect(limiter.wait('k', { signal: {} as never })).rejects.toThrow(
      /^expected "signal" to be an AbortSignal, got /,
    );
    await expect(limiter.wait('', {})).rejects.toThrow(/"key"/);
    await expect(limiter.wait('k', 5 as never)).rejects.toThrow(/"wait options"/);
  });
});
