/**
 * The Lua sources themselves are checked by running them on real Redis (test/rate-limit/). This
 * file checks that they are assembled when the module loads: the modules are imported inside the
 * test, so a module that throws while loading fails this test instead of every test file that
 * imports it.
 */
import { describe, expect, it } from 'vitest';

const algorithms = ['gcra', 'token-bucket', 'sliding-window'] as const;

describe('rate-limit scripts', () => {
  it('bulwark/redis loads, with a single-key and a batch script for every algorithm', async () => {
    const { rateLimitScripts } = await import('./rate-limit-scripts.js');
    const { redisStores } = await import('./index.js');
    expect(typeof redisStores).toBe('function');
    expect(Object.keys(rateLimitScripts).sort()).toEqual([...algorithms].sort());
    for (const algorithm of algorithms) {
      const { single, batch } = rateLimitScripts[algorithm];
      // The single-key script decides KEYS[1]; the batch one every key, each in a protected call.
      expect(single).toContain('local key = KEYS[1]');
      expect(single).toContain("call('TIME')");
      expect(batch).toContain('pcall(decide, KEYS[i], ARGV[i] + 0)');
      expect(batch).toContain("call('TIME')");
      expect(batch).not.toBe(single);
    }
  });
});
