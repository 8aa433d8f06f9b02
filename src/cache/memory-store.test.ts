import { describe, expect, it } from 'vitest';
import { FakeRemote } from '../../test/support/fake-remote-layer.js';
import { cacheLayerConformance } from '../testing/cache-layer-conformance.js';
import { FakeClock } from '../testing/fake-clock.js';
import { memoryLayer } from './memory-store.js';

cacheLayerConformance(
  'memory layer (FakeClock)',
  () => {
    const clock = new FakeClock(1_000_000);
    return {
      layer: memoryLayer({ maxEntries: 1_000 }),
      now: () => clock.now(),
      elapse: (ms) => clock.advance(ms),
      slackMs: 0,
    };
  },
  { describe, it },
);

// The test double the cache's unit tests use keeps the same contract as a real remote layer.
cacheLayerConformance(
  'fake remote layer (FakeClock)',
  () => {
    const clock = new FakeClock(1_000_000);
    return {
      layer: new FakeRemote(clock).layer(),
      now: () => clock.now(),
      elapse: (ms) => clock.advance(ms),
      slackMs: 0,
    };
  },
  { describe, it },
);

const entry = (value: unknown, expiresAt = 10_000) => ({ value, refreshAt: 1, staleAt: 2, expiresAt });

describe('memoryLayer', () => {
  it('keeps at most maxEntries, evicting the least recently used', () => {
    const layer = memoryLayer({ maxEntries: 2 });
    layer.set('a', entry('a'));
    layer.set('b', entry('b'));
    expect(layer.get('a', 0)?.value).toBe('a'); // a is now the most recently used
    layer.set('c', entry('c'));
    expect(layer.size).toBe(2);
    expect(layer.get('b', 0)).toBeUndefined();
    expect(layer.get('a', 0)?.value).toBe('a');
    expect(layer.get('c', 0)?.value).toBe('c');
  });

  it('hands out the stored object itself, and drops an entry once read past its end', () => {
    const layer = memoryLayer({ maxEntries: 10 });
    const value = { n: 1 };
    layer.set('k', entry(value, 100));
    expect(layer.get('k', 99)?.value).toBe(value);
    expect(layer.get('k', 100)).toBeUndefined();
    expect(layer.size).toBe(0);
  });

  it.each([
    [undefined, /"memoryLayer options\.?maxEntries"|"maxEntries"/],
    [{ maxEntries: 0 }, /"maxEntries" to be a positive integer/],
    [{ maxEntries: 1.5 }, /"maxEntries"/],
    [{ maxEntries: 10, max: 5 }, /unknown option "max" in memoryLayer options/],
  ])('refuses %j with a TypeError', (options, message) => {
    expect(() => memoryLayer(options as never)).toThrow(TypeError);
    expect(() => memoryLayer(options as never)).toThrow(message);
  });
});
