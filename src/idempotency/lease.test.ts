import { getEventListeners } from 'node:events';
import { describe, expect, it, vi } from 'vitest';
import { forwardingStore } from '../../test/support/idempotency-stores.js';
import { until } from '../../test/support/until.js';
import { StoreUnavailableError } from '../core/errors.js';
import { FakeClock } from '../testing/fake-clock.js';
import { isLeaseLostError } from './errors.js';
import { idempotency } from './idempotency.js';
import { memoryIdempotencyStore } from './memory-store.js';
import type { IdempotencyStore } from './store.js';

/** A memory store whose renewals the test answers by hand. */
function manualRenewals(clock: FakeClock) {
  const memory = memoryIdempotencyStore({ clock });
  const pending: { resolve: (renewed: boolean) => void; reject: (error: unknown) => void }[] = [];
  let claims = 0;
  const store: IdempotencyStore = {
    claim: async (...a) => {
      const result = await memory.claim(...a);
      claims += 1;
      return result;
    },
    complete: (...a) => memory.complete(...a),
    release: (...a) => memory.release(...a),
    renew: () => new Promise((resolve, reject) => pending.push({ resolve, reject })),
  };
  return { store, pending, claimed: () => until(() => claims > 0) };
}

describe('the lease keeper', () => {
  it('counts the lease from when the claim was sent, on a clock that does not start at 0', async () => {
    const clock = new FakeClock(1_000_000);
    const { store, claimed } = manualRenewals(clock);
    const onLeaseLost = vi.fn();
    const call = idempotency({ store, clock, leaseMs: 3_000, onLeaseLost })
      .execute('k', 1, () => clock.sleep(10_000))
      .catch((e: unknown) => e);
    await claimed();
    await clock.advance(2_999);
    expect(onLeaseLost).not.toHaveBeenCalled();
    await clock.advance(1);
    expect(onLeaseLost).toHaveBeenCalledTimes(1);
    await clock.advance(10_000);
    expect(isLeaseLostError(await call)).toBe(true);
  });

  it('a renewal that fails after the lease was already lost late reports the loss once', async () => {
    const clock = new FakeClock(0);
    const { store, pending, claimed } = manualRenewals(clock);
    const onLeaseLost = vi.fn();
    const call = idempotency({ store, clock, leaseMs: 3_000, onLeaseLost })
      .execute('k', 1, () => clock.sleep(10_000))
      .catch((e: unknown) => e);
    await claimed();
    await clock.advance(3_000); // the renewal sent at 1 000 has no answer: lost late
    pending[0]?.reject(new StoreUnavailableError('down'));
    pending[0]?.resolve(true);
    await clock.advance(10_000);
    expect(isLeaseLostError(await call)).toBe(true);
    expect(onLeaseLost.mock.calls.map(([e]) => e.reason)).toEqual(['renew-late']);
  });

  it('a renewal confirmed after the lease was lost late starts no timer again', async () => {
    const clock = new FakeClock(0);
    const { store, pending, claimed } = manualRenewals(clock);
    let finish!: () => void;
    const call = idempotency({ store, clock, leaseMs: 3_000 })
      .execute('k', 1, () => new Promise<void>((resolve) => (finish = resolve)))
      .catch((e: unknown) => e);
    await claimed();
    await clock.advance(3_000);
    pending[0]?.resolve(true);
    await Promise.resolve();
    await Promise.resolve();
    expect(clock.pendingTimers).toBe(0);
    finish();
    expect(isLeaseLostError(await call)).toBe(true);
  });

  it('a renewal still in flight when the handler finishes is ignored, whatever it answers', async () => {
    for (const answer of ['refused', 'failed'] as const) {
      const clock = new FakeClock(0);
      const { store, pending, claimed } = manualRenewals(clock);
      const onLeaseLost = vi.fn();
      const call = idempotency({ store, clock, leaseMs: 3_000, onLeaseLost }).execute('k', 1, () =>
        clock.sleep(1_500).then(() => 'done'),
      );
      await claimed();
      await clock.advance(1_500); // the renewal sent at 1 000 is still out
      expect(await call).toBe('done');
      if (answer === 'refused') pending[0]?.resolve(false);
      else pending[0]?.reject(new StoreUnavailableError('down'));
      await Promise.resolve();
      await Promise.resolve();
      expect(onLeaseLost).not.toHaveBeenCalled();
      expect(clock.pendingTimers).toBe(0);
    }
  });

  it('a store whose renew throws synchronously loses the lease (renew-failed)', async () => {
    const clock = new FakeClock(0);
    const memory = memoryIdempotencyStore({ clock });
    const boom = new Error('renew threw');
    const store: IdempotencyStore = forwardingStore(memory, {
      renew: () => {
        throw boom;
      },
    });
    const onLeaseLost = vi.fn();
    let started = false;
    const call = idempotency({ store, clock, leaseMs: 3_000, onLeaseLost })
      .execute('k', 1, ({ signal }) => {
        started = true;
        return new Promise((_r, reject) => signal.addEventListener('abort', () => reject(signal.reason)));
      })
      .catch((e: unknown) => e);
    await until(() => started);
    await clock.advance(1_000);
    const error = await call;
    expect(isLeaseLostError(error)).toBe(true);
    expect((error as Error).cause).toBe(boom);
    expect(onLeaseLost.mock.calls[0]?.[0].reason).toBe('renew-failed');
  });

  it("leaves no listener on the caller's signal once the call settled", async () => {
    const clock = new FakeClock(0);
    const controller = new AbortController();
    const idem = idempotency({ clock, leaseMs: 3_000 });
    expect(await idem.execute('k', 1, () => 'ok', { signal: controller.signal })).toBe('ok');
    await expect(
      idem.execute('k2', 1, () => Promise.reject(new Error('x')), { signal: controller.signal }),
    ).rejects.toThrow('x');
    expect(getEventListeners(controller.signal, 'abort')).toHaveLength(0);
  });
});
