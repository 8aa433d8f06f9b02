import { describe, expect, it } from 'vitest';
import { FakeClock } from '../testing/fake-clock.js';
import { LeaseKeeper, type LeaseTerms } from './lease-keeper.js';

/** A keeper on a FakeClock whose renewals answer `renewed`, recording losses. */
function keeper(clock: FakeClock, changes: Partial<LeaseTerms<never>> = {}) {
  const losses: string[] = [];
  const lease = new LeaseKeeper({
    leaseMs: 3_000,
    clock,
    sentAt: clock.now(),
    signal: undefined,
    renew: () => Promise.resolve(true),
    lostError: (cause) => new Error('lost', { cause }),
    onLost: (reason) => losses.push(reason),
    ...changes,
  });
  return { lease, losses };
}

describe('LeaseKeeper', () => {
  it('its renewal and lease timers never keep a process alive', async () => {
    const clock = new FakeClock(0);
    const { lease } = keeper(clock);
    expect(clock.pendingTimers).toBe(2);
    expect(clock.aliveTimers).toBe(0);
    await clock.advance(1_000); // renewed: timers scheduled again, still unref'd
    expect(clock.pendingTimers).toBe(2);
    expect(clock.aliveTimers).toBe(0);
    lease.stop();
    expect(clock.pendingTimers).toBe(0);
  });

  it('error() before any loss is a fresh lost error with the cause; after a loss, the one the signal carries', async () => {
    const clock = new FakeClock(0);
    const { lease, losses } = keeper(clock, { renew: () => Promise.resolve(false) });
    const cause = new Error('why');
    const early = lease.error(cause);
    expect(early).toMatchObject({ message: 'lost', cause });
    await clock.advance(1_000);
    expect(losses).toEqual(['renew-refused']);
    expect(lease.error()).toBe(lease.signal.reason);
    expect(lease.error(cause)).toBe(lease.signal.reason);
  });

  it("a loss after the caller's abort keeps the caller's reason on the signal; error() is a fresh lost error", async () => {
    const clock = new FakeClock(0);
    const caller = new AbortController();
    const { lease } = keeper(clock, { signal: caller.signal, renew: () => Promise.resolve(false) });
    caller.abort(new Error('caller left'));
    await clock.advance(1_000);
    expect((lease.signal.reason as Error).message).toBe('caller left');
    const cause = new Error('handler failed');
    expect(lease.error(cause)).toMatchObject({ message: 'lost', cause });
  });

  it('marginMs brings the lease end forward', async () => {
    const clock = new FakeClock(0);
    const { losses } = keeper(clock, { marginMs: 100, renew: () => new Promise(() => {}) });
    await clock.advance(2_899);
    expect(losses).toEqual([]);
    await clock.advance(1);
    expect(losses).toEqual(['renew-late']);
  });
});
