/**
 * The registry's everyday behaviour: one policy per key made on first use, least-recently-used
 * eviction, `onRemoved`, `delete`, and `policy(key)` inside a pipeline (counted) beside the raw
 * `get(key)` policy (not counted).
 */
import { describe, expect, it } from 'vitest';
import { deferred } from '../../test/support/deferred.js';
import { concurrencyLimit } from '../admission/concurrency-limit.js';
import { setListenerErrorHandler } from '../core/events.js';
import { pipeline } from '../core/pipeline.js';
import { isRateLimitedError } from '../rate-limit/errors.js';
import { rateLimiter } from '../rate-limit/rate-limiter.js';
import { fallback } from '../retry/fallback.js';
import { FakeClock } from '../testing/fake-clock.js';
import { keyed } from './keyed.js';
import type { KeyedRemovedEvent } from './options.js';

const limits = () => concurrencyLimit(10);

describe('one policy per key', () => {
  it("makes a key's policy once, with factory(key), and returns it on every use", async () => {
    const made: string[] = [];
    const registry = keyed(
      (key) => {
        made.push(key);
        return limits();
      },
      { maxKeys: 10 },
    );
    const a = registry.get('a');
    expect(registry.get('a')).toBe(a);
    expect(await registry.execute('a', () => 'value')).toBe('value');
    expect(registry.get('b')).not.toBe(a);
    expect([made, registry.size]).toEqual([['a', 'b'], 2]);
  });

  it('evicts the least recently used key beyond maxKeys; get and execute count as uses, peek does not', async () => {
    const removed: KeyedRemovedEvent<unknown>[] = [];
    const registry = keyed(limits, { maxKeys: 2, name: 'tenants', onRemoved: (e) => removed.push(e) });
    const a = registry.get('a');
    registry.get('b');
    await registry.execute('a', () => 1);
    registry.peek('b');
    registry.get('c');
    expect(registry.keys()).toEqual(['a', 'c']);
    expect(removed).toEqual([
      { policy: 'tenants', key: 'b', instance: expect.anything(), reason: 'evicted' },
    ]);
    registry.get('a');
    registry.get('d');
    expect(registry.keys()).toEqual(['a', 'd']);
    expect(registry.get('a')).toBe(a);
  });

  it('peek makes nothing', () => {
    const registry = keyed(limits, { maxKeys: 2 });
    expect([registry.peek('a'), registry.size]).toEqual([undefined, 0]);
  });

  it("types execute as the key policy's value or substitute", async () => {
    const registry = keyed(() => fallback(() => null), { maxKeys: 2 });
    const value: number | null = await registry.execute('a', () => Promise.reject(new Error('x')));
    expect(value).toBeNull();
  });

  it('works with rate-limit policies: limiter.policy(key) per key', async () => {
    const limiter = rateLimiter({ limit: 1, periodMs: 1_000, clock: new FakeClock() });
    const registry = keyed((key) => limiter.policy(key), { maxKeys: 100 });
    expect(await registry.execute('tenant-1', () => 'first')).toBe('first');
    const refused = await registry.execute('tenant-1', () => 'second').catch((e: unknown) => e);
    expect(isRateLimitedError(refused)).toBe(true);
    expect(await registry.execute('tenant-2', () => 'other tenant')).toBe('other tenant');
  });
});

describe('delete', () => {
  it('takes a held entry out at once; its calls finish on the old policy and do not touch the new one', async () => {
    const removed: KeyedRemovedEvent<unknown>[] = [];
    const registry = keyed(limits, { maxKeys: 1, onRemoved: (e) => removed.push(e) });
    const gate = deferred<string>();
    const call = registry.execute('a', () => gate.promise);
    const old = registry.peek('a');
    expect(registry.delete('a')).toBe(true);
    expect(registry.delete('a')).toBe(false);
    expect(removed).toEqual([{ policy: 'keyed', key: 'a', instance: old, reason: 'deleted' }]);
    const fresh = registry.get('a');
    expect(fresh).not.toBe(old);
    gate.resolve('finished');
    expect(await call).toBe('finished');
    // The old call's end released nothing of the new entry: it is idle and evictable.
    registry.get('b');
    expect(registry.keys()).toEqual(['b']);
  });

  it("while over maxKeys, the old entry's last call settling takes nothing out: not the key's new entry", async () => {
    const removed: string[] = [];
    const registry = keyed(limits, {
      maxKeys: 1,
      onRemoved: ({ key, reason }) => removed.push(`${reason} ${key}`),
    });
    const old = deferred<string>();
    const oldCall = registry.execute('a', () => old.promise);
    registry.delete('a');
    const gate = deferred<string>();
    const running = [registry.execute('a', () => gate.promise), registry.execute('b', () => gate.promise)];
    const fresh = registry.peek('a');
    expect(registry.size).toBe(2); // both held: over maxKeys
    old.resolve('old');
    expect(await oldCall).toBe('old');
    expect([registry.peek('a'), removed]).toEqual([fresh, ['deleted a']]);
    gate.resolve('new');
    await Promise.all(running);
    // The new entry's own last call settled over the bound: it went at once, evicted.
    expect([registry.keys(), removed]).toEqual([['b'], ['deleted a', 'evicted a']]);
  });
});

describe('policy(key): the key inside a pipeline', () => {
  it('is counted: the entry is held while a pipeline call runs through it', async () => {
    const registry = keyed(limits, { maxKeys: 1 });
    const guarded = pipeline(
      fallback(() => 'fallback'),
      registry.policy('a'),
    );
    const gate = deferred<string>();
    const call = guarded.execute(() => gate.promise);
    const policy = registry.peek('a');
    registry.get('b');
    registry.get('c');
    expect(registry.peek('a')).toBe(policy);
    gate.reject(new Error('down'));
    expect(await call).toBe('fallback');
    registry.get('d');
    expect(registry.keys()).toEqual(['d']);
  });

  it("finds the key's policy on every call: after a delete the next call gets the new one", async () => {
    const registry = keyed(limits, { maxKeys: 2 });
    const forA = registry.policy('a');
    await forA.execute(() => 1);
    const first = registry.peek('a');
    registry.delete('a');
    await pipeline(forA).execute(() => 2);
    expect(registry.peek('a')).not.toBe(first);
  });

  it("turns a failing factory into the call's rejection on both paths", async () => {
    const failure = new Error('no policy');
    const registry = keyed(
      () => {
        throw failure;
      },
      { maxKeys: 2 },
    );
    await expect(registry.policy('a').execute(() => 1)).rejects.toBe(failure);
    await expect(pipeline(registry.policy('a')).execute(() => 1)).rejects.toBe(failure);
  });

  it('get(key) is the raw policy: its own calls are not counted and do not hold the entry', async () => {
    const registry = keyed(limits, { maxKeys: 1 });
    const gate = deferred<void>();
    const call = registry.get('a').execute(() => gate.promise);
    registry.get('b');
    expect(registry.keys()).toEqual(['b']);
    gate.resolve();
    await call;
  });
});

describe('events', () => {
  it('a listener that throws breaks nothing; each subscription returns a disposer', () => {
    const reported: unknown[] = [];
    const previous = setListenerErrorHandler((error) => reported.push(error));
    try {
      const broken = () => {
        throw new Error('listener');
      };
      const registry = keyed(limits, {
        maxKeys: 1,
        keep: (_, key) => key === 'held',
        onRemoved: broken,
        onOverflow: broken,
      });
      const seen: string[] = [];
      const offRemoved = registry.onRemoved(({ key, reason }) => seen.push(`${reason} ${key}`));
      const offOverflow = registry.onOverflow(({ key, size }) => seen.push(`overflow ${key} ${size}`));
      registry.get('held');
      registry.get('a');
      registry.get('b');
      offRemoved();
      offOverflow();
      registry.get('c');
      expect(seen).toEqual(['overflow a 2', 'evicted a', 'overflow b 2']);
      expect([registry.keys(), reported.length]).toEqual([['held', 'c'], 5]);
    } finally {
      setListenerErrorHandler(previous);
    }
  });
});
