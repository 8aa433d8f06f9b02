/**
 * `limiter.penalty()`, `reward()` and `block()`: bad input first, then the in-memory store (the
 * reference, on a FakeClock), then a remote-like store (failures, the blocked-key memory, the
 * `local` fallback kept warm). Their decisions on every store are the conformance suite's
 * (src/testing/rate-limit-conformance-quota.ts); Redis runs in test/rate-limit/.
 */
import { describe, expect, it } from 'vitest';
import { SwitchableStore } from '../../test/rate-limit/support/switchable-store.js';
import { isStoreUnavailableError } from '../core/errors.js';
import { FakeClock } from '../testing/fake-clock.js';
import type { StoreFailureMode } from './options.js';
import { rateLimiter } from './rate-limiter.js';
import type { RateLimitResult } from './store.js';

const rule = { limit: 5, periodMs: 60_000 };
const peekLike = (remaining: number, resetMs: number): RateLimitResult => ({
  allowed: true,
  remaining,
  retryAfterMs: 0,
  resetMs,
  limit: 5,
});

describe('penalty, reward and block: bad input rejects with a TypeError, never a throw', () => {
  const limiter = rateLimiter({ ...rule, clock: new FakeClock() });

  /** The promise `call` returns, which it must return rather than throw. */
  function returned(call: () => Promise<RateLimitResult>): Promise<RateLimitResult> {
    let pending: Promise<RateLimitResult> | undefined;
    expect(() => {
      pending = call();
    }).not.toThrow();
    return pending!;
  }

  it.each([Number.NaN, 0, -1, 1.5, Infinity, 2 ** 53, '1', null])('units %s', async (units) => {
    for (const call of [
      () => limiter.penalty('k', units as number),
      () => limiter.reward('k', units as number),
    ]) {
      await expect(returned(call)).rejects.toThrow(
        /expected "units" to be a positive integer up to 2\^53 − 1/,
      );
    }
    expect(await limiter.peek('k')).toEqual(peekLike(5, 0)); // nothing was adjusted
  });

  it.each([Number.NaN, 0, -5, Infinity, 1e12 + 1, '100', undefined])('ms %s', async (ms) => {
    await expect(returned(() => limiter.block('k', ms as number))).rejects.toThrow(TypeError);
    await expect(limiter.block('k', ms as number)).rejects.toThrow(/"ms"/);
    expect(await limiter.peek('k')).toEqual(peekLike(5, 0)); // not blocked
  });

  it.each(['', '\uD800', 42, undefined])('key %j', async (key) => {
    for (const call of [
      () => limiter.penalty(key as string, 1),
      () => limiter.reward(key as string, 1),
      () => limiter.block(key as string, 1_000),
    ]) {
      await expect(returned(call)).rejects.toThrow(/"key"/);
    }
  });

  it('a store without adjust or block: a TypeError that says so, nothing called', async () => {
    const full = new SwitchableStore(new FakeClock());
    const store = { take: full.take.bind(full), peek: full.peek.bind(full), reset: full.reset.bind(full) };
    const old = rateLimiter({ ...rule, store });
    await expect(old.penalty('k', 1)).rejects.toThrow(/store has no adjust\(\): penalty\(\) and reward\(\)/);
    await expect(old.reward('k', 1)).rejects.toThrow(TypeError);
    await expect(old.block('k', 1_000)).rejects.toThrow(/store has no block\(\): block\(\) needs/);
    expect(full.calls).toEqual([]);
    expect((await old.take('k')).allowed).toBe(true); // the rest still works
  });
});

describe('on the in-memory store', () => {
  it('penalty consumes and reward gives back, clamped, resolving with the state after', async () => {
    const limiter = rateLimiter({ ...rule, clock: new FakeClock() });
    expect(await limiter.penalty('k', 2)).toEqual(peekLike(3, 24_000));
    expect(await limiter.penalty('k')).toEqual(peekLike(2, 36_000));
    expect(await limiter.penalty('k', 50)).toEqual(peekLike(0, 60_000));
    expect(limiter.takeSync('k')).toMatchObject({ allowed: false, retryAfterMs: 12_000 });
    expect(await limiter.reward('k')).toEqual(peekLike(1, 48_000));
    expect(await limiter.reward('k', 2 ** 53 - 1)).toEqual(peekLike(5, 0));
  });

  it('block refuses every take, takeSync and wait included, until it ends; reset lifts it', async () => {
    const clock = new FakeClock();
    const limiter = rateLimiter({ ...rule, clock });
    const refusals: number[] = [];
    limiter.onRejected((e) => refusals.push(e.retryAfterMs));
    expect(await limiter.block('k', 1_500)).toEqual(peekLike(0, 1_500));
    expect(limiter.takeSync('k')).toEqual({
      allowed: false,
      remaining: 0,
      retryAfterMs: 1_500,
      resetMs: 1_500,
      limit: 5,
    });
    expect(refusals).toEqual([1_500]);
    await expect(limiter.policy('k').execute(() => 'ran')).rejects.toMatchObject({ retryAfterMs: 1_500 });
    const waited = limiter.wait('k', { maxWaitMs: 2_000 });
    await clock.advance(1_499);
    expect(limiter.takeSync('other').allowed).toBe(true);
    await clock.advance(1);
    expect(await waited).toMatchObject({ allowed: true, remaining: 4 });
    await limiter.block('k', 60_000);
    await limiter.reset('k');
    expect(limiter.takeSync('k')).toMatchObject({ allowed: true, remaining: 4 });
  });
});

describe('on a remote store', () => {
  function remote(storeFailure: StoreFailureMode = 'fail-closed') {
    const clock = new FakeClock();
    const store = new SwitchableStore(clock);
    const limiter = rateLimiter({ ...rule, store, storeFailure, clock });
    const storeErrors: string[] = [];
    limiter.onStoreError((e) => storeErrors.push(e.mode));
    return { clock, store, limiter, storeErrors };
  }

  it.each(['fail-closed', 'fail-open', 'local'] as const)(
    '%s: a store failure rejects with StoreUnavailableError whatever the mode, never a decision',
    async (mode) => {
      const { store, limiter, storeErrors } = remote(mode);
      store.failing = new Error('ECONNRESET');
      for (const call of [
        () => limiter.penalty('k', 1),
        () => limiter.reward('k', 1),
        () => limiter.block('k', 1_000),
      ]) {
        const error = await call().catch((e: unknown) => e);
        expect(isStoreUnavailableError(error)).toBe(true);
        expect((error as Error).message).toBe('rate-limit store failed: ECONNRESET');
        expect((error as Error).cause).toBe(store.failing);
      }
      expect(storeErrors).toEqual([]); // the mode answers decisions; these calls just fail
    },
  );

  it('a store that throws instead of rejecting fails the same way', async () => {
    const { store, limiter } = remote();
    store.adjust = () => {
      throw new Error('sync');
    };
    await expect(limiter.penalty('k')).rejects.toSatisfy(isStoreUnavailableError);
  });

  it('a reward forgets the refusal remembered for the key: the next take asks the store', async () => {
    const { store, limiter } = remote();
    await limiter.take('k', 5);
    expect((await limiter.take('k')).allowed).toBe(false);
    expect((await limiter.take('k')).allowed).toBe(false); // answered from the blocked-key memory
    expect(store.calls).toEqual(['take', 'take']);
    await limiter.reward('k');
    expect(await limiter.take('k')).toMatchObject({ allowed: true, remaining: 0 });
    expect(store.calls).toEqual(['take', 'take', 'adjust', 'take']);
  });

  it('a block on the store refuses there; its refusals are remembered like any other', async () => {
    const { store, limiter } = remote();
    await limiter.block('k', 10_000);
    expect(await limiter.take('k')).toMatchObject({ allowed: false, retryAfterMs: 10_000 });
    expect(await limiter.take('k')).toMatchObject({ allowed: false, retryAfterMs: 10_000 });
    expect(store.calls).toEqual(['block', 'take']);
  });

  it('local: penalties, rewards and blocks also reach the local fallback, kept warm', async () => {
    const { store, limiter } = remote('local');
    await limiter.penalty('spent', 5);
    await limiter.penalty('rewarded', 5);
    await limiter.reward('rewarded', 2);
    await limiter.block('blocked', 10_000);
    store.failing = new Error('down');
    expect(await limiter.take('spent')).toMatchObject({ allowed: false, fallback: 'local' });
    expect(await limiter.take('rewarded', 2)).toMatchObject({
      allowed: true,
      remaining: 0,
      fallback: 'local',
    });
    expect(await limiter.take('blocked')).toMatchObject({
      allowed: false,
      retryAfterMs: 10_000,
      fallback: 'local',
    });
    expect(await limiter.take('fresh')).toMatchObject({ allowed: true, fallback: 'local' });
  });
});
