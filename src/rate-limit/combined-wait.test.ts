/**
 * `rateLimiter.all()` beyond `take`: `takeSync` on the in-memory store, `wait` (its turn estimated
 * under every limit, FIFO, `maxQueue`, abort) and `policy` (refused, or waiting). FakeClock.
 */
import { describe, expect, it } from 'vitest';
import { SwitchableStore } from '../../test/rate-limit/support/switchable-store.js';
import { FakeClock } from '../testing/fake-clock.js';
import { isRateLimitedError } from './errors.js';
import { memoryRateLimitStore } from './memory-store.js';
import { rateLimiter } from './rate-limiter.js';
import type { RateLimitStore } from './store.js';

/** 2 per second (burst 2) and 4 per minute on one store; `maxQueue` of the minute limiter. */
function pair(store: RateLimitStore, clock: FakeClock, maxQueue?: number) {
  const second = rateLimiter({ name: 's', limit: 2, periodMs: 1_000, store, clock });
  const minute = rateLimiter({
    name: 'm',
    limit: 4,
    periodMs: 60_000,
    store,
    clock,
    ...(maxQueue === undefined ? {} : { maxQueue }),
  });
  return { second, minute, both: rateLimiter.all([second, minute]) };
}

describe('rateLimiter.all: takeSync', () => {
  it('decides as take does, without a promise, on the in-memory store', () => {
    const clock = new FakeClock();
    const { second, minute, both } = pair(memoryRateLimitStore({ clock }), clock);
    expect(both.takeSync('k', 2)).toMatchObject({ allowed: true, remaining: 0, limit: 2 });
    const refused = both.takeSync('k');
    expect(refused).toMatchObject({ allowed: false, retryAfterMs: 500 });
    expect(refused.binding.rule).toBe(second.rule);
    expect(refused.binding.result).toMatchObject({ allowed: false, retryAfterMs: 500 });
    expect(minute.takeSync('k')).toMatchObject({ allowed: true, remaining: 1 }); // the refusal took nothing
  });

  it('throws a TypeError for a bad key or cost, and on a store that cannot answer synchronously', () => {
    const clock = new FakeClock();
    const { both } = pair(memoryRateLimitStore({ clock }), clock);
    expect(() => both.takeSync('')).toThrow(/"key"/);
    expect(() => both.takeSync('k', 3)).toThrow(/"cost" to be at most "burst" \(2\)/);
    const remote = pair(new SwitchableStore(clock), clock).both;
    expect(() => remote.takeSync('k')).toThrow(
      /^takeSync needs the in-memory store: .* cannot answer synchronously; use await combined\.take\(key, cost\)$/,
    );
  });
});

describe('rateLimiter.all: wait', () => {
  it('waits for the limit that binds, then takes from every limit', async () => {
    const clock = new FakeClock();
    const { minute, both } = pair(memoryRateLimitStore({ clock }), clock);
    await both.take('k', 2);
    let served: number | undefined;
    const waiting = both.wait('k').then((result) => {
      served = clock.now();
      return result;
    });
    await clock.advance(499);
    expect(served).toBeUndefined();
    await clock.advance(1);
    expect(await waiting).toMatchObject({ allowed: true });
    expect(served).toBe(500);
    expect((await minute.peek('k')).remaining).toBe(1); // 3 of the minute's 4 taken
  });

  it('refuses at once a waiter whose turn under the slower limit is after maxWaitMs', async () => {
    const clock = new FakeClock();
    const { both } = pair(memoryRateLimitStore({ clock }), clock);
    await both.take('k', 2);
    await clock.advance(1_000);
    await both.take('k', 2); // the minute is spent: its next unit is 15 s away
    const error = await both.wait('k', { maxWaitMs: 5_000 }).catch((e: unknown) => e);
    expect(isRateLimitedError(error)).toBe(true);
    expect(error).toMatchObject({ retryAfterMs: 14_000, reason: 'rate-limited' });
    expect(clock.now()).toBe(1_000); // refused at once, not after sleeping
  });

  it('serves waiters in arrival order; one whose turn is known to come too late is refused at once', async () => {
    const clock = new FakeClock();
    const { both } = pair(memoryRateLimitStore({ clock }), clock);
    await both.take('k', 2);
    const order: string[] = [];
    const first = both.wait('k', { cost: 2 }).then(() => order.push('first'));
    const second = both.wait('k').then(() => order.push('second'));
    await clock.advance(0);
    // Behind 2 + 1 queued units the minute (4 per minute, 2 left) needs 15 s more.
    const third = await both.wait('k', { maxWaitMs: 5_000 }).catch((e: unknown) => e);
    expect(third).toMatchObject({ reason: 'rate-limited' });
    expect(clock.now()).toBe(0); // at once: judged from the estimate under both limits
    await clock.advance(60_000);
    await Promise.all([first, second]);
    expect(order).toEqual(['first', 'second']);
  });

  it('queues at most the smallest maxQueue of its limiters on one key', async () => {
    const clock = new FakeClock();
    const { both } = pair(memoryRateLimitStore({ clock }), clock, 1);
    await both.take('k', 2);
    const queued = both.wait('k');
    const full = await both.wait('k').catch((e: unknown) => e);
    expect(full).toMatchObject({ reason: 'queue-full' });
    await clock.advance(500);
    expect((await queued).allowed).toBe(true);
  });

  it('rejects with the signal reason on abort, at once, and checks its options', async () => {
    const clock = new FakeClock();
    const { both } = pair(memoryRateLimitStore({ clock }), clock);
    await both.take('k', 2);
    const controller = new AbortController();
    const waiting = both.wait('k', { signal: controller.signal }).catch((e: unknown) => e);
    controller.abort(new Error('gone'));
    expect(await waiting).toMatchObject({ message: 'gone' });
    await expect(both.wait('k', { cost: 3 })).rejects.toThrow(/"cost" to be at most "burst" \(2\)/);
    await expect(both.wait('k', { maxWaitMs: -1 })).rejects.toThrow(TypeError);
    await expect(both.wait('')).rejects.toThrow(/"key"/);
  });

  it('waits on a remote store through its takeAll', async () => {
    const clock = new FakeClock();
    const store = new SwitchableStore(clock);
    const { both } = pair(store, clock);
    await both.take('k', 2);
    const waiting = both.wait('k');
    await clock.advance(500);
    expect((await waiting).allowed).toBe(true);
    expect(store.calls.every((call) => call === 'takeAll')).toBe(true);
  });
});

describe('rateLimiter.all: policy', () => {
  it('runs the call when every limit allows, and refuses with a RateLimitedError without running it', async () => {
    const clock = new FakeClock();
    const { both } = pair(memoryRateLimitStore({ clock }), clock);
    const policy = both.policy('k', { cost: 2 });
    let runs = 0;
    await expect(policy.execute(() => ++runs)).resolves.toBe(1);
    const error = await policy.execute(() => ++runs).catch((e: unknown) => e);
    expect(isRateLimitedError(error)).toBe(true);
    expect(error).toMatchObject({ retryAfterMs: 1_000, limit: 2 });
    expect(runs).toBe(1);
  });

  it('with wait: true, waits within maxWaitMs and the deadline, then runs', async () => {
    const clock = new FakeClock();
    const { both } = pair(memoryRateLimitStore({ clock }), clock);
    await both.take('k', 2);
    const policy = both.policy('k', { wait: true, maxWaitMs: 1_000 });
    const call = policy.execute(() => clock.now());
    await clock.advance(500);
    await expect(call).resolves.toBe(500);
    expect(() => both.policy('k', { cost: 3 })).toThrow(/"cost" to be at most "burst" \(2\)/);
    expect(() => both.policy('')).toThrow(/"key"/);
  });
});
