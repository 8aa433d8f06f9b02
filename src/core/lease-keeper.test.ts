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
  it('holds one timer at a time, and it never keeps a process alive', async () => {
    const clock = new FakeClock(0);
    let answer: (renewed: boolean) => void = () => {};
    const { lease } = keeper(clock, { renew: () => new Promise((resolve) => (answer = resolve)) });
    expect(clock.pendingTimers).toBe(1);
    expect(clock.aliveTimers).toBe(0);
    await clock.advance(1_000); // the renewal is in flight: only the lease end's timer waits
    expect(clock.pendingTimers).toBe(1);
    expect(clock.aliveTimers).toBe(0);
    answer(true);
    await clock.advance(0); // renewed: the next renewal's timer replaces the lease end's
    expect(clock.pendingTimers).toBe(1);
    expect(clock.aliveTimers).toBe(0);
    lease.stop();
    expect(clock.pendingTimers).toBe(0);
  });

  it('a renewal confirmed late counts from when it was sent, and the next goes out while a third of the lease is left', async () => {
    const clock = new FakeClock(0);
    let answer: (renewed: boolean) => void = () => {};
    const renewals: number[] = [];
    const { losses } = keeper(clock, {
      renew: () => {
        renewals.push(clock.now());
        return new Promise((resolve) => (answer = resolve));
      },
    });
    await clock.advance(2_900); // sent at 1000, unanswered for 1.9 s
    answer(true);
    await clock.advance(0);
    expect(renewals).toEqual([1_000]);
    // The lease now ends at 1000 + 3000: the next renewal goes out at 3000 (not a third of the
    // lease from now, 3900), and unanswered, the lease is lost at 4000.
    await clock.advance(99);
    expect(renewals).toEqual([1_000]);
    await clock.advance(1);
    expect(renewals).toEqual([1_000, 3_000]);
    await clock.advance(999);
    expect(losses).toEqual([]);
    await clock.advance(1);
    expect(losses).toEqual(['renew-late']);
  });

  it('a renewal timer that fires after the lease ended (a blocked event loop) loses the lease without renewing', async () => {
    const fake = new FakeClock(0);
    let skew = 0;
    const clock = Object.assign(Object.create(fake) as FakeClock, { now: () => fake.now() + skew });
    let renewed = 0;
    const { lease, losses } = keeper(clock, {
      renew: () => {
        renewed++;
        return Promise.resolve(true);
      },
    });
    skew = 2_000; // the loop was blocked: the renewal timer due at 1000 runs at 3000, the lease's end
    await fake.advance(1_000);
    expect(renewed).toBe(0);
    expect(losses).toEqual(['renew-late']);
    expect(lease.aborted).toBe(true);
    expect(fake.pendingTimers).toBe(0);
  });

  it('works with a Clock that has no keepAlive (a user clock)', async () => {
    const fake = new FakeClock(0);
    const clock = Object.assign(Object.create(fake) as FakeClock, { keepAlive: undefined });
    let answer: (renewed: boolean) => void = () => {};
    const renewals: number[] = [];
    const { lease, losses } = keeper(clock, {
      renew: () => {
        renewals.push(fake.now());
        return new Promise((resolve) => (answer = resolve));
      },
    });
    await fake.advance(1_000); // the renewal is sent, its lease-end timer armed
    answer(true);
    await fake.advance(1_000); // confirmed, the next one scheduled and sent
    expect(renewals).toEqual([1_000, 2_000]);
    expect(losses).toEqual([]);
    lease.stop();
  });

  it('a signal first read after the loss is already aborted with the lost error', async () => {
    const clock = new FakeClock(0);
    const { lease } = keeper(clock, { renew: () => Promise.resolve(false) });
    expect(lease.aborted).toBe(false);
    await clock.advance(1_000);
    expect(lease.aborted).toBe(true);
    expect(lease.signal.aborted).toBe(true);
    expect(lease.signal.reason).toBe(lease.error());
  });

  it('a signal read before the loss aborts when it happens, once', async () => {
    const clock = new FakeClock(0);
    const caller = new AbortController();
    const { lease } = keeper(clock, { signal: caller.signal, renew: () => Promise.resolve(false) });
    const { signal } = lease;
    let aborts = 0;
    signal.addEventListener('abort', () => aborts++);
    await clock.advance(1_000);
    caller.abort(new Error('caller left'));
    expect(aborts).toBe(1);
    expect(signal.reason).toBe(lease.error());
    expect(lease.signal).toBe(signal);
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
