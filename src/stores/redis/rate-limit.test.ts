/**
 * The Redis rate-limit store against a scripted client (no Redis): what it does with replies Redis
 * should never send, the calls it makes, and decisions whose deadline passes before they are sent.
 * The decisions themselves run on real Redis in test/rate-limit/.
 */
import { describe, expect, it } from 'vitest';
import { scriptedClient } from '../../../test/rate-limit/support/scripted-client.js';
import type { Clock, TimerHandle } from '../../core/clock.js';
import { isStoreUnavailableError } from '../../core/errors.js';
import { ruleOf } from '../../rate-limit/rule.js';
import { FakeClock } from '../../testing/fake-clock.js';
import { redisStores } from './index.js';
import { MAX_BATCH } from './rate-limit.js';

/** A clock whose timers fire synchronously when the test says so. */
class ManualClock implements Clock {
  private time = 0;
  private timers: { at: number; callback: () => void }[] = [];
  now(): number {
    return this.time;
  }
  sleep(): Promise<void> {
    return Promise.reject(new Error('not used'));
  }
  setTimer(callback: () => void, ms: number): TimerHandle {
    const timer = { at: this.time + ms, callback };
    this.timers.push(timer);
    return timer;
  }
  clearTimer(handle: TimerHandle): void {
    this.timers = this.timers.filter((t) => t !== handle);
  }
  /** Moves to `ms` and runs the timers due, synchronously. */
  fire(ms: number): void {
    this.time = ms;
    const due = this.timers.filter((t) => t.at <= ms);
    this.timers = this.timers.filter((t) => t.at > ms);
    for (const t of due) t.callback();
  }
}

const rule = ruleOf({ name: 'api', limit: 5, periodMs: 60_000 });

describe('Redis rate-limit store: replies', () => {
  it('turns the script reply {remaining, retryAfterMs, resetMs} into a decision with the rule burst as limit', async () => {
    const replies = [
      [4, 0, 12_000],
      [0, 9_000, 60_000],
    ];
    const { client } = scriptedClient(() => replies.shift());
    const store = redisStores(client, { clock: new FakeClock() }).rateLimit;
    const burst = ruleOf({ limit: 5, periodMs: 60_000, burst: 7 });
    expect(await store.take('k', 1, burst)).toEqual({
      allowed: true,
      remaining: 4,
      retryAfterMs: 0,
      resetMs: 12_000,
      limit: 7,
    });
    expect(await store.take('k', 1, burst)).toEqual({
      allowed: false,
      remaining: 0,
      retryAfterMs: 9_000,
      resetMs: 60_000,
      limit: 7,
    });
  });

  it.each([
    [null, 'null'],
    [[1, 0], '[1,0]'],
    [[1, 0, 0, 0], '[1,0,0,0]'],
    [['1', 0, 0], '["1",0,0]'],
    [[1, '0', 0], '[1,"0",0]'],
    [[1, 0, '0'], '[1,0,"0"]'],
    [{ remaining: 1 }, '{"remaining":1}'],
  ])('a reply of %j is a store failure, never a decision', async (reply, shown) => {
    const { client } = scriptedClient(() => reply);
    const store = redisStores(client, { clock: new FakeClock() }).rateLimit;
    const error = (await store.take('k', 1, rule).catch((e: unknown) => e)) as Error;
    expect(isStoreUnavailableError(error)).toBe(true);
    expect(error.message).toBe(`Redis failed: unexpected rate-limit script reply: ${shown}`);
  });

  it('a string reply is the Redis error of that decision', async () => {
    const { client } = scriptedClient(
      () => 'WRONGTYPE Operation against a key holding the wrong kind of value',
    );
    const store = redisStores(client, { clock: new FakeClock() }).rateLimit;
    await expect(store.take('k', 1, rule)).rejects.toThrow(
      'Redis failed: WRONGTYPE Operation against a key holding the wrong kind of value',
    );
  });

  it('a batch reply that is not one element per key fails every decision of the batch', async () => {
    for (const reply of [
      [[1, 0, 0]],
      'OK',
      [
        [1, 0, 0],
        [1, 0, 0],
        [1, 0, 0],
      ],
    ]) {
      const { client } = scriptedClient(() => reply);
      const store = redisStores(client, { clock: new FakeClock() }).rateLimit;
      const outcomes = await Promise.allSettled([store.take('a', 1, rule), store.take('b', 1, rule)]);
      for (const outcome of outcomes) {
        expect(outcome.status).toBe('rejected');
        const error = (outcome as PromiseRejectedResult).reason as Error;
        expect(isStoreUnavailableError(error)).toBe(true);
        expect(error.message).toBe(
          `Redis failed: unexpected rate-limit batch reply: ${JSON.stringify(reply)}`,
        );
      }
    }
  });

  it('a failed batch call fails every decision of the batch with its error', async () => {
    const { client } = scriptedClient(() => new Error('ECONNRESET'));
    const store = redisStores(client, { clock: new FakeClock() }).rateLimit;
    const outcomes = await Promise.allSettled([store.take('a', 1, rule), store.peek('b', rule)]);
    expect(outcomes.map((o) => (o as PromiseRejectedResult).reason.message)).toEqual([
      'Redis failed: ECONNRESET',
      'Redis failed: ECONNRESET',
    ]);
  });
});

describe('Redis rate-limit store: calls', () => {
  it('sends keys, then costs, then the rule (limit, periodMs, burst, buckets) as the script arguments', async () => {
    const { client, calls } = scriptedClient((call) =>
      call.numKeys === 1 ? [0, 0, 0] : Array.from({ length: call.numKeys }, () => [0, 0, 0]),
    );
    const store = redisStores(client, { prefix: 'p:', clock: new FakeClock() }).rateLimit;
    const window = ruleOf({ name: 'w', algorithm: 'sliding-window', limit: 4, periodMs: 1_500, buckets: 3 });
    await store.take('one', 2, window);
    await Promise.all([store.take('a', 1, window), store.peek('b', window), store.take('a', 3, window)]);
    expect(calls).toEqual([
      { method: 'eval', numKeys: 1, args: ['p:rl:w:{one}', 2, '4', '1500', '4', '3'] },
      {
        method: 'eval',
        numKeys: 3,
        args: ['p:rl:w:{a}', 'p:rl:w:{b}', 'p:rl:w:{a}', 1, 0, 3, '4', '1500', '4', '3'],
      },
    ]);
  });

  it('rules with different parameters never share a call, whatever their digits', async () => {
    const { client, calls } = scriptedClient(() => [0, 0, 0]);
    const store = redisStores(client, { clock: new FakeClock() }).rateLimit;
    // "1" "12" and "11" "2": the same digits in a row, not the same rule.
    const a = ruleOf({ name: 'a', limit: 1, periodMs: 12, burst: 1 });
    const b = ruleOf({ name: 'b', limit: 11, periodMs: 2, burst: 1 });
    await Promise.all([store.take('k', 1, a), store.take('k', 1, b)]);
    expect(calls.map((c) => c.args.slice(2))).toEqual([
      ['1', '12', '1', '1'],
      ['11', '2', '1', '1'],
    ]);
  });

  it(`sends exactly MAX_BATCH (${MAX_BATCH}) decisions of one tick as one call`, async () => {
    const { client, calls } = scriptedClient((call) => Array.from({ length: call.numKeys }, () => [0, 0, 0]));
    const store = redisStores(client, { clock: new FakeClock() }).rateLimit;
    await Promise.all(Array.from({ length: MAX_BATCH }, (_, i) => store.take(`k${i}`, 1, rule)));
    expect(calls.map((c) => c.numKeys)).toEqual([MAX_BATCH]);
  });

  it('a decision whose deadline passes before its tick is sent is not sent at all', async () => {
    const clock = new ManualClock();
    const { client, calls } = scriptedClient(() => [4, 0, 12_000]);
    const store = redisStores(client, { clock, timeoutMs: 100 }).rateLimit;
    const expired = store.take('late', 1, rule).catch((e: unknown) => e);
    clock.fire(60);
    const live = store.take('k', 1, rule);
    clock.fire(100); // the first decision's deadline, before the microtask that sends the tick
    expect(((await expired) as Error).message).toBe('Redis did not answer within 100 ms');
    expect(await live).toMatchObject({ allowed: true, remaining: 4 });
    expect(calls).toEqual([
      { method: 'eval', numKeys: 1, args: ['bulwark:rl:api:{k}', 1, '5', '60000', '5', '1'] },
    ]);
  });

  it('a decision answered in time leaves no deadline keeping the process alive, answered or failed', async () => {
    const clock = new FakeClock();
    const replies: unknown[] = [[4, 0, 12_000], new Error('ECONNRESET'), [[4, 0, 12_000], 'WRONGTYPE']];
    const { client } = scriptedClient(() => replies.shift());
    const store = redisStores(client, { clock }).rateLimit;
    const decided = store.take('a', 1, rule);
    expect(clock.aliveTimers).toBe(1);
    await decided;
    expect(clock.aliveTimers).toBe(0);
    await expect(store.take('a', 1, rule)).rejects.toThrow('Redis failed: ECONNRESET');
    expect(clock.aliveTimers).toBe(0);
    const batch = await Promise.allSettled([store.take('a', 1, rule), store.take('b', 1, rule)]);
    expect(batch.map((o) => o.status)).toEqual(['fulfilled', 'rejected']);
    expect(clock.aliveTimers).toBe(0);
  });

  it('a bad key rejects with a TypeError before any call, on take, peek and reset', async () => {
    const { client, calls, deleted } = scriptedClient(() => [0, 0, 0]);
    const store = redisStores(client, { clock: new FakeClock() }).rateLimit;
    await expect(store.take('', 1, rule)).rejects.toThrow(TypeError);
    await expect(store.peek('\uD800', rule)).rejects.toThrow(/well-formed UTF-16/);
    await expect(store.reset('', rule)).rejects.toThrow(/"key" to be a non-empty string/);
    expect(() => store.keyOf('', rule)).toThrow(TypeError);
    expect(calls).toEqual([]);
    expect(deleted).toEqual([]);
  });

  it('reset deletes the key of that limiter and key, and resolves with nothing', async () => {
    const { client, deleted } = scriptedClient(() => [0, 0, 0]);
    const store = redisStores(client, { prefix: 'app:', clock: new FakeClock() }).rateLimit;
    await expect(store.reset('user:1', rule)).resolves.toBeUndefined();
    expect(deleted).toEqual(['app:rl:api:{user:1}']);
  });
});
