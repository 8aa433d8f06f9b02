/**
 * Bad input fails loudly and early, and half-applies nothing: options at construction, keys on
 * every call, and a factory that throws or makes no policy (nothing cached, nothing evicted).
 */
import { describe, expect, it } from 'vitest';
import { concurrencyLimit } from '../admission/concurrency-limit.js';
import type { Policy } from '../core/policy.js';
import { keyed } from './keyed.js';
import type { KeyedOptions } from './options.js';

const limits = () => concurrencyLimit(10);

describe('keyed options', () => {
  it('requires maxKeys: a positive integer, never Infinity', () => {
    const make = (options: unknown) => () => keyed(limits, options as KeyedOptions<Policy<unknown>>);
    expect(make(undefined)).toThrow('expected "maxKeys" to be a positive integer, got undefined');
    expect(make({})).toThrow('expected "maxKeys" to be a positive integer, got undefined');
    for (const bad of [0, -1, 1.5, Number.NaN, Infinity, '10', null]) {
      expect(make({ maxKeys: bad }), String(bad)).toThrow(/expected "maxKeys" to be a positive integer, got/);
    }
  });

  it('refuses an unknown option with the nearest known name', () => {
    const options = { maxKey: 10 } as unknown as KeyedOptions;
    expect(() => keyed(limits, options)).toThrow(
      /unknown option "maxKey" in keyed options; did you mean "maxKeys"\?/,
    );
  });

  it('checks name, keep and the listeners', () => {
    expect(() => keyed(limits, { maxKeys: 1, name: '' })).toThrow(
      'expected "name" to be a non-empty string, got ""',
    );
    const notAFunction = 5 as unknown as () => boolean;
    expect(() => keyed(limits, { maxKeys: 1, keep: notAFunction })).toThrow(
      'expected "keep" to be a function, got 5',
    );
    expect(() => keyed(limits, { maxKeys: 1, onOverflow: notAFunction })).toThrow(
      /"onOverflow" to be a function/,
    );
    expect(() => keyed(limits, { maxKeys: 1, onRemoved: notAFunction })).toThrow(
      /"onRemoved" to be a function/,
    );
  });

  it('refuses a factory that is not a function', () => {
    const factory = 'breaker' as unknown as () => Policy<unknown>;
    expect(() => keyed(factory, { maxKeys: 1 })).toThrow(
      'expected "factory" to be a function, got "breaker"',
    );
  });

  it('reads its defaults and exposes the bound', () => {
    const registry = keyed(limits, { maxKeys: 3 });
    expect([registry.name, registry.maxKeys, registry.size]).toEqual(['keyed', 3, 0]);
    expect(keyed(limits, { maxKeys: 3, name: 'per-host' }).name).toBe('per-host');
  });
});

describe('keys', () => {
  const badKeys: unknown[] = ['', 5, undefined, null, {}];

  it('get, peek, delete and policy throw a TypeError for a key that is not a non-empty string', () => {
    const registry = keyed(limits, { maxKeys: 2 });
    for (const key of badKeys) {
      const k = key as string;
      for (const use of [
        () => registry.get(k),
        () => registry.peek(k),
        () => registry.delete(k),
        () => registry.policy(k),
      ]) {
        expect(use).toThrow(TypeError);
        expect(use).toThrow(/expected "key" to be a non-empty string, got/);
      }
    }
    expect(registry.size).toBe(0);
  });

  it('execute rejects (never throws) for a bad key, and makes no entry', async () => {
    const registry = keyed(limits, { maxKeys: 2 });
    for (const key of badKeys) {
      let ran = false;
      const call = registry.execute(key as string, () => {
        ran = true;
      });
      await expect(call).rejects.toThrow(/expected "key" to be a non-empty string/);
      expect(ran).toBe(false);
    }
    expect(registry.size).toBe(0);
  });

  it('execute rejects a bad operation, bad options or an aborted signal before making an entry', async () => {
    let made = 0;
    const registry = keyed(
      () => {
        made++;
        return limits();
      },
      { maxKeys: 2 },
    );
    const notAnOperation = 'run' as unknown as () => void;
    await expect(registry.execute('a', notAnOperation)).rejects.toThrow(TypeError);
    const notASignal = { signal: { aborted: false } } as unknown as { signal: AbortSignal };
    await expect(registry.execute('a', () => 1, notASignal)).rejects.toThrow(TypeError);
    const reason = new Error('left');
    await expect(registry.execute('a', () => 1, { signal: AbortSignal.abort(reason) })).rejects.toBe(reason);
    expect([made, registry.size]).toEqual([0, 0]);
  });
});

describe('a factory that fails', () => {
  it('throws from get: the error propagates, nothing is cached, and the next use asks again', () => {
    const failure = new Error('no such tenant');
    let calls = 0;
    const registry = keyed(
      () => {
        calls++;
        if (calls === 1) throw failure;
        return limits();
      },
      { maxKeys: 2 },
    );
    expect(() => registry.get('a')).toThrow(failure);
    expect([registry.size, registry.peek('a')]).toEqual([0, undefined]);
    expect(registry.get('a')).toBe(registry.peek('a'));
    expect(calls).toBe(2);
  });

  it('rejects execute with its error, without running the operation', async () => {
    const failure = new Error('factory broke');
    const registry = keyed(
      () => {
        throw failure;
      },
      { maxKeys: 2 },
    );
    let ran = false;
    await expect(
      registry.execute('a', () => {
        ran = true;
      }),
    ).rejects.toBe(failure);
    expect([ran, registry.size]).toEqual([false, 0]);
  });

  it('evicts nothing when the registry is full', () => {
    const removed: string[] = [];
    const registry = keyed(
      (key) => {
        if (key === 'bad') throw new Error('bad key');
        return limits();
      },
      { maxKeys: 2, onRemoved: ({ key }) => removed.push(key) },
    );
    registry.get('a');
    registry.get('b');
    expect(() => registry.get('bad')).toThrow('bad key');
    expect([registry.keys(), removed]).toEqual([['a', 'b'], []]);
  });

  it('a factory result without execute is a TypeError naming the key; nothing cached', () => {
    const registry = keyed(() => ({}) as Policy<unknown>, { maxKeys: 2 });
    expect(() => registry.get('tenant-1')).toThrow(
      'expected "factory("tenant-1")" to be a policy (with execute), got an object',
    );
    expect(registry.size).toBe(0);
  });
});
