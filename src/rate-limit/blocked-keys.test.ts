import { describe, expect, it } from 'vitest';
import { FakeClock } from '../testing/fake-clock.js';
import { BlockedKeys } from './blocked-keys.js';
import type { RateLimitResult } from './store.js';

const refused = (retryAfterMs: number): RateLimitResult => ({
  allowed: false,
  remaining: 0,
  retryAfterMs,
  resetMs: retryAfterMs,
  limit: 1,
});

describe('BlockedKeys', () => {
  it('answers a blocked key locally until its last millisecond', async () => {
    const clock = new FakeClock();
    const blocked = new BlockedKeys(10, clock);
    blocked.remember('k', 1, refused(250));
    expect(blocked.check('k', 1, 1)).toMatchObject({ allowed: false, retryAfterMs: 250 });
    await clock.advance(248.5);
    expect(blocked.check('k', 1, 1)).toMatchObject({ allowed: false, retryAfterMs: 2 });
  });

  // Node runs a timer up to 1 ms before performance.now() says it is due (libuv keeps whole-ms
  // loop time): a waiter that slept exactly retryAfterMs must reach the store, not a local "1 ms more".
  it('leaves the last millisecond to the store, so a timer that fires a little early is not refused locally', async () => {
    const clock = new FakeClock();
    const blocked = new BlockedKeys(10, clock);
    blocked.remember('k', 1, refused(250));
    await clock.advance(249.2);
    expect(blocked.check('k', 1, 1)).toBeUndefined();
    expect(blocked.size).toBe(0);
  });

  it('answers only the refused cost', () => {
    const clock = new FakeClock();
    const blocked = new BlockedKeys(10, clock);
    blocked.remember('k', 2, refused(250));
    expect(blocked.check('k', 1, 1)).toBeUndefined();
    expect(blocked.check('k', 2, 1)).toMatchObject({ allowed: false });
  });

  it('a local refusal counts the remembered remaining and reset down from the reply, with the given limit', async () => {
    const clock = new FakeClock();
    const blocked = new BlockedKeys(10, clock);
    blocked.remember('k', 3, { allowed: false, remaining: 2, retryAfterMs: 100, resetMs: 400, limit: 5 });
    await clock.advance(40);
    expect(blocked.check('k', 3, 5)).toEqual({
      allowed: false,
      remaining: 2,
      retryAfterMs: 60,
      resetMs: 360,
      limit: 5,
    });
  });

  it('hands the key back to the store exactly 1 ms before the remembered retryAfterMs ends', async () => {
    const clock = new FakeClock();
    const blocked = new BlockedKeys(10, clock);
    blocked.remember('k', 1, refused(250));
    await clock.advance(248);
    expect(blocked.check('k', 1, 1)).toMatchObject({ allowed: false, retryAfterMs: 2 });
    await clock.advance(1);
    expect(blocked.check('k', 1, 1)).toBeUndefined();
  });

  it('remembers nothing for a reply without a positive retryAfterMs', () => {
    const clock = new FakeClock();
    const blocked = new BlockedKeys(10, clock);
    blocked.remember('a', 1, refused(0));
    blocked.remember('b', 1, refused(Number.NaN));
    expect(blocked.size).toBe(0);
    expect(blocked.check('a', 1, 1)).toBeUndefined();
    blocked.remember('c', 1, refused(1));
    expect(blocked.size).toBe(1);
  });

  it('forgets a key at once', () => {
    const clock = new FakeClock();
    const blocked = new BlockedKeys(10, clock);
    blocked.remember('k', 1, refused(250));
    blocked.forget('k');
    expect(blocked.check('k', 1, 1)).toBeUndefined();
    expect(blocked.size).toBe(0);
  });

  it('keeps at most maxKeys keys, forgetting the least recently used', () => {
    const clock = new FakeClock();
    const blocked = new BlockedKeys(2, clock);
    blocked.remember('a', 1, refused(250));
    blocked.remember('b', 1, refused(250));
    blocked.remember('c', 1, refused(250));
    expect(blocked.size).toBe(2);
    expect(blocked.check('a', 1, 1)).toBeUndefined();
    expect(blocked.check('c', 1, 1)).toMatchObject({ allowed: false });
  });
});
