/**
 * The Lua sources themselves are checked by running them on real Redis (test/rate-limit/). This
 * file checks that they are assembled when the module loads: the modules are imported inside the
 * test, so a module that throws while loading fails this test instead of every test file that
 * imports it.
 */
import { describe, expect, it } from 'vitest';
import { scriptedClient } from '../../../test/rate-limit/support/scripted-client.js';
import { ruleOf } from '../../rate-limit/rule.js';
import { FakeClock } from '../../testing/fake-clock.js';

const algorithms = ['gcra', 'token-bucket', 'sliding-window'] as const;

describe('rate-limit scripts', () => {
  it('bulwark/redis loads, with single-key, batch, adjust and block scripts for every algorithm, and one all script', async () => {
    const { rateLimitAllScript, rateLimitScripts } = await import('./rate-limit-scripts.js');
    const { redisStores } = await import('./index.js');
    expect(typeof redisStores).toBe('function');
    expect(Object.keys(rateLimitScripts).sort()).toEqual([...algorithms].sort());
    for (const algorithm of algorithms) {
      const { single, batch, adjust, block } = rateLimitScripts[algorithm];
      // The single-key script takes KEYS[1], inline unless blocked; the batch one every key, each in
      // a protected call.
      expect(single).toContain(
        "local key = KEYS[1]\nlocal cost = ARGV[1] + 0\nlocal stored = call('GET', key)",
      );
      expect(single).toContain('return take(key, cost)\nend\nlocal commit = true');
      expect(batch).toContain('pcall(take, KEYS[i], ARGV[i] + 0)');
      expect(adjust).toContain('local delta = ARGV[1] + 0');
      expect(block).toContain('local ms = ARGV[1] + 0');
      for (const script of [single, batch, adjust, block]) {
        expect(script.match(/call\('TIME'\)/g)).toHaveLength(1); // one server time per call
        expect(script).toContain('string.byte(stored) == 33'); // every script reads a block
      }
      expect(new Set([single, batch, adjust, block]).size).toBe(4);
    }
    // The all script holds every algorithm, and writes only once every rule has allowed.
    for (const algorithm of algorithms) expect(rateLimitAllScript).toContain(`['${algorithm}'] = function`);
    expect(rateLimitAllScript).toMatch(
      /if allowed then\n {2}for i = 1, n do replies\[i\] = decides\[i\]\(KEYS\[i\], states\[i\], cost, true\) end/,
    );
    // And the store sends them: one decision of each algorithm through a scripted client.
    const { client, calls } = scriptedClient(() => [4, 0, 12_000]);
    const store = redisStores(client, { clock: new FakeClock() }).rateLimit;
    for (const algorithm of algorithms) {
      expect(await store.take('k', 1, ruleOf({ limit: 5, periodMs: 60_000, algorithm }))).toMatchObject({
        allowed: true,
        remaining: 4,
      });
    }
    expect(calls).toHaveLength(algorithms.length);
  });
});
