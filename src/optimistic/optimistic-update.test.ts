import { describe, expect, expectTypeOf, it, vi } from 'vitest';
import { setListenerErrorHandler } from '../core/events.js';
import { constant } from '../retry/backoff.js';
import { FakeClock } from '../testing/fake-clock.js';
import { seededRandom } from '../testing/seeded-random.js';
import {
  isOptimisticConflictError,
  isOptimisticNotFoundError,
  type OptimisticConflictError,
  type OptimisticNotFoundError,
} from './errors.js';
import { type OptimisticUpdate, optimisticUpdate } from './optimistic-update.js';
import type {
  OptimisticConflictEvent,
  OptimisticContext,
  OptimisticGiveUpEvent,
  OptimisticMutateContext,
  OptimisticUpdateOptions,
  Versioned,
} from './options.js';

/**
 * An in-memory table of versioned records with a compare-and-set `save`, and a hook to play a
 * concurrent writer: `interfere(n)` makes the next `n` saves find the record changed by somebody
 * else (who saves just before them).
 */
class Table<V extends number | string = number> {
  readonly rows = new Map<string, Versioned<number, V>>();
  loads: Array<{ key: string } & OptimisticContext> = [];
  saves: Array<{ key: string; record: Versioned<number, V> } & OptimisticContext> = [];
  private pending = 0;

  constructor(private readonly next: (version: V) => V) {}

  interfere(times: number): void {
    this.pending = times;
  }

  readonly load = async (
    key: string,
    context: OptimisticContext,
  ): Promise<Versioned<number, V> | undefined> => {
    this.loads.push({ key, ...context });
    const row = this.rows.get(key);
    return row === undefined ? undefined : { ...row };
  };

  readonly save = async (
    key: string,
    record: Versioned<number, V>,
    context: OptimisticContext,
  ): Promise<boolean> => {
    this.saves.push({ key, record, ...context });
    const row = this.rows.get(key);
    if (row !== undefined && this.pending > 0) {
      this.pending--;
      this.rows.set(key, { value: row.value + 100, version: this.next(row.version) });
    }
    const current = this.rows.get(key);
    if (current === undefined || current.version !== record.version) return false;
    this.rows.set(key, { value: record.value, version: this.next(record.version) });
    return true;
  };
}

const numbered = () => new Table<number>((v) => v + 1);

/** The call's outcome once the fake clock has moved `ms` (every backoff wait of these tests fits). */
async function settle<T>(clock: FakeClock, promise: Promise<T>, ms = 10_000) {
  const result = promise.then(
    (value) => ({ ok: true as const, value }),
    (error: unknown) => ({ ok: false as const, error }),
  );
  await clock.advance(ms);
  return result;
}

function updater(table: Table, options: Partial<OptimisticUpdateOptions<string, number, number>> = {}) {
  return optimisticUpdate<string, number, number>({
    load: table.load,
    save: table.save,
    mutate: (n) => n + 1,
    ...options,
  });
}

describe('optimisticUpdate', () => {
  it('loads, mutates and saves against the loaded version; resolves the saved value at once, with no timer', async () => {
    const clock = new FakeClock();
    const table = numbered();
    table.rows.set('a', { value: 1, version: 7 });
    const value = await updater(table, { clock }).update('a');
    expect(value).toBe(2);
    expect(table.rows.get('a')).toEqual({ value: 2, version: 8 });
    expect(table.saves.map((s) => s.record)).toEqual([{ value: 2, version: 7 }]);
    expect(clock.pendingTimers).toBe(0);
  });

  it('a conflict reloads and retries after the backoff; mutate sees the fresh value', async () => {
    const clock = new FakeClock();
    const table = numbered();
    table.rows.set('a', { value: 1, version: 1 });
    table.interfere(1); // another writer saves 101 (version 2) just before our first save
    const seen: number[] = [];
    const call = updater(table, {
      clock,
      backoff: constant(50),
      mutate: (n) => {
        seen.push(n);
        return n + 1;
      },
    }).update('a');
    let done = false;
    void call.then(() => (done = true));
    await clock.advance(49);
    expect(done).toBe(false); // waiting the backoff
    expect(table.loads).toHaveLength(1);
    await clock.advance(1);
    expect(await call).toBe(102);
    expect(seen).toEqual([1, 101]);
    expect(table.saves.map((s) => [s.attempt, s.record.version])).toEqual([
      [1, 1],
      [2, 2],
    ]);
    expect(table.rows.get('a')).toEqual({ value: 102, version: 3 });
  });

  it('exhausted: OptimisticConflictError with the attempts, the key and the next wait as retryAfterMs', async () => {
    const clock = new FakeClock();
    const table = numbered();
    table.rows.set('a', { value: 0, version: 0 });
    table.interfere(Infinity);
    const backoff = vi.fn((n: number) => n * 10);
    const conflicts: OptimisticConflictEvent<string>[] = [];
    const giveUps: OptimisticGiveUpEvent<string>[] = [];
    const r = await settle(
      clock,
      updater(table, {
        clock,
        backoff,
        maxAttempts: 3,
        name: 'counters',
        onConflict: (e) => conflicts.push(e),
        onGiveUp: (e) => giveUps.push(e),
      }).update('a'),
    );
    expect(r.ok).toBe(false);
    const error = (r as { error: OptimisticConflictError }).error;
    expect(isOptimisticConflictError(error)).toBe(true);
    expect(error).toMatchObject({ attempts: 3, key: 'a', kind: 'conflict', retryAfterMs: 30 });
    expect(table.loads).toHaveLength(3);
    expect(backoff.mock.calls).toEqual([[1], [2], [3]]);
    expect(conflicts).toEqual([
      { policy: 'counters', key: 'a', attempt: 1, delayMs: 10 },
      { policy: 'counters', key: 'a', attempt: 2, delayMs: 20 },
    ]);
    expect(giveUps).toEqual([{ policy: 'counters', key: 'a', attempts: 3 }]);
    // Nothing of ours was written: only the other writer's values.
    expect(table.rows.get('a')!.value % 100).toBe(0);
    expect(clock.pendingTimers).toBe(0);
  });

  it('maxAttempts 1 never waits: the first conflict is final', async () => {
    const clock = new FakeClock();
    const table = numbered();
    table.rows.set('a', { value: 0, version: 0 });
    table.interfere(1);
    const error = await updater(table, { clock, maxAttempts: 1, backoff: constant(1_000) })
      .update('a')
      .catch((e: unknown) => e);
    expect(error).toMatchObject({ attempts: 1, retryAfterMs: 1_000 });
    expect(clock.pendingTimers).toBe(0);
  });

  it('the default backoff: 10 ms doubling to 200 ms, spread ±30 % by the injected random', async () => {
    const waits = async (random: () => number) => {
      const clock = new FakeClock();
      const table = numbered();
      table.rows.set('a', { value: 0, version: 0 });
      table.interfere(Infinity);
      const delays: number[] = [];
      const r = await settle(
        clock,
        updater(table, { clock, random, maxAttempts: 7, onConflict: (e) => delays.push(e.delayMs) }).update(
          'a',
        ),
      );
      const error = (r as { error: OptimisticConflictError }).error;
      return { delays, retryAfterMs: error.retryAfterMs, elapsed: clock.now() };
    };
    const low = await waits(() => 0);
    expect(low.delays).toEqual([7, 14, 28, 56, 112, 140]);
    expect(low.retryAfterMs).toBe(140);
    expect(low.elapsed).toBe(10_000); // the clock ran on; the call had waited 357 ms in all
    const high = await waits(() => 1 - 2 ** -32);
    expect(high.delays.slice(0, 4).map(Math.round)).toEqual([13, 26, 52, 104]);
    expect(high.delays.slice(4)).toEqual([200, 200]); // capped at maxMs
    const seeded = await waits(seededRandom(7));
    const again = await waits(seededRandom(7));
    expect(seeded.delays).toEqual(again.delays);
    seeded.delays.forEach((delay, i) => {
      const plain = Math.min(200, 10 * 2 ** i);
      expect(delay).toBeGreaterThanOrEqual(0.7 * plain);
      expect(delay).toBeLessThanOrEqual(Math.min(200, 1.3 * plain));
    });
  });

  it('a NaN or negative backoff means no wait (and no timer)', async () => {
    const clock = new FakeClock();
    const table = numbered();
    table.rows.set('a', { value: 0, version: 0 });
    table.interfere(2);
    const delays: number[] = [];
    let n = 0;
    const value = await updater(table, {
      clock,
      backoff: () => (n++ === 0 ? Number.NaN : -5),
      onConflict: (e) => delays.push(e.delayMs),
    }).update('a');
    expect(value).toBe(201);
    expect(delays).toEqual([0, 0]);
    expect(clock.pendingTimers).toBe(0);
  });

  it('passes the key, the attempt, the loaded version and the signal to load, mutate and save', async () => {
    const clock = new FakeClock();
    const table = numbered();
    table.rows.set('a', { value: 5, version: 3 });
    table.interfere(1);
    const contexts: OptimisticMutateContext<string, number>[] = [];
    const { signal } = new AbortController();
    await settle(
      clock,
      updater(table, {
        clock,
        backoff: constant(1),
        mutate: (n, context) => {
          contexts.push(context);
          return n + 1;
        },
      }).update('a', { signal }),
    );
    expect(contexts).toEqual([
      { key: 'a', version: 3, attempt: 1, signal },
      { key: 'a', version: 4, attempt: 2, signal },
    ]);
    expect(table.loads.map((l) => [l.key, l.attempt, l.signal])).toEqual([
      ['a', 1, signal],
      ['a', 2, signal],
    ]);
    expect(table.saves.map((s) => [s.key, s.attempt, s.signal === signal])).toEqual([
      ['a', 1, true],
      ['a', 2, true],
    ]);
    // Without a signal of the caller's, the steps get one that never aborts.
    await updater(table).update('a');
    expect(table.loads.at(-1)!.signal.aborted).toBe(false);
  });

  it('serves many records: each update works on its own key', async () => {
    const table = numbered();
    table.rows.set('a', { value: 1, version: 0 });
    table.rows.set('b', { value: 10, version: 0 });
    const increment = updater(table);
    expect(await Promise.all([increment.update('a'), increment.update('b'), increment.update('a')])).toEqual([
      2, 11, 3,
    ]);
  });

  describe('versions of any type: opaque to optimisticUpdate, compared by save only', () => {
    it('number versions (a counter)', async () => {
      const table = numbered();
      table.rows.set('a', { value: 0, version: 41 });
      await updater(table).update('a');
      expect(table.rows.get('a')!.version).toBe(42);
    });

    it('string versions (an ETag), with a conflict on the way', async () => {
      const clock = new FakeClock();
      let etags = 0;
      const table = new Table<string>(() => `"etag-${++etags}"`);
      table.rows.set('a', { value: 1, version: '"etag-0"' });
      table.interfere(1);
      const update = optimisticUpdate({
        load: table.load,
        save: table.save,
        mutate: (n) => n * 2,
        clock,
        backoff: constant(5),
      });
      expectTypeOf(update).toEqualTypeOf<OptimisticUpdate<string, number>>();
      const r = await settle(clock, update.update('a'));
      expect(r).toEqual({ ok: true, value: 202 });
      expect(table.saves.map((s) => s.record.version)).toEqual(['"etag-0"', '"etag-1"']);
      expect(table.rows.get('a')).toEqual({ value: 202, version: '"etag-2"' });
    });

    it('infers the key, value and version types from load', () => {
      const update = optimisticUpdate({
        load: (_id: number) => ({ value: { name: 'x' }, version: 'v1' }),
        save: (id, record) => {
          expectTypeOf(id).toEqualTypeOf<number>();
          expectTypeOf(record).toEqualTypeOf<Versioned<{ name: string }, string>>();
          return true;
        },
        mutate: (user, { key, version }) => {
          expectTypeOf(key).toEqualTypeOf<number>();
          expectTypeOf(version).toEqualTypeOf<string>();
          return { ...user, name: user.name.toUpperCase() };
        },
      });
      expectTypeOf(update.update).parameter(0).toEqualTypeOf<number>();
      expectTypeOf(update.update(1)).resolves.toEqualTypeOf<{ name: string }>();
      // @ts-expect-error mutate must return the value's type
      optimisticUpdate({ load: () => ({ value: 1, version: 1 }), save: () => true, mutate: () => 'one' });
    });
  });

  describe('abort', () => {
    it('an aborted signal rejects with its reason before the first load', async () => {
      const table = numbered();
      table.rows.set('a', { value: 0, version: 0 });
      const reason = new Error('caller left');
      const error = await updater(table)
        .update('a', { signal: AbortSignal.abort(reason) })
        .catch((e: unknown) => e);
      expect(error).toBe(reason);
      expect(table.loads).toHaveLength(0);
    });

    it('an abort during the backoff wait rejects at once with its reason; no other attempt, no timer left', async () => {
      const clock = new FakeClock();
      const table = numbered();
      table.rows.set('a', { value: 0, version: 0 });
      table.interfere(Infinity);
      const controller = new AbortController();
      const call = updater(table, { clock, backoff: constant(1_000) })
        .update('a', { signal: controller.signal })
        .catch((e: unknown) => e);
      await clock.advance(10);
      expect(clock.pendingTimers).toBe(1);
      const reason = new Error('stop');
      controller.abort(reason);
      expect(await call).toBe(reason);
      expect(table.loads).toHaveLength(1);
      expect(clock.pendingTimers).toBe(0);
    });

    it('an abort during load or mutate: nothing is saved', async () => {
      const table = numbered();
      table.rows.set('a', { value: 0, version: 0 });
      const controller = new AbortController();
      const reason = new Error('stop');
      const error = await updater(table, {
        mutate: (n) => {
          controller.abort(reason); // the caller leaves while the attempt is computed
          return n + 1;
        },
      })
        .update('a', { signal: controller.signal })
        .catch((e: unknown) => e);
      expect(error).toBe(reason);
      expect(table.saves).toHaveLength(0);
      expect(table.rows.get('a')).toEqual({ value: 0, version: 0 });
    });

    it('a save that wrote is final: an abort during it still resolves the saved value', async () => {
      const table = numbered();
      table.rows.set('a', { value: 0, version: 0 });
      const controller = new AbortController();
      const value = await updater(table, {
        save: async (key, record, context) => {
          const saved = await table.save(key, record, context);
          controller.abort();
          return saved;
        },
      }).update('a', { signal: controller.signal });
      expect(value).toBe(1);
    });

    it('an abort during a save that conflicted ends the call with the reason, with no event and no retry', async () => {
      const clock = new FakeClock();
      const table = numbered();
      table.rows.set('a', { value: 0, version: 0 });
      table.interfere(1);
      const controller = new AbortController();
      const reason = new Error('stop');
      const onConflict = vi.fn();
      const error = await updater(table, {
        clock,
        onConflict,
        save: async (key, record, context) => {
          const saved = await table.save(key, record, context);
          controller.abort(reason);
          return saved;
        },
      })
        .update('a', { signal: controller.signal })
        .catch((e: unknown) => e);
      expect(error).toBe(reason);
      expect(onConflict).not.toHaveBeenCalled();
      expect(table.loads).toHaveLength(1);
    });
  });

  describe('failures of load, mutate and save are not retried', () => {
    it('mutate throwing: its error at once, nothing saved', async () => {
      const table = numbered();
      table.rows.set('a', { value: 0, version: 0 });
      const boom = new Error('invalid amount');
      const error = await updater(table, {
        mutate: () => {
          throw boom;
        },
      })
        .update('a')
        .catch((e: unknown) => e);
      expect(error).toBe(boom);
      expect(table.loads).toHaveLength(1);
      expect(table.saves).toHaveLength(0);
    });

    it('load throwing (or rejecting): its error at once, mutate never runs', async () => {
      const mutate = vi.fn((n: number) => n);
      const boom = new Error('connection refused');
      const sync = optimisticUpdate({
        load: (): Versioned<number, number> => {
          throw boom;
        },
        save: () => true,
        mutate,
      });
      expect(await sync.update('a').catch((e: unknown) => e)).toBe(boom);
      const async = optimisticUpdate({
        load: () => Promise.reject<Versioned<number, number>>(boom),
        save: () => true,
        mutate,
      });
      expect(await async.update('a').catch((e: unknown) => e)).toBe(boom);
      expect(mutate).not.toHaveBeenCalled();
    });

    it('save throwing after a conflict: its error at once, no further attempt', async () => {
      const clock = new FakeClock();
      const table = numbered();
      table.rows.set('a', { value: 0, version: 0 });
      table.interfere(1);
      const boom = new Error('statement timeout');
      let saves = 0;
      const r = await settle(
        clock,
        updater(table, {
          clock,
          backoff: constant(5),
          save: async (key, record, context) => {
            if (++saves === 2) throw boom;
            return table.save(key, record, context);
          },
        }).update('a'),
      );
      expect(r).toEqual({ ok: false, error: boom });
      expect(table.loads).toHaveLength(2);
    });

    it('a backoff that throws ends the call with its error', async () => {
      const table = numbered();
      table.rows.set('a', { value: 0, version: 0 });
      table.interfere(1);
      const boom = new Error('bad backoff');
      const error = await updater(table, {
        backoff: () => {
          throw boom;
        },
      })
        .update('a')
        .catch((e: unknown) => e);
      expect(error).toBe(boom);
    });
  });

  describe('missing records', () => {
    it('load finding nothing (undefined or null): OptimisticNotFoundError, mutate never runs', async () => {
      const mutate = vi.fn((n: number) => n);
      for (const nothing of [undefined, null]) {
        const update = optimisticUpdate({
          load: (_key: string) => nothing as Versioned<number, number> | undefined | null,
          save: () => true,
          mutate,
        });
        const error = (await update.update('gone').catch((e: unknown) => e)) as OptimisticNotFoundError;
        expect(isOptimisticNotFoundError(error)).toBe(true);
        expect(error).toMatchObject({ key: 'gone', attempts: 1, kind: 'not_found' });
      }
      expect(mutate).not.toHaveBeenCalled();
    });

    it('a record deleted during the call: not found at the attempt after the conflict', async () => {
      const clock = new FakeClock();
      const table = numbered();
      table.rows.set('a', { value: 0, version: 0 });
      const r = await settle(
        clock,
        updater(table, {
          clock,
          save: async () => {
            table.rows.delete('a'); // another writer deletes it: our save finds no row
            return false;
          },
        }).update('a'),
      );
      expect(r.ok).toBe(false);
      expect((r as { error: unknown }).error).toMatchObject({
        code: 'ERR_OPTIMISTIC_NOT_FOUND',
        attempts: 2,
      });
    });
  });

  describe('answers that break the contract are TypeErrors, never retried', () => {
    it.each([
      [5, 'expected "load" to resolve { value, version }, undefined or null, got 5'],
      [{ value: 1 }, 'expected "load" to resolve { value, version }, undefined or null, got an object'],
      [{ version: 1 }, 'expected "load" to resolve { value, version }, undefined or null, got an object'],
    ])('load resolving %o', async (loaded, message) => {
      const update = optimisticUpdate({
        load: () => loaded as unknown as Versioned<number, number>,
        save: () => true,
        mutate: (n) => n,
      });
      const error = await update.update('a').catch((e: unknown) => e);
      expect(error).toBeInstanceOf(TypeError);
      expect((error as Error).message).toBe(message);
    });

    it.each([
      [undefined, 'got undefined'],
      [1, 'got 1'],
      ['false', 'got "false"'],
    ])('save resolving %o (a save that forgot to return)', async (saved, got) => {
      const save = vi.fn(() => saved as unknown as boolean);
      const update = optimisticUpdate({ load: () => ({ value: 1, version: 1 }), save, mutate: (n) => n });
      const error = await update.update('a').catch((e: unknown) => e);
      expect(error).toBeInstanceOf(TypeError);
      expect((error as Error).message).toBe(
        `expected "save" to resolve true (saved) or false (a conflict), ${got}`,
      );
      expect(save).toHaveBeenCalledTimes(1);
    });

    it('a bad call option rejects before anything runs', async () => {
      const table = numbered();
      const error = await updater(table)
        .update('a', { signl: AbortSignal.abort() } as never)
        .catch((e: unknown) => e);
      expect(error).toBeInstanceOf(TypeError);
      expect(table.loads).toHaveLength(0);
    });
  });

  describe('events', () => {
    it('subscribe and dispose; a throwing listener never breaks the call', async () => {
      const clock = new FakeClock();
      const table = numbered();
      table.rows.set('a', { value: 0, version: 0 });
      table.interfere(2);
      const reported: unknown[] = [];
      const previous = setListenerErrorHandler((error) => reported.push(error));
      try {
        const update = updater(table, {
          clock,
          backoff: constant(1),
          onConflict: () => {
            throw new Error('listener bug');
          },
        });
        const seen: number[] = [];
        const dispose = update.onConflict((e) => seen.push(e.attempt));
        const r = await settle(clock, update.update('a'));
        expect(r).toEqual({ ok: true, value: 201 });
        expect(seen).toEqual([1, 2]);
        expect(reported).toHaveLength(2);
        dispose();
        table.interfere(1);
        await settle(clock, update.update('a'));
        expect(seen).toEqual([1, 2]);
        const gaveUp: number[] = [];
        update.onGiveUp((e) => gaveUp.push(e.attempts));
        table.interfere(Infinity);
        await settle(clock, update.update('a'));
        expect(gaveUp).toEqual([5]);
      } finally {
        setListenerErrorHandler(previous);
      }
    });

    it('the instance has its name', () => {
      expect(updater(numbered()).name).toBe('optimisticUpdate');
      expect(updater(numbered(), { name: 'carts' }).name).toBe('carts');
    });
  });
});
