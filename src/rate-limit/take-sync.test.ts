import { describe, expect, expectTypeOf, it } from 'vitest';
import { isStoreUnavailableError } from '../core/errors.js';
import { FakeClock } from '../testing/fake-clock.js';
import { memoryRateLimitStore } from './memory-store.js';
import { rateLimiter } from './rate-limiter.js';
import type { RateLimitResult, RateLimitStore } from './store.js';

/** A remote-like store: the memory store behind its (asynchronous) store interface only. */
function remoteStore(clock: FakeClock): RateLimitStore & { failing: boolean } {
  const inner = memoryRateLimitStore({ clock });
  const store = {
    failing: false,
    take: (...args: Parameters<RateLimitStore['take']>) =>
      store.failing ? Promise.reject(new Error('down')) : inner.take(...args),
    peek: (...args: Parameters<RateLimitStore['peek']>) => inner.peek(...args),
    reset: (...args: Parameters<RateLimitStore['reset']>) => inner.reset(...args),
  };
  return store;
}

describe('take: a promise whatever the store', () => {
  it('the in-memory store answers take with a promise of the same result as takeSync', async () => {
    const clock = new FakeClock();
    const limiter = rateLimiter({ limit: 2, periodMs: 1_000, clock });
    const pending = limiter.take('k');
    expect(pending).toBeInstanceOf(Promise);
    expect(await pending).toEqual({ allowed: true, remaining: 1, retryAfterMs: 0, resetMs: 500, limit: 2 });
    expect((await limiter.take('k')).allowed).toBe(true);
    // `limiter.take(k).allowed` is never silently undefined: it is a promise, and awaited it is the decision.
    expect(await limiter.take('k')).toEqual({
      allowed: false,
      remaining: 0,
      retryAfterMs: 500,
      resetMs: 1_000,
      limit: 2,
    });
  });

  it('bad input rejects (never throws) with the in-memory store too', async () => {
    const limiter = rateLimiter({ limit: 10, periodMs: 1_000 });
    let pending: Promise<RateLimitResult> | undefined;
    expect(() => {
      pending = limiter.take('', 1);
    }).not.toThrow();
    await expect(pending).rejects.toThrow(/"key" to be a non-empty string/);
    await expect(limiter.take('k', 0)).rejects.toThrow(/"cost" to be a positive integer, got 0/);
    await expect(limiter.take('k', 11)).rejects.toThrow(/"cost" to be at most "burst" \(10\)/);
    await expect(limiter.peek('')).rejects.toThrow(TypeError);
    await expect(limiter.reset('')).rejects.toThrow(TypeError);
  });

  it('peek and reset are promises with the in-memory store too', async () => {
    const limiter = rateLimiter({ limit: 4, periodMs: 1_000, clock: new FakeClock() });
    await limiter.take('k', 3);
    const peeked = limiter.peek('k');
    expect(peeked).toBeInstanceOf(Promise);
    expect(await peeked).toMatchObject({ allowed: true, remaining: 1 });
    const reset = limiter.reset('k');
    expect(reset).toBeInstanceOf(Promise);
    expect(await reset).toBeUndefined();
    expect((await limiter.take('k', 4)).allowed).toBe(true);
  });

  it('two limiters of one name and different rules on one memory store: a TypeError, never a store failure', async () => {
    const store = memoryRateLimitStore({ clock: new FakeClock() });
    const a = rateLimiter({ name: 'x', limit: 1, periodMs: 1_000, store, storeFailure: 'fail-open' });
    const b = rateLimiter({ name: 'x', limit: 5, periodMs: 1_000, store, storeFailure: 'fail-open' });
    await a.take('k');
    await expect(b.take('k')).rejects.toThrow(/two limiters named "x" with different rules/);
    expect(() => b.takeSync('k')).toThrow(/two limiters named "x" with different rules/);
  });

  it('types: take, peek, reset and wait are promises whatever the store', () => {
    const memory = rateLimiter({ limit: 1, periodMs: 1_000 });
    const remote = rateLimiter({ limit: 1, periodMs: 1_000, store: remoteStore(new FakeClock()) });
    for (const limiter of [memory, remote]) {
      expectTypeOf(limiter.take('k')).toEqualTypeOf<Promise<RateLimitResult>>();
      expectTypeOf(limiter.peek('k')).toEqualTypeOf<Promise<RateLimitResult>>();
      expectTypeOf(limiter.reset('k')).toEqualTypeOf<Promise<void>>();
      expectTypeOf(limiter.wait('k')).toEqualTypeOf<Promise<RateLimitResult>>();
      expectTypeOf(limiter.takeSync).returns.toEqualTypeOf<RateLimitResult>();
    }
  });
});

describe('takeSync: the in-memory fast path', () => {
  it('answers synchronously with a plain result, the same decisions as take', async () => {
    const clock = new FakeClock();
    const limiter = rateLimiter({ limit: 2, periodMs: 1_000, clock });
    const result = limiter.takeSync('k');
    expect(result).not.toBeInstanceOf(Promise);
    expect(result).toEqual({ allowed: true, remaining: 1, retryAfterMs: 0, resetMs: 500, limit: 2 });
    expect(limiter.takeSync('k', 1).remaining).toBe(0);
    expect(limiter.takeSync('k')).toMatchObject({ allowed: false, retryAfterMs: 500 });
    expect(await limiter.take('k')).toMatchObject({ allowed: false, retryAfterMs: 500 });
    await clock.advance(500);
    expect(limiter.takeSync('k')).toMatchObject({ allowed: true, remaining: 0 });
  });

  it('emits onRejected for its refusals', () => {
    const limiter = rateLimiter({ limit: 1, periodMs: 1_000, clock: new FakeClock() });
    const events: unknown[] = [];
    limiter.onRejected((e) => events.push(e));
    limiter.takeSync('k');
    limiter.takeSync('k');
    expect(events).toEqual([{ key: 'k', cost: 1, retryAfterMs: 1_000, remaining: 0 }]);
  });

  it('throws a TypeError at once for a bad key or cost', () => {
    const limiter = rateLimiter({ limit: 10, periodMs: 1_000 });
    expect(() => limiter.takeSync('')).toThrow(/"key" to be a non-empty string, got ""/);
    expect(() => limiter.takeSync('\uD800')).toThrow(TypeError);
    expect(() => limiter.takeSync('k', 1.5)).toThrow(/"cost".*1.5/);
    expect(() => limiter.takeSync('k', 11)).toThrow(/"cost" to be at most "burst" \(10\)/);
  });

  it('throws a TypeError on a remote store, naming the way out, and takes nothing', async () => {
    const clock = new FakeClock();
    const store = remoteStore(clock);
    const limiter = rateLimiter({ limit: 1, periodMs: 1_000, clock, store });
    expect(() => limiter.takeSync('k')).toThrow(TypeError);
    expect(() => limiter.takeSync('k')).toThrow(/takeSync.*in-memory store.*await limiter\.take/);
    expect(await limiter.take('k')).toMatchObject({ allowed: true, remaining: 0 });
  });

  it('an explicitly passed memory store is the fast path too; a wrapped one is remote', () => {
    const clock = new FakeClock();
    const memory = memoryRateLimitStore({ clock });
    expect(rateLimiter({ limit: 1, periodMs: 1_000, clock, store: memory }).takeSync('k').allowed).toBe(true);
    const wrapped: RateLimitStore = {
      take: (key, cost, rule) => memory.take(key, cost, rule),
      peek: (key, rule) => memory.peek(key, rule),
      reset: (key, rule) => memory.reset(key, rule),
    };
    expect(() => rateLimiter({ limit: 1, periodMs: 1_000, clock, store: wrapped }).takeSync('k')).toThrow(
      TypeError,
    );
  });
});

describe('storeFailure (was the option onStoreError)', () => {
  it('storeFailure chooses the mode; the listener method keeps the name onStoreError', async () => {
    const clock = new FakeClock();
    const store = remoteStore(clock);
    const limiter = rateLimiter({ limit: 1, periodMs: 1_000, clock, store, storeFailure: 'fail-open' });
    const modes: string[] = [];
    limiter.onStoreError((e) => modes.push(e.mode));
    store.failing = true;
    expect(await limiter.take('k')).toMatchObject({ allowed: true, fallback: 'fail-open' });
    expect(modes).toEqual(['fail-open']);
  });

  it('fail-closed stays the default', async () => {
    const clock = new FakeClock();
    const store = remoteStore(clock);
    const limiter = rateLimiter({ limit: 1, periodMs: 1_000, clock, store });
    store.failing = true;
    await expect(limiter.take('k')).rejects.toSatisfy(isStoreUnavailableError);
  });

  it('the old option name is refused as unknown; a bad mode is a TypeError naming storeFailure', () => {
    const base = { limit: 1, periodMs: 1_000 };
    expect(() => rateLimiter({ ...base, onStoreError: 'fail-open' } as never)).toThrow(/"onStoreError"/);
    expect(() => rateLimiter({ ...base, storeFailure: 'retry' } as never)).toThrow(
      /"storeFailure" to be one of "fail-open", "fail-closed", "local"/,
    );
  });
});
