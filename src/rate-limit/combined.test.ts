/**
 * `rateLimiter.all()`: bad construction and bad input first, then decisions on the in-memory store
 * (FakeClock) and on a remote-like store (blocked-key memory, store failures per limiter mode).
 * The property test is combined.property.test.ts; Redis runs in test/rate-limit/.
 */
import { describe, expect, it } from 'vitest';
import { SwitchableStore } from '../../test/rate-limit/support/switchable-store.js';
import { isStoreUnavailableError } from '../core/errors.js';
import { FakeClock } from '../testing/fake-clock.js';
import { MAX_COMBINED_LIMITERS } from './combined.js';
import { memoryRateLimitStore } from './memory-store.js';
import type { StoreFailureMode } from './options.js';
import { rateLimiter } from './rate-limiter.js';
import type { RateLimitStore } from './store.js';

/** Two limits on one store: 2 per second (burst 3) and 5 per minute. */
function pair(
  store: RateLimitStore,
  clock: FakeClock,
  modes: [StoreFailureMode, StoreFailureMode] = ['fail-closed', 'fail-closed'],
) {
  const second = rateLimiter({
    name: 's',
    limit: 2,
    periodMs: 1_000,
    burst: 3,
    store,
    clock,
    storeFailure: modes[0],
  });
  const minute = rateLimiter({ name: 'm', limit: 5, periodMs: 60_000, store, clock, storeFailure: modes[1] });
  return { second, minute, both: rateLimiter.all([second, minute]) };
}

describe('rateLimiter.all: construction', () => {
  const clock = new FakeClock();
  const store = memoryRateLimitStore({ clock });
  const a = rateLimiter({ name: 'a', limit: 1, periodMs: 1_000, store });
  const b = rateLimiter({ name: 'b', limit: 1, periodMs: 1_000, store });

  it.each([
    [undefined, /"limiters" to be an array of 1 to 16 rate limiters, got undefined/],
    [[], /"limiters" to be an array of 1 to 16/],
    [
      Array.from({ length: 17 }, (_, i) => rateLimiter({ name: `n${i}`, limit: 1, periodMs: 1, store })),
      /1 to 16/,
    ],
    [[a, {}], /"limiters" to hold rate limiters from rateLimiter\(\), got an object/],
    [[a, null], /hold rate limiters/],
    [[a, { decider: a.decider, store }], /hold rate limiters from rateLimiter\(\), got an object/],
    [
      [a, rateLimiter({ name: 'c', limit: 1, periodMs: 1_000 })],
      /share one store .* memoryRateLimitStore\(\)/,
    ],
    [[a, rateLimiter({ name: 'a', limit: 2, periodMs: 1_000, store })], /distinct names, got "a" twice/],
  ])('refuses %#', (limiters, message) => {
    expect(() => rateLimiter.all(limiters as never)).toThrow(TypeError);
    expect(() => rateLimiter.all(limiters as never)).toThrow(message);
  });

  it('refuses a store without takeAll', () => {
    const inner = memoryRateLimitStore({ clock });
    const old = {
      take: inner.take.bind(inner),
      peek: inner.peek.bind(inner),
      reset: inner.reset.bind(inner),
    };
    const limiters = ['x', 'y'].map((name) => rateLimiter({ name, limit: 1, periodMs: 1, store: old }));
    expect(() => rateLimiter.all(limiters)).toThrow(/store of "limiters" to implement takeAll\(\)/);
  });

  it(`takes up to ${MAX_COMBINED_LIMITERS} limiters`, async () => {
    const most = Array.from({ length: MAX_COMBINED_LIMITERS }, (_, i) =>
      rateLimiter({ name: `most${i}`, limit: 1, periodMs: 1_000, store }),
    );
    expect((await rateLimiter.all(most).take('k')).allowed).toBe(true);
  });

  it('keeps the limiters given, in order, and one limiter alone works', async () => {
    expect(rateLimiter.all([b, a]).limiters).toEqual([b, a]);
    expect((await rateLimiter.all([a]).take('k')).allowed).toBe(true);
  });

  it.each([
    ['', 1, /"key"/],
    ['\uD800', 1, /well-formed/],
    ['k', 0, /"cost" to be a positive integer, got 0/],
    ['k', 1.5, /"cost"/],
    ['k', Number.NaN, /"cost"/],
    ['k', 2, /"cost" to be at most "burst" \(1\)/],
  ])('take(%j, %s) rejects with a TypeError', async (key, cost, message) => {
    const both = rateLimiter.all([a, rateLimiter({ name: 'big', limit: 10, periodMs: 1_000, store })]);
    await expect(both.take(key, cost)).rejects.toThrow(message);
  });
});

describe('rateLimiter.all: in memory', () => {
  it('admits only what every limit admits; a refusal by one takes nothing from the others', async () => {
    const clock = new FakeClock();
    const { second, minute, both } = pair(memoryRateLimitStore({ clock }), clock);
    const first = await both.take('k', 3);
    // No fallback key at all: the store decided.
    expect(first).toStrictEqual({
      allowed: true,
      remaining: 0,
      retryAfterMs: 0,
      resetMs: 36_000,
      limit: 3,
      // The binding limit is the one with the fewest units left, with its own decision.
      binding: {
        rule: second.rule,
        result: { allowed: true, remaining: 0, retryAfterMs: 0, resetMs: 1_500, limit: 3 },
      },
    });
    const refused = await both.take('k', 2);
    // The per-second limit refuses: 2 units come back in 1 s; the minute had 2 left and keeps them.
    expect(refused).toMatchObject({
      allowed: false,
      remaining: 0,
      retryAfterMs: 1_000,
      resetMs: 36_000,
      limit: 3,
    });
    expect(refused.binding.rule).toBe(second.rule);
    expect((await minute.peek('k')).remaining).toBe(2);
    await clock.advance(1_000);
    // Both at 0: the first limiter given is reported.
    const tie = await both.take('k', 2);
    expect(tie).toMatchObject({ allowed: true, remaining: 0, limit: 3 });
    expect(tie.binding.rule).toBe(second.rule);
    await clock.advance(1_500);
    // Now the minute refuses (its next unit 9.5 s away): the second keeps its 3.
    const byMinute = await both.take('k');
    expect(byMinute).toMatchObject({ allowed: false, retryAfterMs: 9_500, limit: 5 });
    expect(byMinute.binding).toMatchObject({
      rule: minute.rule,
      result: { allowed: false, retryAfterMs: 9_500 },
    });
    expect((await second.peek('k')).remaining).toBe(3);
  });

  it('tells the refusing limiters only; peek combines, reset forgets every limit', async () => {
    const clock = new FakeClock();
    const { second, minute, both } = pair(memoryRateLimitStore({ clock }), clock);
    const events: string[] = [];
    second.onRejected(() => events.push('second'));
    minute.onRejected(() => events.push('minute'));
    await both.take('k', 3);
    await both.take('k');
    expect(events).toEqual(['second']);
    expect(await both.peek('k')).toMatchObject({ remaining: 0, limit: 3 });
    await both.reset('k');
    expect(await both.peek('k')).toMatchObject({ remaining: 3, resetMs: 0 });
  });

  it('limits refusing with the same wait: the first given binds', async () => {
    const clock = new FakeClock();
    const store = memoryRateLimitStore({ clock });
    const [x, y] = ['x', 'y'].map((name) => rateLimiter({ name, limit: 1, periodMs: 1_000, store, clock }));
    const both = rateLimiter.all([x!, y!]);
    await both.take('k');
    const refused = await both.take('k');
    expect(refused).toMatchObject({ allowed: false, retryAfterMs: 1_000 });
    expect(refused.binding).toMatchObject({ rule: x!.rule, result: { allowed: false, retryAfterMs: 1_000 } });
  });

  it('a block on one limit refuses the whole decision until it ends', async () => {
    const clock = new FakeClock();
    const { minute, both } = pair(memoryRateLimitStore({ clock }), clock);
    await minute.block('k', 5_000);
    expect(await both.take('k')).toMatchObject({ allowed: false, remaining: 0, retryAfterMs: 5_000 });
    await clock.advance(5_000);
    expect((await both.take('k')).allowed).toBe(true);
  });
});

describe('rateLimiter.all: on a remote store', () => {
  it('answers a refusal it remembers without a round trip', async () => {
    const clock = new FakeClock();
    const store = new SwitchableStore(clock);
    const { both } = pair(store, clock);
    await both.take('k', 3);
    expect((await both.take('k')).allowed).toBe(false);
    expect((await both.take('k')).allowed).toBe(false);
    expect(store.calls).toEqual(['takeAll', 'takeAll']);
  });

  it('answers from every refusal it remembers: the longest wait, its limit binding', async () => {
    const clock = new FakeClock();
    const store = new SwitchableStore(clock);
    const { second, minute } = pair(store, clock);
    const both = rateLimiter.all([minute, second]);
    await minute.take('k', 2);
    await both.take('k', 3); // both limits at 0 now
    const fromStore = await both.take('k');
    expect(fromStore).toMatchObject({ allowed: false, retryAfterMs: 12_000 });
    const calls = store.calls.length;
    const remembered = await both.take('k');
    expect(store.calls.length).toBe(calls); // no round trip
    expect(remembered).toMatchObject({ allowed: false, retryAfterMs: 12_000 });
    expect(remembered.binding).toMatchObject({ rule: minute.rule, result: { retryAfterMs: 12_000 } });
  });

  it('a store failure: each limiter applies its own mode; any fail-closed one rejects', async () => {
    const clock = new FakeClock();
    const store = new SwitchableStore(clock);
    store.failing = new Error('down');
    await expect(pair(store, clock, ['fail-open', 'fail-closed']).both.take('k')).rejects.toSatisfy(
      isStoreUnavailableError,
    );
    expect(await pair(store, clock, ['fail-open', 'fail-open']).both.take('k')).toMatchObject({
      allowed: true,
      fallback: 'fail-open',
    });
    const local = pair(store, clock, ['local', 'fail-open']);
    expect(await local.both.take('k', 3)).toMatchObject({ allowed: true, remaining: 0, fallback: 'local' });
    expect(await local.both.take('k')).toMatchObject({ allowed: false, fallback: 'local' });
  });

  it('a limit that allowed a take another refused keeps its local fallback as it was', async () => {
    const clock = new FakeClock();
    const store = new SwitchableStore(clock);
    const { second, minute, both } = pair(store, clock, ['local', 'fail-closed']);
    await minute.take('k', 5);
    expect((await both.take('k', 3)).allowed).toBe(false); // the second allowed 3, the minute refused
    store.failing = new Error('down');
    expect(await second.take('k', 3)).toMatchObject({ allowed: true, remaining: 0, fallback: 'local' });
  });

  it('peek on a store failing for one limit only: the combined state says it is a fallback', async () => {
    const clock = new FakeClock();
    const store = new SwitchableStore(clock);
    const peek = store.peek.bind(store);
    store.peek = (key, rule) =>
      rule.name === 's' ? Promise.reject(new Error('shard down')) : peek(key, rule);
    const { both } = pair(store, clock, ['fail-open', 'fail-closed']);
    expect(await both.peek('k')).toMatchObject({ remaining: 3, fallback: 'fail-open' });
  });

  it('keeps a local fallback warm with admitted takes only', async () => {
    const clock = new FakeClock();
    const store = new SwitchableStore(clock);
    const { minute, both } = pair(store, clock, ['fail-closed', 'local']);
    await minute.take('k', 4); // 1 left in the minute, everywhere
    expect((await both.take('k', 2)).allowed).toBe(false); // the minute refuses: nothing taken
    expect((await both.take('k')).allowed).toBe(true);
    store.failing = new Error('down');
    expect(await minute.take('k')).toMatchObject({ allowed: false, fallback: 'local' });
  });
});
