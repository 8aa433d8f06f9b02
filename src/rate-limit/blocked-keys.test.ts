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
});
