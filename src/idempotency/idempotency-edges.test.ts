import { describe, expect, it, vi } from 'vitest';
import { forwardingStore } from '../../test/support/idempotency-stores.js';
import { until } from '../../test/support/until.js';
import { ResilienceError, StoreUnavailableError } from '../core/errors.js';
import { FakeClock } from '../testing/fake-clock.js';
import { isLeaseLostError } from './errors.js';
import { idempotency } from './idempotency.js';
import { memoryIdempotencyStore } from './memory-store.js';
import type { IdempotencyStore } from './store.js';

const declined = () => new ResilienceError('declined', { code: 'E_DECLINED', kind: 'invalid' });

describe('idempotency: options and events', () => {
  it('the default store keeps leases on the given clock', async () => {
    const clock = new FakeClock(0);
    const idem = idempotency({ clock, leaseMs: 1_000, wait: false });
    let started = false;
    void idem.execute('k', 1, () => {
      started = true;
      return new Promise(() => {});
    });
    await until(() => started);
    await clock.advance(400); // renewed at 333 (for 1 000 ms from then, on the fake clock)
    await expect(idem.execute('k', 1, () => 'x')).rejects.toMatchObject({ retryAfterMs: 933 });
  });

  it('refuses a bad store, name, handler, or transactional without a store, naming them', async () => {
    expect(() => idempotency({ store: null as never })).toThrow(/"store" to be an idempotency store/);
    const { renew: _renew, ...noRenew } = forwardingStore(memoryIdempotencyStore());
    expect(() => idempotency({ store: noRenew as never })).toThrow(/"store"/);
    expect(() => idempotency({ store: 'store' as never })).toThrow(/"store"/);
    expect(() => idempotency({ name: '' })).toThrow(/"name" to be a non-empty string/);
    expect(() => idempotency({ name: 5 as never })).toThrow(/"name"/);
    expect(() => idempotency({ transactional: true })).toThrow(/"store" to support transactions/);
    expect(() => idempotency({ lease: 1 } as never)).toThrow(/in idempotency options/);
    await expect(idempotency().execute('k', 1, 'handler' as never)).rejects.toThrow(
      /"handler" to be a function/,
    );
  });

  it('events subscribe by option and by method; disposers unsubscribe', async () => {
    const clock = new FakeClock(0);
    const memory = memoryIdempotencyStore({ clock });
    const down = new StoreUnavailableError('down');
    const store = forwardingStore(memory, { complete: () => Promise.resolve(false) });
    const byOption = { onReplay: vi.fn(), onLeaseLost: vi.fn(), onStoreError: vi.fn() };
    const idem = idempotency({ store, clock, name: 'pay', ...byOption });
    const byMethod = { replay: vi.fn(), conflict: vi.fn(), lost: vi.fn(), storeError: vi.fn() };
    const disposers = [
      idem.onReplay(byMethod.replay),
      idem.onConflict(byMethod.conflict),
      idem.onLeaseLost(byMethod.lost),
      idem.onStoreError(byMethod.storeError),
    ];
    // complete refused: the lease is lost ('complete-refused'), the call rejects
    expect(isLeaseLostError(await idem.execute('k', 1, () => 'v').catch((e: unknown) => e))).toBe(true);
    expect(byOption.onLeaseLost).toHaveBeenCalledWith({
      policy: 'pay',
      key: 'k',
      reason: 'complete-refused',
    });
    expect(byMethod.lost).toHaveBeenCalledTimes(1);
    // a replay and a conflict, on a key completed by the memory store itself
    const t = await memory.claim(
      'done',
      await import('./idempotency.js').then((m) => m.fingerprintOf(1)),
      1_000,
    );
    if (t.status !== 'claimed') throw new Error('claim');
    await memory.complete('done', t.token, '{"v":"r"}', 60_000);
    expect(await idem.execute('done', 1, () => 'never')).toBe('r');
    await expect(idem.execute('done', 2, () => 'never')).rejects.toThrow(/different request/);
    expect(byOption.onReplay).toHaveBeenCalledWith({ policy: 'pay', key: 'done' });
    expect(byMethod.replay).toHaveBeenCalledTimes(1);
    expect(byMethod.conflict).toHaveBeenCalledWith({ policy: 'pay', key: 'done' });
    // a release that fails
    const failing = idempotency({
      store: forwardingStore(memory, { release: () => Promise.reject(down) }),
      clock,
      ...byOption,
    });
    await expect(failing.execute('r', 1, () => Promise.reject(new Error('boom')))).rejects.toThrow('boom');
    expect(byOption.onStoreError).toHaveBeenCalledWith({
      policy: 'idempotency',
      key: 'r',
      operation: 'release',
      error: down,
    });
    for (const dispose of disposers) dispose();
    await idem.execute('done', 1, () => 'never');
    expect(byMethod.replay).toHaveBeenCalledTimes(1);
    expect(byMethod.storeError).not.toHaveBeenCalled();
  });

  it('a claim failure says what failed, for an Error and for anything thrown', async () => {
    for (const [thrown, message] of [
      [new Error('ECONNRESET'), /failed to claim: ECONNRESET/],
      ['plain string', /failed to claim: plain string/],
      [null, /failed to claim: null/],
    ] as const) {
      const store = forwardingStore(memoryIdempotencyStore(), { claim: () => Promise.reject(thrown) });
      await expect(idempotency({ store }).execute('k', 1, () => 1)).rejects.toThrow(message);
    }
  });
});

describe('idempotency: failures and the lease, edge cases', () => {
  it('a handler that fails with its own error after the lease was lost rejects with LeaseLostError (its error as cause)', async () => {
    const clock = new FakeClock(0);
    const memory = memoryIdempotencyStore({ clock });
    const own = new Error('gave up');
    let started = false;
    const store = forwardingStore(memory, { renew: () => Promise.resolve(false) });
    const call = idempotency({ store, clock, leaseMs: 3_000 })
      .execute('k', 1, ({ signal }) => {
        started = true;
        return new Promise((_r, reject) => signal.addEventListener('abort', () => reject(own)));
      })
      .catch((e: unknown) => e);
    await until(() => started);
    await clock.advance(1_000);
    const error = await call;
    expect(isLeaseLostError(error)).toBe(true);
  });

  it('a renewal refused while the store would still accept the result: the call rejects, nothing is stored', async () => {
    const clock = new FakeClock(0);
    const memory = memoryIdempotencyStore({ clock });
    let started = false;
    const call = idempotency({
      store: forwardingStore(memory, { renew: () => Promise.resolve(false) }),
      clock,
      leaseMs: 3_000,
    })
      .execute('k', 1, () => {
        started = true;
        return clock.sleep(1_500).then(() => 'resolved');
      })
      .catch((e: unknown) => e);
    await until(() => started);
    await clock.advance(1_500);
    expect(isLeaseLostError(await call)).toBe(true);
    expect((await memory.claim('k', 'anything', 1_000)).status).not.toBe('completed');
  });

  it('a permanent failure is released when storeErrors is absent or says no', async () => {
    for (const storeErrors of [undefined, () => false]) {
      const idem = idempotency(storeErrors === undefined ? {} : { storeErrors });
      await expect(idem.execute('k', 1, () => Promise.reject(declined()))).rejects.toThrow('declined');
      expect(await idem.execute('k', 1, () => 'retried')).toBe('retried');
    }
  });

  it('a kept failure whose complete fails is reported as a complete error, and the handler error stands', async () => {
    const down = new StoreUnavailableError('down');
    const onStoreError = vi.fn();
    const store = forwardingStore(memoryIdempotencyStore(), { complete: () => Promise.reject(down) });
    const idem = idempotency({ store, storeErrors: () => true, onStoreError });
    await expect(idem.execute('k', 1, () => Promise.reject(declined()))).rejects.toThrow('declined');
    expect(onStoreError.mock.calls[0]?.[0]).toMatchObject({ operation: 'complete', error: down });
  });

  it('a waiter that finished leaves no watcher behind', async () => {
    const clock = new FakeClock(0);
    const store = memoryIdempotencyStore({ clock });
    const idem = idempotency({ store, clock });
    let finish!: (v: string) => void;
    const first = idem.execute('k', 1, () => new Promise<string>((resolve) => (finish = resolve)));
    await until(() => finish !== undefined);
    const second = idem.execute('k', 1, () => 'never');
    await until(() => store.watched === 1);
    finish('v');
    expect(await first).toBe('v');
    expect(await second).toBe('v');
    expect(store.watched).toBe(0);
  });
});

describe('idempotency: transactional edge cases', () => {
  function transactional(clock: FakeClock, changes: Partial<IdempotencyStore<{ id: number }>> = {}) {
    const memory = memoryIdempotencyStore({ clock });
    const completes: unknown[] = [];
    let started = false;
    const store: IdempotencyStore<{ id: number }> = {
      ...forwardingStore(memory),
      complete: (key, token, result, ttlMs, tx) => {
        completes.push(tx);
        return memory.complete(key, token, result, ttlMs);
      },
      transaction: (work) => work({ id: 1 }),
      ...changes,
    };
    return { store, completes, started: () => started, start: () => (started = true) };
  }

  it('complete runs once, inside the transaction', async () => {
    const clock = new FakeClock(0);
    const { store, completes } = transactional(clock);
    const onStoreError = vi.fn();
    expect(
      await idempotency({ store, clock, transactional: true, onStoreError }).execute('k', 1, () => 'v'),
    ).toBe('v');
    expect(completes).toEqual([{ id: 1 }]);
    expect(onStoreError).not.toHaveBeenCalled();
  });

  it('a lease lost while the handler ran: LeaseLostError, nothing completed', async () => {
    const clock = new FakeClock(0);
    const t = transactional(clock, { renew: () => Promise.resolve(false) });
    const call = idempotency({ store: t.store, clock, leaseMs: 3_000, transactional: true })
      .execute('k', 1, () => {
        t.start();
        return clock.sleep(1_500).then(() => 'late');
      })
      .catch((e: unknown) => e);
    await until(t.started);
    await clock.advance(1_500);
    expect(isLeaseLostError(await call)).toBe(true);
    expect(t.completes).toEqual([]);
  });

  it('complete refused inside the transaction: LeaseLostError (the transaction rolls back)', async () => {
    const clock = new FakeClock(0);
    const onLeaseLost = vi.fn();
    const { store } = transactional(clock, { complete: () => Promise.resolve(false) });
    const error = await idempotency({ store, clock, transactional: true, onLeaseLost })
      .execute('k', 1, () => 'v')
      .catch((e: unknown) => e);
    expect(isLeaseLostError(error)).toBe(true);
    expect(onLeaseLost.mock.calls[0]?.[0].reason).toBe('complete-refused');
  });
});
