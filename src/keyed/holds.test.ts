/**
 * The rule that matters: an entry with calls in flight, or whose circuit is not closed, is never
 * evicted. The registry then grows past `maxKeys` and says so, and shrinks back on the first
 * insertion after its entries become evictable. Every way a call ends releases its hold.
 */
import { describe, expect, it } from 'vitest';
import { deferred } from '../../test/support/deferred.js';
import { bulkhead } from '../admission/bulkhead.js';
import { concurrencyLimit } from '../admission/concurrency-limit.js';
import { circuitBreaker } from '../circuit-breaker/circuit-breaker.js';
import { smartResilience } from '../circuit-breaker/smart.js';
import { ResilienceError } from '../core/errors.js';
import type { Policy } from '../core/policy.js';
import { constant } from '../retry/backoff.js';
import { FakeClock } from '../testing/fake-clock.js';
import { type KeyedPolicies, keyed } from './keyed.js';
import type { KeyedOverflowEvent } from './options.js';

const down = () => Promise.reject(new ResilienceError('down', { code: 'E_DOWN', kind: 'unavailable' }));
const ignore = () => {};

/** Inserts `count` new keys: the flood that would evict everything evictable. */
function flood<P extends Policy<unknown>>(registry: KeyedPolicies<P>, count = 100, prefix = 'new'): void {
  for (let i = 0; i < count; i++) registry.get(`${prefix}-${i}`);
}

describe('calls in flight hold their entry', () => {
  it('a held key survives a flood of new keys; the others are evicted as usual', async () => {
    const registry = keyed(() => concurrencyLimit(10), { maxKeys: 2 });
    const gate = deferred<string>();
    const call = registry.execute('a', () => gate.promise);
    const policy = registry.peek('a');
    flood(registry, 1_000);
    expect(registry.peek('a')).toBe(policy);
    expect(registry.size).toBe(2);
    gate.resolve('done');
    expect(await call).toBe('done');
    flood(registry, 2, 'later');
    expect(registry.peek('a')).toBeUndefined();
  });

  it('when every entry is held the bound is exceeded and reported, never broken silently', async () => {
    const overflows: KeyedOverflowEvent[] = [];
    const registry = keyed(() => concurrencyLimit(10), { maxKeys: 1, name: 'hosts' });
    registry.onOverflow((event) => overflows.push(event));
    const gate = deferred<void>();
    const call = registry.execute('a', () => gate.promise);
    registry.get('b');
    expect(overflows).toEqual([{ policy: 'hosts', key: 'b', size: 2, maxKeys: 1 }]);
    flood(registry, 50);
    // The held one and the newest: everything else was evicted.
    expect([registry.size, overflows.length]).toEqual([2, 51]);
    gate.resolve();
    await call;
    // Its last call settled while the registry was over its bound: it went at once.
    expect([registry.keys(), overflows.length]).toEqual([['new-49'], 51]);
    registry.get('c');
    expect([registry.keys(), overflows.length]).toEqual([['c'], 51]);
  });

  it('shrinks back on the next insertion once a circuit that held an entry closes outside a call', async () => {
    const registry = keyed(() => circuitBreaker({ clock: new FakeClock() }), { maxKeys: 1 });
    registry.get('a').isolate();
    registry.get('b').isolate();
    registry.get('c');
    expect(registry.size).toBe(3);
    registry.get('a').reset();
    registry.get('b').reset();
    expect(registry.size).toBe(3); // a pure read of state: nothing is told of the reset
    registry.get('d');
    expect(registry.keys()).toEqual(['d']);
  });

  it('counts every call: the entry is held until the last one settles', async () => {
    const registry = keyed(() => concurrencyLimit(10), { maxKeys: 1 });
    const first = deferred<void>();
    const second = deferred<void>();
    const calls = [registry.execute('a', () => first.promise), registry.execute('a', () => second.promise)];
    first.resolve();
    await calls[0];
    flood(registry, 3);
    expect(registry.peek('a')).toBeDefined();
    second.resolve();
    await calls[1];
    flood(registry, 1, 'after');
    expect(registry.keys()).toEqual(['after-0']);
  });

  it('an abort of an in-flight call releases its hold', async () => {
    const registry = keyed(() => concurrencyLimit(10), { maxKeys: 1 });
    const controller = new AbortController();
    const call = registry.execute(
      'a',
      ({ signal }) =>
        new Promise<never>((_, reject) => signal.addEventListener('abort', () => reject(signal.reason))),
      { signal: controller.signal },
    );
    flood(registry, 3);
    expect(registry.peek('a')).toBeDefined();
    const reason = new Error('client left');
    controller.abort(reason);
    await expect(call).rejects.toBe(reason);
    flood(registry, 1, 'after');
    expect(registry.keys()).toEqual(['after-0']);
  });

  it('an abort of a call waiting in a bulkhead queue releases its hold at once', async () => {
    const registry = keyed(() => bulkhead({ maxConcurrent: 1, maxQueue: 1 }), { maxKeys: 1 });
    const running = deferred<void>();
    const first = registry.execute('a', () => running.promise);
    const controller = new AbortController();
    const queued = registry.execute('a', () => 'never runs', { signal: controller.signal });
    controller.abort(new Error('gave up'));
    await expect(queued).rejects.toThrow('gave up');
    flood(registry, 3);
    expect(registry.peek('a')).toBeDefined(); // the running call still holds it
    running.resolve();
    await first;
    flood(registry, 1, 'after');
    expect(registry.keys()).toEqual(['after-0']);
  });

  it('an operation that throws, synchronously or not, and a refused call release their hold', async () => {
    const registry = keyed(() => concurrencyLimit(1), { maxKeys: 1 });
    await expect(
      registry.execute('a', () => {
        throw new Error('sync');
      }),
    ).rejects.toThrow('sync');
    await expect(registry.execute('a', () => Promise.reject(new Error('async')))).rejects.toThrow('async');
    const holder = deferred<void>();
    const held = registry.execute('a', () => holder.promise);
    await expect(registry.execute('a', () => 'refused')).rejects.toThrow(/concurrency limit/i);
    holder.resolve();
    await held;
    flood(registry, 1);
    expect(registry.keys()).toEqual(['new-0']);
  });

  it('a foreign policy whose execute throws synchronously still releases', async () => {
    const broken: Policy<unknown> = {
      execute: () => {
        throw new Error('broken policy');
      },
    };
    const registry = keyed(() => broken, { maxKeys: 1 });
    await expect(registry.execute('a', () => 1)).rejects.toThrow('broken policy');
    flood(registry, 1);
    expect(registry.keys()).toEqual(['new-0']);
  });
});

describe('a circuit that is not closed holds its entry', () => {
  it('keeps an open breaker (with its state), then a half-open one, and lets it go once closed', async () => {
    const clock = new FakeClock();
    const registry = keyed(() => circuitBreaker({ failureThreshold: 1, resetTimeoutMs: 1_000, clock }), {
      maxKeys: 1,
    });
    await registry.execute('a', down).catch(ignore);
    const breaker = registry.peek('a')!;
    expect(breaker.state).toBe('open');
    flood(registry);
    expect(registry.peek('a')).toBe(breaker);
    await expect(registry.execute('a', () => 'x')).rejects.toThrow(/circuit open/);

    await clock.advance(1_000);
    const probe = deferred<string>();
    const probing = registry.execute('a', () => probe.promise);
    expect(breaker.state).toBe('half-open');
    flood(registry, 10, 'probe');
    probe.resolve('ok');
    expect(await probing).toBe('ok');
    expect(breaker.state).toBe('closed');
    flood(registry, 1, 'after');
    expect(registry.peek('a')).toBeUndefined();
  });

  it('keeps a half-open breaker whose probe was canceled (no call in flight)', async () => {
    const clock = new FakeClock();
    const registry = keyed(() => circuitBreaker({ failureThreshold: 1, resetTimeoutMs: 100, clock }), {
      maxKeys: 1,
    });
    await registry.execute('a', down).catch(ignore);
    await clock.advance(100);
    const controller = new AbortController();
    const probe = registry.execute(
      'a',
      ({ signal }) =>
        new Promise((_, reject) => signal.addEventListener('abort', () => reject(signal.reason))),
      { signal: controller.signal },
    );
    controller.abort(new Error('caller left'));
    await probe.catch(ignore);
    expect(registry.peek('a')!.state).toBe('half-open');
    flood(registry);
    expect(registry.peek('a')).toBeDefined();
  });

  it('keeps an isolated breaker until reset()', () => {
    const registry = keyed(() => circuitBreaker({ clock: new FakeClock() }), { maxKeys: 1 });
    registry.get('a').isolate();
    flood(registry);
    expect(registry.peek('a')?.state).toBe('isolated');
    registry.get('a').reset();
    flood(registry, 1, 'after');
    expect(registry.keys()).toEqual(['after-0']);
  });

  it("reads smartResilience()'s breaker too", async () => {
    const clock = new FakeClock();
    const registry = keyed(
      () => smartResilience({ maxAttempts: 1, failureThreshold: 1, backoff: constant(1), clock }),
      { maxKeys: 1 },
    );
    await registry.execute('a', down).catch(ignore);
    expect(registry.peek('a')!.breaker.state).toBe('open');
    flood(registry);
    expect(registry.peek('a')).toBeDefined();
  });

  it('a policy whose breaker is null (a composite built without one) is not held by it', () => {
    const registry = keyed(() => Object.assign(concurrencyLimit(1), { breaker: null }), { maxKeys: 1 });
    registry.get('a');
    flood(registry, 1);
    expect(registry.keys()).toEqual(['new-0']);
  });
});

describe('the keep option', () => {
  it('holds an idle entry while it returns true, and is asked only for the entry next in line', () => {
    const kept = new Set(['a']);
    const asked: string[] = [];
    const registry = keyed(() => concurrencyLimit(1), {
      maxKeys: 1,
      keep: (_, key) => {
        asked.push(key);
        return kept.has(key);
      },
    });
    registry.get('a');
    registry.get('b');
    expect([registry.keys(), asked]).toEqual([['a', 'b'], ['a']]);
    kept.delete('a');
    registry.get('c');
    expect(registry.keys()).toEqual(['c']);
  });

  it('a keep that throws counts as true: the entry is kept rather than its state lost', () => {
    const registry = keyed(() => concurrencyLimit(1), {
      maxKeys: 1,
      keep: () => {
        throw new Error('broken predicate');
      },
    });
    registry.get('a');
    registry.get('b');
    expect(registry.keys()).toEqual(['a', 'b']);
  });
});
