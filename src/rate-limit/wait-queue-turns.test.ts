/**
 * `limiter.wait` as waiters come and go: who asks the store and when, and how each waiter's turn is
 * estimated as the queue changes (waiters leaving, a head whose first answer is still on its way
 * from a remote store, the head's answers moving its readiness).
 */
import { describe, expect, it } from 'vitest';
import { track } from '../../test/support/track.js';
import { FakeClock } from '../testing/fake-clock.js';
import { decision } from './algorithm.js';
import type { RateLimitedError } from './errors.js';
import { memoryRateLimitStore } from './memory-store.js';
import { rateLimiter } from './rate-limiter.js';
import type { RateLimitResult, RateLimitRule, RateLimitStore } from './store.js';

/**
 * A remote store on the FakeClock: a take travels 1 ms, is decided by the memory store, and its
 * answer travels 1 ms back. Counts the takes that reach it.
 */
function remoteStore(clock: FakeClock) {
  const inner = memoryRateLimitStore({ clock });
  const store = {
    takes: 0,
    async take(key: string, cost: number, rule: RateLimitRule): Promise<RateLimitResult> {
      store.takes++;
      await clock.sleep(1);
      const result = inner.takeSync(key, cost, rule);
      await clock.sleep(1);
      return result;
    },
    peek: (key: string, rule: RateLimitRule) => inner.peek(key, rule),
    reset: (key: string, rule: RateLimitRule) => inner.reset(key, rule),
  };
  return store satisfies RateLimitStore;
}

/** A limiter of 1 unit per second on a remote store, its unit taken at 1 (back at 1 001), at time 2. */
async function emptiedRemote() {
  const clock = new FakeClock();
  const store = remoteStore(clock);
  const limiter = rateLimiter({ limit: 1, periodMs: 1_000, clock, store });
  const first = track(limiter.take('k'));
  await clock.advance(2);
  expect(first.value).toMatchObject({ allowed: true });
  return { clock, store, limiter };
}

describe('limiter.wait: who asks the store', () => {
  it('a waiter behind the head that leaves wakes nobody: the head asks once per refill', async () => {
    const clock = new FakeClock();
    const limiter = rateLimiter({ limit: 1, periodMs: 1_000, clock });
    const refusals: number[] = [];
    limiter.onRejected(() => refusals.push(clock.now()));
    limiter.takeSync('k');
    const head = track(limiter.wait('k', { maxWaitMs: 5_000 })); // asks at 0, refused: sleeps till 1 000
    const controller = new AbortController();
    const behind = track(limiter.wait('k', { maxWaitMs: 5_000, signal: controller.signal }));
    await clock.advance(10);
    controller.abort(new Error('gone'));
    await clock.advance(100);
    expect((behind.error as Error).message).toBe('gone');
    await clock.advance(890);
    expect(head.value).toMatchObject({ allowed: true });
    expect(refusals).toEqual([0]); // the head asked at 0 and at 1 000 only
  });

  it('a head that leaves while its take is on its way hands the turn to the next waiter, which asks at once', async () => {
    const clock = new FakeClock();
    const store = remoteStore(clock);
    const limiter = rateLimiter({ limit: 1, periodMs: 1_000, burst: 2, clock, store });
    const first = track(limiter.take('k', 2));
    await clock.advance(2);
    expect(first.value).toMatchObject({ allowed: true });
    const controller = new AbortController();
    const head = track(limiter.wait('k', { maxWaitMs: 5_000, signal: controller.signal }));
    const next = track(limiter.wait('k', { cost: 2, maxWaitMs: 5_000 }));
    await clock.advance(1); // the head's take is decided (refused) and its answer is on its way
    controller.abort(new Error('gone'));
    expect((await Promise.resolve().then(() => head.error)) as Error).toMatchObject({ message: 'gone' });
    expect(store.takes).toBe(2);
    await clock.advance(1); // the answer arrives for nobody: the next waiter asks now
    expect(store.takes).toBe(3);
    await clock.advance(2_000);
    expect(next.value).toMatchObject({ allowed: true });
  });
});

describe('limiter.wait: turns as the queue changes', () => {
  it('a waiter that leaves frees its place: a newcomer is estimated without it', async () => {
    const clock = new FakeClock();
    const limiter = rateLimiter({ limit: 1, periodMs: 1_000, clock });
    limiter.takeSync('k');
    const head = track(limiter.wait('k', { maxWaitMs: 10_000 })); // at 1 000
    const controller = new AbortController();
    const leaving = track(limiter.wait('k', { maxWaitMs: 10_000, signal: controller.signal })); // at 2 000
    controller.abort(new Error('gone'));
    await clock.advance(0);
    expect((leaving.error as Error).message).toBe('gone');
    // Its place is free: the newcomer comes right after the head, at 2 000 (not 3 000).
    const tooEager = track(limiter.wait('k', { maxWaitMs: 1_500 }));
    await clock.advance(0);
    expect((tooEager.error as RateLimitedError).retryAfterMs).toBe(2_000);
    const fits = track(limiter.wait('k', { maxWaitMs: 2_000 }));
    await clock.advance(1_000);
    expect(head.value).toMatchObject({ allowed: true });
    await clock.advance(1_000);
    expect(fits.value).toMatchObject({ allowed: true });
  });

  it('a waiter leaving at its deadline counts the units ahead of it and its own, not those behind it', async () => {
    const clock = new FakeClock();
    // A store that refuses every take for 1 000 ms: every waiter leaves at its own deadline.
    const refusing: RateLimitStore = {
      take: (_key, _cost, rule) => Promise.resolve(decision(false, 0, 1_000, 1_000, rule.burst)),
      peek: (_key, rule) => Promise.resolve(decision(true, 0, 0, 1_000, rule.burst)),
      reset: () => Promise.resolve(),
    };
    const limiter = rateLimiter({ limit: 1, periodMs: 1_000, clock, store: refusing });
    const head = track(limiter.wait('k', { maxWaitMs: 10_000 }));
    await clock.advance(0); // the head is refused: ready at 1 000
    const ahead = track(limiter.wait('k', { maxWaitMs: 10_000 })); // turn at 2 000
    const leaving = track(limiter.wait('k', { maxWaitMs: 2_999 })); // turn at 3 000
    const behind = track(limiter.wait('k', { maxWaitMs: 10_000 })); // turn at 4 000
    await clock.advance(2_999);
    // The head is now ready at 3 000; one unit ahead and its own after that: 5 000, 2 001 ms away.
    expect((leaving.error as RateLimitedError).retryAfterMs).toBe(2_001);
    expect([head, ahead, behind].map((w) => w.settled)).toEqual([false, false, false]);
    await clock.advance(10_000);
  });

  it('a waiter with no deadline starts no deadline timer', async () => {
    const clock = new FakeClock();
    const limiter = rateLimiter({ limit: 1, periodMs: 1_000, clock });
    limiter.takeSync('k');
    const head = track(limiter.wait('k', { maxWaitMs: Infinity }));
    const behind = track(limiter.wait('k', { maxWaitMs: Infinity }));
    expect(clock.pendingTimers).toBe(1); // the head's sleep until its refill
    await clock.advance(2_000);
    expect(head.value).toMatchObject({ allowed: true });
    expect(behind.value).toMatchObject({ allowed: true });
  });
});

describe("limiter.wait: turns while the head's first answer is on its way", () => {
  it('a waiter whose turn turns out 1 ms after its deadline is kept (the head is known to whole ms)', async () => {
    const { clock, limiter } = await emptiedRemote();
    const head = track(limiter.wait('k', { maxWaitMs: 5_000 }));
    // Queued at 2 on the rate alone; once the head is known to be ready at 1 000, its turn is 2 000.
    const waiter = track(limiter.wait('k', { maxWaitMs: 1_997 })); // deadline 1 999
    await clock.advance(2); // the head's refusal arrives
    expect(waiter.settled).toBe(false);
    await clock.advance(1_000);
    expect(head.value).toMatchObject({ allowed: true });
  });

  it('refuses, once the head is known to wait, each waiter whose turn is after its deadline, with that turn', async () => {
    const { clock, limiter } = await emptiedRemote();
    const head = track(limiter.wait('k', { maxWaitMs: 5_000 }));
    const early = track(limiter.wait('k', { maxWaitMs: 1_996 })); // deadline 1 998, turn 2 000
    const later = track(limiter.wait('k', { maxWaitMs: 1_999 })); // deadline 2 001
    await clock.advance(2); // the head's refusal arrives at 4: it is ready at 1 000
    const error = early.error as RateLimitedError;
    expect(error.message).toBe(
      "rate limit exceeded: this waiter's turn comes in 1996 ms, after the wait limit",
    );
    expect(error).toMatchObject({ retryAfterMs: 1_996, remaining: 0, limit: 1 });
    // The refused waiter no longer counts: the later one comes right after the head, at 2 000.
    expect(later.settled).toBe(false);
    await clock.advance(1_000);
    expect(head.value).toMatchObject({ allowed: true });
  });

  it('the turns are checked once per head: its later answers leave each waiter to its own deadline', async () => {
    const { clock, store, limiter } = await emptiedRemote();
    const head = track(limiter.wait('k', { maxWaitMs: 5_000 }));
    const waiter = track(limiter.wait('k', { maxWaitMs: 1_997 })); // deadline 1 999, turn 2 000: kept
    // Another process takes the unit that comes back at 1 001 before the head asks for it at 1 002.
    clock.setTimer(() => void store.take('k', 1, limiter.rule), 998); // asks at 1 000
    await clock.advance(1_002);
    expect(waiter.settled).toBe(false);
    await clock.advance(2); // the head is refused again, ready at 2 000: the waiter's turn moves to 3 000
    expect(waiter.settled).toBe(false);
    await clock.advance(993);
    const error = waiter.error as RateLimitedError; // it left at its own deadline, 1 999
    expect(error.message).toBe(
      "rate limit exceeded: no quota came back within the wait limit; this waiter's turn comes in 1001 ms",
    );
    await clock.advance(1_000);
    expect(head.value).toMatchObject({ allowed: true });
  });

  it('after the head is served, a newcomer arriving while the next head is asked is checked once it answers', async () => {
    const { clock, limiter } = await emptiedRemote();
    const head = track(limiter.wait('k', { maxWaitMs: 5_000 })); // ready at 1 000
    const second = track(limiter.wait('k', { maxWaitMs: 5_000 }));
    await clock.advance(1_002); // the head is served at 1 004, and the second asks the store
    expect(head.value).toMatchObject({ allowed: true });
    // While its answer is on its way, a newcomer is estimated on the rate alone, and queued.
    const newcomer = track(limiter.wait('k', { maxWaitMs: 1_500 }));
    await clock.advance(0);
    expect(newcomer.settled).toBe(false);
    await clock.advance(2); // the second is known to be ready at 2 002: the newcomer's turn is 3 002
    expect((newcomer.error as RateLimitedError).message).toBe(
      "rate limit exceeded: this waiter's turn comes in 1996 ms, after the wait limit",
    );
    await clock.advance(1_000);
    expect(second.value).toMatchObject({ allowed: true });
  });
});
