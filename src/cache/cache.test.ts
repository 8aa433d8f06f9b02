/**
 * readThroughCache on a FakeClock, with a fake remote layer shared by several caches (as processes
 * share one Redis): layers, sharing loads, grace, early refresh, invalidation across instances and
 * its races, fleet-wide loads, and bad input. The Redis layer itself runs in test/cache/.
 */
import { describe, expect, it } from 'vitest';
import { deferred } from '../../test/support/deferred.js';
import { FakeRemote, type FakeRemoteLayer } from '../../test/support/fake-remote-layer.js';
import { FakeClock } from '../testing/fake-clock.js';
import { readThroughCache } from './cache.js';
import { memoryLayer } from './memory-store.js';
import type { LayerErrorEvent, ReadThroughCacheOptions } from './options.js';
import type { LocalCacheLayer } from './store.js';

type Extra = Partial<Omit<ReadThroughCacheOptions, 'layers' | 'clock'>>;

/** A clock, a shared fake remote server, and caches on them (each with its own L1 and client). */
function world() {
  const clock = new FakeClock(1_000_000);
  const server = new FakeRemote(clock);
  const make = (options: Extra = {}, remote = true) => {
    const l1: LocalCacheLayer = memoryLayer({ maxEntries: 100 });
    const l2: FakeRemoteLayer = server.layer();
    const errors: LayerErrorEvent[] = [];
    const cache = readThroughCache({
      layers: remote ? [l1, l2] : [l1],
      ttlMs: 1_000,
      clock,
      onLayerError: (event) => errors.push(event),
      ...options,
    });
    return { cache, l1, l2, errors };
  };
  return { clock, server, make };
}

/** A loader counting its calls, answering `value` (or what `answer` gives) after `delayMs`. */
function counted<T>(clock: FakeClock, answer: (call: number) => T | Promise<T>, delayMs = 0) {
  const loader = Object.assign(
    async ({ signal }: { signal: AbortSignal }) => {
      loader.calls++;
      const call = loader.calls;
      loader.signals.push(signal);
      if (delayMs > 0) await clock.sleep(delayMs);
      return answer(call);
    },
    { calls: 0, signals: [] as AbortSignal[] },
  );
  return loader;
}

describe('readThroughCache: layers', () => {
  it('a miss loads once and writes both layers; an L1 hit is the same object and never touches L2', async () => {
    const { clock, make } = world();
    const { cache, l2 } = make();
    const value = { id: 1 };
    const loader = counted(clock, () => value);
    expect(await cache.get('k', loader)).toBe(value);
    expect(loader.calls).toBe(1);
    expect(l2.calls).toMatchObject({ version: 1, get: 1, set: 1 });
    expect(await cache.get('k', loader)).toBe(value);
    expect(await cache.get('k', loader)).toBe(value);
    expect(loader.calls).toBe(1);
    expect(l2.calls.get).toBe(1);
  });

  it('an L2 hit fills L1 for what is left of its TTL, without calling the loader', async () => {
    const { clock, make } = world();
    const a = make();
    const b = make();
    const loader = counted(clock, (call) => `v${call}`);
    expect(await a.cache.get('k', loader)).toBe('v1');
    await clock.advance(400);
    expect(await b.cache.get('k', loader)).toBe('v1');
    expect(loader.calls).toBe(1);
    await clock.advance(599);
    expect(await b.cache.get('k', loader)).toBe('v1'); // L1 of b: fresh 1 ms more
    expect(b.l2.calls.get).toBe(1);
    await clock.advance(1);
    expect(await b.cache.get('k', loader)).toBe('v2'); // TTL over everywhere: loaded again
    expect(loader.calls).toBe(2);
  });

  it('1,000 concurrent gets of a cold key run the loader once, and all get its value', async () => {
    const { clock, make } = world();
    const { cache } = make();
    const loader = counted(clock, () => 'v', 50);
    const all = Promise.all(Array.from({ length: 1_000 }, () => cache.get('cold', loader)));
    await clock.advance(50);
    expect(new Set(await all)).toEqual(new Set(['v']));
    expect(loader.calls).toBe(1);
  });

  it('a caller that aborts leaves alone; the load aborts only when every caller has left', async () => {
    const { clock, make } = world();
    const { cache } = make({}, false);
    const loader = counted(clock, () => 'v', 100);
    const first = new AbortController();
    const second = new AbortController();
    const leaving = cache.get('k', loader, { signal: first.signal });
    const staying = cache.get('k', loader, { signal: second.signal });
    await clock.advance(10);
    first.abort(new Error('first left'));
    await expect(leaving).rejects.toThrow('first left');
    expect(loader.signals[0]!.aborted).toBe(false);
    await clock.advance(90);
    expect(await staying).toBe('v');

    const third = new AbortController();
    const abandoned = cache.get('other', loader, { signal: third.signal });
    await clock.advance(10);
    third.abort(new Error('everyone left'));
    await expect(abandoned).rejects.toThrow('everyone left');
    expect(loader.signals[1]!.aborted).toBe(true);
  });

  it('an aborted signal rejects at once, even on an L1 hit', async () => {
    const { clock, make } = world();
    const { cache } = make({}, false);
    const loader = counted(clock, () => 'v');
    await cache.get('k', loader);
    const aborted = AbortSignal.abort(new Error('gone'));
    await expect(cache.get('k', loader, { signal: aborted })).rejects.toThrow('gone');
    await expect(cache.get('cold', loader, { signal: aborted })).rejects.toThrow('gone');
    expect(loader.calls).toBe(1);
  });

  it('a get’s own ttlMs counts for its load', async () => {
    const { clock, make } = world();
    const { cache } = make({}, false);
    const loader = counted(clock, (call) => call);
    await cache.get('k', loader, { ttlMs: 100 });
    await clock.advance(100);
    expect(await cache.get('k', loader)).toBe(2);
  });
});

describe('readThroughCache: a failing L2 never breaks a read', () => {
  it('L2 errors count as misses, are reported, and a breaker stops calling L2 for a while', async () => {
    const { clock, make } = world();
    const { cache, l2, errors } = make({ remoteFailureThreshold: 3, remoteResetTimeoutMs: 5_000 });
    l2.mode = 'fail';
    const loader = counted(clock, (call) => `v${call}`);
    for (let i = 0; i < 3; i++) {
      await cache.delete('k').catch(() => {}); // an explicit write rejects; a read never does
      expect(await cache.get('k', loader)).toBe(`v${loader.calls}`);
    }
    expect(errors.length).toBeGreaterThanOrEqual(3);
    expect(errors[0]).toMatchObject({ policy: 'cache', layer: 'remote', key: 'k' });
    const before = { ...l2.calls };
    await cache.delete('k').catch(() => {});
    expect(await cache.get('k', loader)).toBe(`v${loader.calls}`);
    expect(l2.calls).toEqual(before); // the breaker is open: L2 was not called
    await clock.advance(5_000);
    l2.mode = 'ok';
    await cache.delete('k'); // the probe: L2 answers again
    expect(await cache.get('k', loader)).toBe(`v${loader.calls}`);
    expect(l2.calls.set).toBeGreaterThan(before.set ?? 0);
  });

  it('an explicit set, delete or clear rejects when L2 fails, after L1 was updated', async () => {
    const { clock, make } = world();
    const { cache, l2 } = make();
    const loader = counted(clock, () => 'loaded');
    l2.mode = 'fail';
    await expect(cache.set('k', 'set')).rejects.toThrow('fake remote layer is down');
    expect(await cache.get('k', loader)).toBe('set');
    await expect(cache.delete('k')).rejects.toThrow('fake remote layer is down');
    await expect(cache.clear()).rejects.toThrow('fake remote layer is down');
    expect(await cache.get('k', loader)).toBe('loaded');
  });

  it('an L2 value this cache cannot decode is a reported miss', async () => {
    const { clock, server, make } = world();
    const { cache, errors } = make();
    server.entries.set('default\u00000\u0000k', {
      payload: 'garbage',
      graceMs: 0,
      endsAt: clock.now() + 1_000,
    });
    expect(
      await cache.get(
        'k',
        counted(clock, () => 'v'),
      ),
    ).toBe('v');
    expect(errors.map((e) => e.operation)).toEqual(['decode']);
  });
});

describe('readThroughCache: grace', () => {
  it('serves the stale value when the loader fails within grace, and leaves the loader alone for graceBackoffMs', async () => {
    const { clock, make } = world();
    const { cache } = make({ graceMs: 10_000, graceBackoffMs: 2_000 });
    let failing = false;
    const loader = counted(clock, (call) => {
      if (failing) throw new Error('db down');
      return `v${call}`;
    });
    expect(await cache.get('k', loader)).toBe('v1');
    await clock.advance(1_000);
    failing = true;
    expect(await cache.get('k', loader)).toBe('v1');
    expect(loader.calls).toBe(2);
    await clock.advance(1_999);
    expect(await cache.get('k', loader)).toBe('v1');
    expect(loader.calls).toBe(2); // backing off
    await clock.advance(1);
    expect(await cache.get('k', loader)).toBe('v1');
    expect(loader.calls).toBe(3);
    failing = false;
    await clock.advance(2_000);
    expect(await cache.get('k', loader)).toBe('v4');
  });

  it('past the grace, or with none, the loader’s error is the answer, and errors are never cached', async () => {
    const { clock, make } = world();
    const { cache } = make({ graceMs: 500 });
    let failing = false;
    const loader = counted(clock, (call) => {
      if (failing) throw new Error(`failed ${call}`);
      return 'v';
    });
    await cache.get('k', loader);
    failing = true;
    await clock.advance(1_500);
    await expect(cache.get('k', loader)).rejects.toThrow('failed 2');
    await expect(cache.get('k', loader)).rejects.toThrow('failed 3');
  });

  it('a stale L2 value serves a fresh process whose load fails', async () => {
    const { clock, make } = world();
    const a = make({ graceMs: 10_000 });
    const b = make({ graceMs: 10_000 });
    await a.cache.get(
      'k',
      counted(clock, () => 'old'),
    );
    await clock.advance(2_000);
    const failing = counted(clock, () => Promise.reject(new Error('down')));
    expect(await b.cache.get('k', failing)).toBe('old');
    expect(failing.calls).toBe(1);
  });
});

describe('readThroughCache: early refresh and jitter', () => {
  it('past earlyRefresh of the TTL a get answers at once and starts one background load', async () => {
    const { clock, make } = world();
    const { cache } = make({ earlyRefresh: 0.8 });
    const gate = deferred<void>();
    const loader = counted(clock, async (call) => {
      if (call > 1) await gate.promise;
      return `v${call}`;
    });
    await cache.get('k', loader);
    await clock.advance(799);
    expect(await cache.get('k', loader)).toBe('v1');
    await clock.advance(0);
    expect(loader.calls).toBe(1);
    await clock.advance(1);
    expect(await Promise.all([cache.get('k', loader), cache.get('k', loader)])).toEqual(['v1', 'v1']);
    await clock.advance(0); // the refresh reads L2 first: its own copy, due too
    expect(loader.calls).toBe(2);
    gate.resolve();
    await clock.advance(0);
    expect(await cache.get('k', loader)).toBe('v2');
    expect(loader.calls).toBe(2);
  });

  it('a failed background refresh keeps the value’s TTL and waits graceBackoffMs before the next', async () => {
    const { clock, make } = world();
    const { cache } = make({ earlyRefresh: 0.5, graceBackoffMs: 100 }, false);
    const loader = counted(clock, (call) => {
      if (call > 1) throw new Error('refresh failed');
      return 'v1';
    });
    await cache.get('k', loader);
    await clock.advance(500);
    expect(await cache.get('k', loader)).toBe('v1');
    await clock.advance(0);
    expect(loader.calls).toBe(2);
    expect(await cache.get('k', loader)).toBe('v1');
    expect(loader.calls).toBe(2); // backing off
    await clock.advance(100);
    expect(await cache.get('k', loader)).toBe('v1');
    await clock.advance(0);
    expect(loader.calls).toBe(3);
    await clock.advance(399);
    expect(await cache.get('k', loader)).toBe('v1'); // still within the original TTL
  });

  it('ttlJitter shortens each TTL by up to its share', async () => {
    const { clock, make } = world();
    const { cache } = make({ ttlJitter: 0.5, random: () => 0.6 }, false);
    const loader = counted(clock, (call) => call);
    await cache.get('k', loader);
    let lived = 0;
    while ((await cache.get('k', loader)) === 1) {
      await clock.advance(10);
      lived += 10;
    }
    expect(lived).toBe(700); // 1,000 less 1,000 × 0.5 × 0.6
  });
});

describe('readThroughCache: keeping every process’s L1 in step', () => {
  it('a set or delete in one instance drops the other’s L1 copy', async () => {
    const { clock, make } = world();
    const a = make();
    const b = make();
    const loader = counted(clock, () => 'loaded');
    await b.cache.get('k', loader);
    await a.cache.set('k', 'set by a');
    await clock.advance(0);
    expect(await b.cache.get('k', loader)).toBe('set by a');
    await a.cache.delete('k');
    await clock.advance(0);
    expect(await b.cache.get('k', loader)).toBe('loaded');
    expect(loader.calls).toBe(2);
    expect(await a.cache.get('k', loader)).toBe('loaded'); // from L2
  });

  it('a read that began before an invalidation returns what it read but does not write it back', async () => {
    const { clock, make } = world();
    const a = make();
    const b = make();
    const slow = deferred<string>();
    const loading = b.cache.get('k', () => slow.promise);
    await clock.advance(0);
    await a.cache.set('k', 'new');
    await clock.advance(0);
    slow.resolve('old');
    expect(await loading).toBe('old');
    expect(await b.cache.get('k', () => 'loader')).toBe('new'); // L1 was not filled with "old"
    expect(await a.cache.get('k', () => 'loader')).toBe('new'); // nor L2
  });

  it('a local set overtakes a load in flight in the same instance', async () => {
    const { clock, make } = world();
    const { cache } = make({}, false);
    const slow = deferred<string>();
    const loading = cache.get('k', () => slow.promise);
    await cache.set('k', 'set');
    slow.resolve('loaded');
    expect(await loading).toBe('loaded');
    expect(
      await cache.get(
        'k',
        counted(clock, () => 'again'),
      ),
    ).toBe('set');
  });

  it('after the subscription breaks and comes back, L1 is flushed (messages may have been lost)', async () => {
    const { clock, make } = world();
    const a = make();
    const b = make();
    await b.cache.get('k', () => 'v1');
    const restore = b.l2.breakSubscription();
    await a.cache.set('k', 'v2');
    await clock.advance(0);
    expect(await b.cache.get('k', () => 'loader')).toBe('v1'); // the message was lost
    restore();
    expect(await b.cache.get('k', () => 'loader')).toBe('v2');
  });

  it('clear(namespace) bumps the version: every instance drops its L1, and L2’s old keys are out of reach', async () => {
    const { clock, make } = world();
    const a = make();
    const b = make();
    const other = make({ namespace: 'other' });
    const loader = counted(clock, (call) => `v${call}`);
    await a.cache.get('k', loader);
    await b.cache.get('k', loader);
    await other.cache.get('k', loader);
    expect(loader.calls).toBe(2);
    await a.cache.clear();
    await clock.advance(0);
    expect(await b.cache.get('k', loader)).toBe('v3');
    expect(await a.cache.get('k', loader)).toBe('v3'); // from L2, under the new version
    expect(await other.cache.get('k', loader)).toBe('v2'); // another namespace
    await b.cache.clear('other');
    await clock.advance(0);
    expect(await other.cache.get('k', loader)).toBe('v4');
    expect(loader.calls).toBe(4);
  });

  it('a clear elsewhere while a version read is in flight: that read serves its own call, the next access reads the version again', async () => {
    const { clock, make } = world();
    const a = make();
    const b = make();
    const release = b.l2.holdReply('version');
    const reading = b.cache.get('k', () => 'loaded by b');
    await clock.advance(0);
    expect(b.l2.calls.version).toBe(1); // read 0 on the server; b hears of it only on release
    await a.cache.clear(); // version 1
    await a.cache.set('k', 'set by a'); // under version 1
    await clock.advance(0); // b hears of both
    release();
    expect(await reading).toBe('loaded by b'); // under version 0, as it began
    expect(await b.cache.get('k', () => 'loader')).toBe('set by a'); // version 0 was not kept
    expect(b.l2.calls.version).toBe(2);
    expect(await b.cache.get('other', () => 'loaded')).toBe('loaded');
    expect(b.l2.calls.version).toBe(2); // version 1 was kept
  });

  it('a reset while a version read is in flight: that read is not kept either', async () => {
    const { clock, make } = world();
    const a = make();
    const b = make();
    const release = b.l2.holdReply('version');
    const reading = b.cache.get('k', () => 'loaded by b');
    await clock.advance(0);
    const restore = b.l2.breakSubscription();
    await a.cache.clear(); // b never hears of it
    await a.cache.set('k', 'set by a');
    await clock.advance(0);
    restore(); // messages may have been lost: b forgets its version
    release();
    expect(await reading).toBe('loaded by b');
    expect(await b.cache.get('k', () => 'loader')).toBe('set by a');
    expect(b.l2.calls.version).toBe(2);
  });

  it('a clear of this namespace keeps its new version, unless another process cleared it meanwhile', async () => {
    const { clock, make } = world();
    const a = make();
    const b = make();
    await b.cache.clear(); // version 1, kept: no version read
    await b.cache.set('k', 'v1');
    expect(b.l2.calls.version).toBeUndefined();
    const release = b.l2.holdReply('bumpVersion');
    const clearing = b.cache.clear(); // version 2 on the server; b hears of it only on release
    await clock.advance(0);
    await a.cache.clear(); // version 3
    await a.cache.set('k', 'set by a');
    await clock.advance(0);
    release();
    await clearing;
    expect(await b.cache.get('k', () => 'loader')).toBe('set by a'); // version 2 was not kept
    expect(b.l2.calls.version).toBe(1);
  });

  it('close() stops listening: later messages no longer reach this instance', async () => {
    const { clock, make } = world();
    const a = make();
    const b = make();
    await b.cache.get('k', () => 'v1');
    b.cache.close();
    await a.cache.set('k', 'v2');
    await clock.advance(0);
    expect(await b.cache.get('k', () => 'loader')).toBe('v1');
  });
});

describe('readThroughCache: fleet-wide stampede protection', () => {
  it('of two processes missing one key, only the one that claims it loads; the other waits for L2', async () => {
    const { clock, make } = world();
    const a = make({ fleetLoadWaitMs: 1_000 });
    const b = make({ fleetLoadWaitMs: 1_000 });
    const loader = counted(clock, () => 'v', 200);
    const both = Promise.all([a.cache.get('k', loader), b.cache.get('k', loader)]);
    await clock.advance(400);
    expect(await both).toEqual(['v', 'v']);
    expect(loader.calls).toBe(1);
  });

  it('a waiter loads itself once fleetLoadWaitMs has passed', async () => {
    const { clock, make } = world();
    const a = make({ fleetLoadWaitMs: 100 });
    const b = make({ fleetLoadWaitMs: 100 });
    const loader = counted(clock, (call) => `v${call}`, 1_000);
    const both = Promise.all([a.cache.get('k', loader), b.cache.get('k', loader)]);
    await clock.advance(1_100);
    expect(await both).toEqual(['v1', 'v2']);
    expect(loader.calls).toBe(2);
  });

  it('without fleetLoadWaitMs each process loads', async () => {
    const { clock, make } = world();
    const a = make();
    const b = make();
    const loader = counted(clock, () => 'v', 200);
    const both = Promise.all([a.cache.get('k', loader), b.cache.get('k', loader)]);
    await clock.advance(200);
    await both;
    expect(loader.calls).toBe(2);
  });
});

describe('readThroughCache: values', () => {
  it('undefined is not cached unless cacheNotFound; null is a value', async () => {
    const { clock, make } = world();
    const plain = make({}, true);
    const negative = make({ cacheNotFound: true, namespace: 'negative' });
    const notFound = counted(clock, () => undefined);
    expect(await plain.cache.get('k', notFound)).toBeUndefined();
    expect(await plain.cache.get('k', notFound)).toBeUndefined();
    expect(notFound.calls).toBe(2);
    expect(await negative.cache.get('k', notFound)).toBeUndefined();
    expect(await negative.cache.get('k', notFound)).toBeUndefined();
    expect(notFound.calls).toBe(3);
    const other = make({ cacheNotFound: true, namespace: 'negative' });
    expect(await other.cache.get('k', notFound)).toBeUndefined(); // from L2
    expect(notFound.calls).toBe(3);
    const nil = counted(clock, () => null);
    await plain.cache.get('null', nil);
    expect(await plain.cache.get('null', nil)).toBeNull();
    expect(nil.calls).toBe(1);
  });

  it('freeze deep-freezes what L1 keeps; without it the value stays as it was', async () => {
    const { clock, make } = world();
    const frozen = make({ freeze: true }, false);
    const plain = make({}, false);
    const value = await frozen.cache.get('k', () => ({ a: { b: [1] }, none: null }));
    expect(Object.isFrozen(value) && Object.isFrozen(value.a) && Object.isFrozen(value.a.b)).toBe(true);
    const cyclic: { self?: unknown } = {};
    cyclic.self = cyclic;
    expect(await frozen.cache.get('cyclic', () => cyclic)).toBe(cyclic);
    const open = await plain.cache.get('k', () => ({ a: 1 }));
    expect(Object.isFrozen(open)).toBe(false);
    await clock.advance(0);
  });

  it('writes L2 with the serializer given', async () => {
    const { server, make } = world();
    const { cache } = make({
      serializer: { serialize: (v) => `<${String(v)}>`, deserialize: (t) => t.slice(1, -1) },
    });
    await cache.set('k', 'x');
    expect([...server.entries.values()][0]?.payload).toBe('v<x>');
  });
});

describe('readThroughCache: bad input', () => {
  const layer = memoryLayer({ maxEntries: 10 });
  it.each([
    [{ layers: [], ttlMs: 1 }, /"layers"/],
    [{ layers: [layer, layer], ttlMs: 1 }, /"layers"/],
    [{ layers: [layer] }, /"ttlMs"/],
    [{ layers: [layer], ttlMs: 1, earlyRefresh: 1 }, /"earlyRefresh"/],
    [{ layers: [layer], ttlMs: 1, ttlJitter: 1 }, /"ttlJitter"/],
    [{ layers: [layer], ttlMs: 1, namespace: 'a\u0000b' }, /"namespace"/],
    [{ layers: [layer], ttlMs: 1, serializer: {} }, /"serializer"/],
    [{ layers: [layer], ttlMs: 1, fleetLoadWaitMs: 100 }, /needs a remote layer/],
    [{ layers: [layer], ttlMs: 1, ttl: 5 }, /unknown option "ttl" in readThroughCache options/],
    [{ layers: 'x', ttlMs: 1 }, /"layers"/],
    [{ layers: [undefined], ttlMs: 1 }, /"layers"/],
    [{ layers: [new FakeRemote(new FakeClock()).layer()], ttlMs: 1 }, /"layers"/],
    [{ layers: [layer, new FakeRemote(new FakeClock()).layer(), layer], ttlMs: 1 }, /"layers"/],
    [{ layers: [layer, {}], ttlMs: 1 }, /"layers"/],
    [{ layers: [layer, undefined], ttlMs: 1 }, /"layers"/],
    [{ layers: [layer], ttlMs: 1, ttlJitter: -0.1 }, /"ttlJitter"/],
    [{ layers: [layer], ttlMs: 1, ttlJitter: '0.5' }, /"ttlJitter"/],
    [{ layers: [layer], ttlMs: 1, serializer: null }, /"serializer"/],
    [{ layers: [layer], ttlMs: 1, serializer: { serialize: String } }, /"serializer"/],
    [{ layers: [layer], ttlMs: 1, serializer: { deserialize: String } }, /"serializer"/],
  ])('options %# are a TypeError', (options, message) => {
    expect(() => readThroughCache(options as never)).toThrow(TypeError);
    expect(() => readThroughCache(options as never)).toThrow(message);
  });

  it('a jitter of 0 and just below 1 are fine', () => {
    expect(() => readThroughCache({ layers: [layer], ttlMs: 1, ttlJitter: 0 })).not.toThrow();
    expect(() => readThroughCache({ layers: [layer], ttlMs: 1, ttlJitter: 0.99 })).not.toThrow();
  });

  it('a key that is not a string, a loader that is not a function or bad get options reject with a TypeError', async () => {
    const cache = readThroughCache({ layers: [memoryLayer({ maxEntries: 10 })], ttlMs: 100 });
    await expect(cache.get(5 as never, () => 1)).rejects.toThrow(/"key" to be a string/);
    await expect(cache.get('k', 'loader' as never)).rejects.toThrow(/"loader" to be a function/);
    await expect(cache.get('k', () => 1, { ttl: 5 } as never)).rejects.toThrow(
      /unknown option "ttl" in get options/,
    );
    await expect(cache.set('k', 1, { ttl: 5 } as never)).rejects.toThrow(
      /unknown option "ttl" in set options/,
    );
    await expect(cache.set(null as never, 1)).rejects.toThrow(/"key"/);
    await expect(cache.delete(undefined as never)).rejects.toThrow(/"key"/);
    await expect(cache.clear('')).rejects.toThrow(/"namespace"/);
    expect(await cache.get('', () => 'the empty key is a key')).toBe('the empty key is a key');
  });
});

describe('readThroughCache: edges', () => {
  it('a memory-only cache sets, deletes, clears and closes without L2', async () => {
    const { clock, make } = world();
    const { cache } = make({}, false);
    const loader = counted(clock, (call) => `v${call}`);
    await cache.set('k', 'set');
    expect(await cache.get('k', loader)).toBe('set');
    await cache.delete('k');
    expect(await cache.get('k', loader)).toBe('v1');
    await cache.clear();
    expect(await cache.get('k', loader)).toBe('v2');
    cache.close();
  });

  it('clear() drops only its namespace from a memory layer shared by several caches', async () => {
    const clock = new FakeClock(1_000_000);
    const shared = memoryLayer({ maxEntries: 10 });
    const a = readThroughCache({ layers: [shared], ttlMs: 1_000, clock, namespace: 'a' });
    const b = readThroughCache({ layers: [shared], ttlMs: 1_000, clock, namespace: 'b' });
    await a.get('k', () => 'a1');
    await b.get('k', () => 'b1');
    await a.clear();
    expect(await a.get('k', () => 'a2')).toBe('a2');
    expect(await b.get('k', () => 'b2')).toBe('b1');
    await expect(a.clear(5 as never)).rejects.toThrow(/"namespace"/);
    await expect(a.clear('x\u0000y')).rejects.toThrow(/"namespace"/);
  });

  it('a clear of its own namespace overtakes a load in flight; a clear of another does not', async () => {
    const { clock, make } = world();
    const { cache } = make({}, false);
    const first = deferred<string>();
    const loading = cache.get('k', () => first.promise);
    await cache.clear('other');
    first.resolve('kept');
    expect(await loading).toBe('kept');
    expect(
      await cache.get(
        'k',
        counted(clock, () => 'loader'),
      ),
    ).toBe('kept');
    const second = deferred<string>();
    const overtaken = cache.get('j', () => second.promise);
    await cache.clear();
    second.resolve('old');
    expect(await overtaken).toBe('old');
    expect(await cache.get('j', () => 'loaded after the clear')).toBe('loaded after the clear');
  });

  it('clear(another namespace) leaves this cache’s version as it was', async () => {
    const { make } = world();
    const a = make();
    const b = make();
    await a.cache.clear('other');
    await b.cache.set('j', 'from b');
    expect(await a.cache.get('j', () => 'loader')).toBe('from b');
  });

  it('onLayerError subscribes and unsubscribes; a plain miss reports nothing; an open breaker refuses without reporting', async () => {
    const { clock, make } = world();
    const { cache, l2, errors } = make({ remoteFailureThreshold: 1 });
    const seen: string[] = [];
    const dispose = cache.onLayerError((event) => seen.push(event.operation));
    await cache.get('miss', () => 'v');
    expect(errors).toEqual([]);
    l2.mode = 'fail';
    await cache.get('k', () => 'v');
    expect(seen).toEqual(['get']); // the breaker opened: the fill's write is refused, unreported
    await cache.get('j', () => 'v');
    expect(errors.map((e) => e.operation)).toEqual(['get']);
    dispose();
    await clock.advance(10_000);
    await cache.get('i', () => 'v');
    expect(seen).toEqual(['get']);
    expect(errors.length).toBe(2);
  });

  it('each failing L2 operation is reported under its own name', async () => {
    const { clock, make } = world();
    const { cache, l2, errors } = make({ remoteFailureThreshold: 100, fleetLoadWaitMs: 100 });
    await cache.get('warm', () => 'v'); // the version is known
    l2.mode = 'fail';
    await cache.get(
      'k',
      counted(clock, () => 'v'),
    );
    await cache.set('k', 'v').catch(() => {});
    await cache.delete('k').catch(() => {});
    await cache.clear().catch(() => {});
    // The fill: get, claim (L2 cannot tell: load here), set, then giving the claim back; then the writes.
    expect(errors.map((e) => e.operation)).toEqual([
      'get',
      'claim',
      'set',
      'claim',
      'set',
      'delete',
      'clear',
    ]);
    expect(errors.at(-1)?.key).toBe('default');
  });

  it('its own messages are not news: a set keeps its own L1 copy', async () => {
    const { clock, make } = world();
    const { cache, l2 } = make();
    await cache.set('k', 'mine');
    await clock.advance(0);
    const reads = l2.calls.get ?? 0;
    expect(await cache.get('k', () => 'loader')).toBe('mine');
    expect(l2.calls.get ?? 0).toBe(reads);
  });

  it('messages of another namespace, or of a kind it does not know, leave this cache alone', async () => {
    const { clock, server, make } = world();
    const a = make({ namespace: 'a' });
    const b = make({ namespace: 'b' });
    await a.cache.get('k', () => 'a1');
    const reads = a.l2.calls.get ?? 0;
    await b.cache.set('k', 'b1');
    await b.cache.clear();
    server.publish(['someone', 'x', 'a', 'k'].join('\u0000'));
    await clock.advance(0);
    expect(await a.cache.get('k', () => 'loader')).toBe('a1');
    expect(a.l2.calls.get ?? 0).toBe(reads);
  });

  it('concurrent misses read the namespace’s version once; a failed read is tried again', async () => {
    const { server, make } = world();
    const { cache, l2 } = make();
    await Promise.all([cache.get('a', () => 1), cache.get('b', () => 2)]);
    expect(l2.calls.version).toBe(1);
    const other = make();
    other.l2.mode = 'fail';
    await other.cache.get('c', () => 3);
    other.l2.mode = 'ok';
    await other.cache.get('d', () => 4);
    expect(other.l2.calls.version).toBeGreaterThan(1);
    expect(server.entries.has('default\u00000\u0000d')).toBe(true); // under the version read again
  });

  it('a payload without its marker is a reported decode error, even if it parses', async () => {
    const { clock, server, make } = world();
    const { cache, errors } = make();
    server.entries.set('default\u00000\u0000k', { payload: '1234', graceMs: 0, endsAt: clock.now() + 1_000 });
    expect(await cache.get('k', () => 'loaded')).toBe('loaded');
    expect((errors[0]!.error as Error).message).toBe('not a payload of this cache: 1234');
    server.entries.set('default\u00000\u0000long', {
      payload: 'x'.repeat(100),
      graceMs: 0,
      endsAt: clock.now() + 1_000,
    });
    await cache.get('long', () => 'loaded');
    expect((errors[1]!.error as Error).message).toBe(`not a payload of this cache: ${'x'.repeat(40)}`);
  });

  it('an L2 read overtaken by an invalidation is not copied into L1', async () => {
    const { clock, make } = world();
    const a = make();
    const b = make();
    await a.cache.set('k', 'old');
    await b.cache.get('warm', () => 'v'); // b knows the version
    const release = b.l2.holdReply('get');
    const reading = b.cache.get('k', () => 'loader');
    await clock.advance(0);
    await a.cache.set('k', 'new');
    await clock.advance(0);
    release();
    expect(await reading).toBe('old');
    expect(await b.cache.get('k', () => 'loader')).toBe('new');
  });

  it('between a stale L1 copy and a stale L2 entry, the one that lives longer is served', async () => {
    const { clock, make } = world();
    const a = make({ graceMs: 10_000 });
    const b = make({ graceMs: 10_000 });
    const failing = () => Promise.reject(new Error('down'));
    // L2 newer than b's L1 copy: b missed the message.
    await b.cache.get('k', () => 'b old');
    const restore = b.l2.breakSubscription();
    await clock.advance(500);
    await a.cache.set('k', 'a newer');
    await clock.advance(1_100);
    expect(await b.cache.get('k', failing)).toBe('a newer');
    restore();
    // b's L1 copy outlives L2's entry (written later with a short TTL, message lost).
    await b.cache.set('j', 'b long');
    const again = b.l2.breakSubscription();
    await clock.advance(100);
    await a.cache.set('j', 'a short', { ttlMs: 10 });
    await clock.advance(1_000);
    expect(await b.cache.get('j', failing)).toBe('b long');
    again();
  });

  it('a load that fails after a set overtook it does not put the stale value back', async () => {
    const { clock, make } = world();
    const { cache } = make({ graceMs: 10_000 }, false);
    await cache.get('k', () => 'v1');
    await clock.advance(1_000);
    const failing = deferred<string>();
    const reading = cache.get('k', () => failing.promise);
    await cache.set('k', 'set meanwhile');
    failing.reject(new Error('down'));
    expect(await reading).toBe('v1');
    expect(await cache.get('k', () => 'loader')).toBe('set meanwhile');
  });

  it('grace from L1 alone: the entry lives for its TTL and its grace', async () => {
    const { clock, make } = world();
    const { cache } = make({ graceMs: 500 }, false);
    await cache.get('k', () => 'v1');
    await clock.advance(1_499);
    expect(await cache.get('k', () => Promise.reject(new Error('down')))).toBe('v1');
    await clock.advance(600);
    await expect(cache.get('k', () => Promise.reject(new Error('gone')))).rejects.toThrow('gone');
  });

  it('a value taken from L2 is refreshed early like one loaded here', async () => {
    const { clock, make } = world();
    const a = make({ earlyRefresh: 0.5 });
    const b = make({ earlyRefresh: 0.5 });
    await a.cache.get('k', () => 'v1');
    await clock.advance(100);
    const loader = counted(clock, () => 'v2');
    expect(await b.cache.get('k', loader)).toBe('v1');
    await clock.advance(399);
    await b.cache.get('k', loader);
    await clock.advance(0);
    expect(loader.calls).toBe(0);
    await clock.advance(1);
    expect(await b.cache.get('k', loader)).toBe('v1');
    await clock.advance(0);
    expect(loader.calls).toBe(1);
  });

  it('before earlyRefresh of the TTL nothing refreshes; a refresh never holds the caller', async () => {
    const { clock, make } = world();
    const { cache } = make({ earlyRefresh: 0.8, graceBackoffMs: 100 }, false);
    const loader = counted(
      clock,
      (call) => (call === 1 ? 'v1' : Promise.reject(new Error('refresh failed'))),
      50,
    );
    const first = cache.get('k', loader);
    await clock.advance(50);
    await first;
    await clock.advance(799);
    await cache.get('k', loader);
    await clock.advance(0);
    expect(loader.calls).toBe(1);
    await clock.advance(1);
    let answered = false;
    void cache.get('k', loader).then(() => (answered = true));
    await clock.advance(0);
    expect(answered).toBe(true); // the refresh runs in the background
    expect(loader.calls).toBe(2);
    await clock.advance(170); // the refresh failed at 900 ms; its back-off ended at 1,000, the TTL ends at 1,050
    answered = false;
    void cache.get('k', loader).then(() => (answered = true));
    await clock.advance(0);
    expect(answered).toBe(true); // still fresh: the TTL was kept
  });
});

describe('readThroughCache: fleet-wide details', () => {
  it('the claim is given back once the value is written', async () => {
    const { clock, server, make } = world();
    const { cache, l2 } = make({ fleetLoadWaitMs: 1_000 });
    await cache.get(
      'k',
      counted(clock, () => 'v'),
    );
    await clock.advance(0);
    expect(l2.calls.releaseLoad).toBe(1);
    expect(server.claims.size).toBe(0);
  });

  it('without fleetLoadWaitMs no claim is made', async () => {
    const { clock, make } = world();
    const { cache, l2 } = make();
    await cache.get(
      'k',
      counted(clock, () => 'v'),
    );
    expect(l2.calls.claimLoad).toBeUndefined();
  });

  it('a waiter polls L2 at most every 200 ms, and takes no stale entry for the value', async () => {
    const { clock, server, make } = world();
    const a = make({ fleetLoadWaitMs: 5_000, graceMs: 10_000 });
    const b = make({ fleetLoadWaitMs: 5_000, graceMs: 10_000 });
    await a.cache.get('k', () => 'stale');
    await clock.advance(2_000); // stale in L2, within grace
    const slow = counted(clock, () => 'fresh', 1_000);
    const claimant = a.cache.get('k', slow);
    await clock.advance(0);
    expect(server.claims.size).toBe(1);
    let seen: unknown;
    void b.cache.get('k', slow).then((value) => (seen = value));
    await clock.advance(1_000); // the claimant writes at 1,000 ms
    expect(seen).toBeUndefined();
    await clock.advance(110); // polls at 10, 30, 70, 150, 310, 510, 710, 910, 1,110 ms
    expect(seen).toBe('fresh');
    expect(await claimant).toBe('fresh');
    expect(slow.calls).toBe(1);
  });
});
