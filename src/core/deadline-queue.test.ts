import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { FakeClock } from '../testing/fake-clock.js';
import { DeadlineQueue, type Expiring } from './deadline-queue.js';

function entry(deadline: number, log: number[]): Expiring {
  return {
    deadline,
    settled: false,
    queueNext: undefined,
    expire() {
      log.push(deadline);
    },
  };
}

describe('DeadlineQueue', () => {
  it('expires due entries in order with one timer, skipping settled ones', async () => {
    const clock = new FakeClock();
    const queue = new DeadlineQueue(clock);
    const log: number[] = [];
    const entries = [10, 20, 20, 30, 40].map((d) => entry(d, log));
    for (const e of entries) expect(queue.add(e)).toBe(true);
    expect(clock.pendingTimers).toBe(1);
    queue.settle(entries[1]!);
    queue.settle(entries[3]!);
    await clock.advance(25);
    expect(log).toEqual([10, 20]);
    await clock.advance(100);
    expect(log).toEqual([10, 20, 40]);
    expect(clock.pendingTimers).toBe(0);
  });

  it('refuses an entry due before the last one (the caller needs its own timer)', () => {
    const queue = new DeadlineQueue(new FakeClock());
    const log: number[] = [];
    expect(queue.add(entry(50, log))).toBe(true);
    expect(queue.add(entry(40, log))).toBe(false);
  });

  it('accepts earlier deadlines again once everything queued has settled', () => {
    const queue = new DeadlineQueue(new FakeClock());
    const log: number[] = [];
    const first = entry(50, log);
    queue.add(first);
    queue.settle(first);
    expect(queue.add(entry(40, log))).toBe(true);
  });

  it('releases the process while nothing is live (keepAlive false), and holds it again when work arrives', () => {
    const clock = new FakeClock();
    const calls: boolean[] = [];
    Object.assign(clock, { keepAlive: (_: unknown, alive: boolean) => calls.push(alive) });
    const queue = new DeadlineQueue(clock);
    const log: number[] = [];
    const a = entry(10, log);
    queue.add(a);
    queue.settle(a);
    queue.settle(a); // twice is harmless
    queue.add(entry(20, log));
    expect(calls).toEqual([false, true]);
  });

  it('an entry added from inside expire() is kept and expires later', async () => {
    const clock = new FakeClock();
    const queue = new DeadlineQueue(clock);
    const log: number[] = [];
    const chained: Expiring = {
      deadline: 10,
      settled: false,
      queueNext: undefined,
      expire() {
        log.push(10);
        queue.add(entry(clock.now() + 10, log));
      },
    };
    queue.add(chained);
    await clock.advance(100);
    expect(log).toEqual([10, 20]);
  });

  it('property: every unsettled entry expires exactly once, at or after its deadline, never a settled one', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.array(
          fc.record({
            gap: fc.integer({ min: 0, max: 20 }),
            settleAfter: fc.option(fc.integer({ min: 0, max: 60 })),
          }),
          {
            maxLength: 40,
          },
        ),
        async (specs) => {
          const clock = new FakeClock();
          const queue = new DeadlineQueue(clock);
          const expired = new Map<Expiring, number>();
          const all: { e: Expiring; settleAt?: number }[] = [];
          let deadline = 0;
          for (const spec of specs) {
            deadline += spec.gap;
            const e: Expiring = {
              deadline: deadline + 50,
              settled: false,
              queueNext: undefined,
              expire() {
                expired.set(e, (expired.get(e) ?? 0) + 1);
                expect(clock.now()).toBeGreaterThanOrEqual(e.deadline);
              },
            };
            await clock.advance(spec.gap);
            expect(queue.add(e)).toBe(true);
            const item: { e: Expiring; settleAt?: number } = { e };
            if (spec.settleAfter !== null) {
              item.settleAt = clock.now() + spec.settleAfter;
              clock.setTimer(() => {
                if (!e.settled) queue.settle(e);
              }, spec.settleAfter);
            }
            all.push(item);
          }
          await clock.advance(10_000);
          for (const { e, settleAt } of all) {
            const shouldExpire = settleAt === undefined || settleAt > e.deadline;
            if (shouldExpire) expect(expired.get(e)).toBe(1);
            else if (settleAt < e.deadline) expect(expired.has(e)).toBe(false);
          }
          expect(clock.pendingTimers).toBe(0);
        },
      ),
      { numRuns: 100 },
    );
  });
});

describe('DeadlineQueue: every deadline on time, whatever the order', () => {
  it('an earlier deadline added after a settled later one fires at its own time, not at the old timer', async () => {
    const clock = new FakeClock();
    const queue = new DeadlineQueue(clock);
    const log: number[] = [];
    const slow = entry(1_000, log);
    expect(queue.add(slow)).toBe(true);
    queue.settle(slow);
    const fast = entry(50, log);
    expect(queue.add(fast)).toBe(true);
    await clock.advance(49);
    expect(log).toEqual([]);
    await clock.advance(1);
    expect(log).toEqual([50]);
    await clock.advance(2_000);
    expect(log).toEqual([50]);
    expect(clock.pendingTimers).toBe(0);
  });

  type Step =
    | { readonly kind: 'add'; readonly inMs: number }
    | { readonly kind: 'settle'; readonly pick: number }
    | { readonly kind: 'advance'; readonly ms: number };

  const step: fc.Arbitrary<Step> = fc.oneof(
    fc.record({ kind: fc.constant('add' as const), inMs: fc.integer({ min: 0, max: 120 }) }),
    fc.record({ kind: fc.constant('settle' as const), pick: fc.nat() }),
    fc.record({ kind: fc.constant('advance' as const), ms: fc.integer({ min: 0, max: 60 }) }),
  );

  it('property: random add/settle/advance sequences: each unsettled entry expires once, exactly at its deadline', async () => {
    await fc.assert(
      fc.asyncProperty(fc.array(step, { maxLength: 60 }), async (steps) => {
        const clock = new FakeClock();
        const queue = new DeadlineQueue(clock);
        interface Tracked {
          readonly e: Expiring;
          expiredAt: number[];
          settledEarly: boolean;
          /** Set when the queue refused the entry: it times itself, as every caller of the queue does. */
          ownTimer: unknown;
        }
        const tracked: Tracked[] = [];
        for (const s of steps) {
          if (s.kind === 'advance') {
            await clock.advance(s.ms);
          } else if (s.kind === 'add') {
            const t: Tracked = {
              e: {
                deadline: clock.now() + s.inMs,
                settled: false,
                queueNext: undefined,
                expire: () => t.expiredAt.push(clock.now()),
              },
              expiredAt: [],
              settledEarly: false,
              ownTimer: undefined,
            };
            tracked.push(t);
            if (!queue.add(t.e)) {
              t.ownTimer = clock.setTimer(() => {
                t.e.settled = true;
                t.e.expire();
              }, s.inMs);
            }
          } else {
            const live = tracked.filter((t) => !t.e.settled);
            const t = live[s.pick % Math.max(1, live.length)];
            if (t === undefined) continue;
            t.settledEarly = true;
            if (t.ownTimer === undefined) queue.settle(t.e);
            else {
              clock.clearTimer(t.ownTimer);
              t.e.settled = true;
            }
          }
        }
        await clock.advance(1_000);
        for (const t of tracked) {
          expect(t.expiredAt).toEqual(t.settledEarly ? [] : [t.e.deadline]);
        }
        expect(clock.pendingTimers).toBe(0);
      }),
      { numRuns: 300 },
    );
  });
});

describe('DeadlineQueue.stopIfIdle', () => {
  it('stops the timer once every entry has settled, and the queue works as new afterwards', async () => {
    const clock = new FakeClock();
    const queue = new DeadlineQueue(clock);
    const log: number[] = [];
    const a = entry(100, log);
    const b = entry(200, log);
    queue.add(a);
    queue.add(b);
    queue.settle(a);
    queue.stopIfIdle(); // b is live: nothing stops
    expect(clock.pendingTimers).toBe(1);
    queue.settle(b);
    queue.stopIfIdle();
    expect(clock.pendingTimers).toBe(0);
    // An earlier deadline than the forgotten entries is accepted and fires on time.
    const c = entry(50, log);
    expect(queue.add(c)).toBe(true);
    await clock.advance(50);
    expect(log).toEqual([50]);
    await clock.advance(1_000);
    expect(log).toEqual([50]);
    expect(clock.pendingTimers).toBe(0);
  });

  it('does nothing on an empty queue or one whose timer already fired', async () => {
    const clock = new FakeClock();
    const queue = new DeadlineQueue(clock);
    queue.stopIfIdle();
    const log: number[] = [];
    queue.add(entry(10, log));
    await clock.advance(10);
    queue.stopIfIdle();
    expect(log).toEqual([10]);
    expect(clock.pendingTimers).toBe(0);
  });
});

/** A FakeClock that records what the queue asks of it beyond setting timers. */
function recordingClock() {
  const clock = new FakeClock();
  const keepAlive: [unknown, boolean][] = [];
  const cleared: unknown[] = [];
  const set: number[] = [];
  const fakeSet = clock.setTimer.bind(clock);
  const fakeKeepAlive = clock.keepAlive.bind(clock);
  const fakeClear = clock.clearTimer.bind(clock);
  Object.assign(clock, {
    keepAlive: (handle: unknown, alive: boolean) => {
      keepAlive.push([handle, alive]);
      fakeKeepAlive(handle, alive);
    },
    clearTimer: (handle: unknown) => {
      cleared.push(handle);
      fakeClear(handle);
    },
    setTimer: (callback: () => void, ms: number) => {
      set.push(clock.now() + ms);
      return fakeSet(callback, ms);
    },
  });
  return { clock, keepAlive, cleared, set };
}

describe('DeadlineQueue: holding the process while entries are live', () => {
  it('settling one of two live entries keeps the timer holding the process; settling the last releases it', () => {
    const clock = new FakeClock();
    const queue = new DeadlineQueue(clock);
    const log: number[] = [];
    const a = entry(10, log);
    const b = entry(20, log);
    queue.add(a);
    queue.add(b);
    queue.settle(a);
    expect(clock.aliveTimers).toBe(1);
    queue.settle(b);
    expect(clock.aliveTimers).toBe(0);
    expect(clock.pendingTimers).toBe(1);
  });

  it('does not tell the clock again while the timer already holds the process', () => {
    const { clock, keepAlive } = recordingClock();
    const queue = new DeadlineQueue(clock);
    const log: number[] = [];
    const a = entry(10, log);
    queue.add(a);
    queue.add(entry(20, log));
    queue.add(entry(30, log));
    expect(keepAlive).toEqual([]);
    queue.settle(a);
    expect(keepAlive).toEqual([]);
  });

  it('after an entry expired, settling the rest releases the process and stopIfIdle stops the timer', async () => {
    const clock = new FakeClock();
    const queue = new DeadlineQueue(clock);
    const log: number[] = [];
    queue.add(entry(10, log));
    const b = entry(20, log);
    queue.add(b);
    await clock.advance(10);
    expect(log).toEqual([10]);
    expect(clock.aliveTimers).toBe(1);
    queue.settle(b);
    expect(clock.aliveTimers).toBe(0);
    queue.stopIfIdle();
    expect(clock.pendingTimers).toBe(0);
  });

  it("an entry settled from inside another one's expire() is dropped, and the clock hears of no timer it does not hold", async () => {
    const { clock, keepAlive, cleared } = recordingClock();
    const queue = new DeadlineQueue(clock);
    const log: number[] = [];
    const b = entry(10, log);
    const a: Expiring = {
      deadline: 10,
      settled: false,
      queueNext: undefined,
      expire() {
        log.push(-10);
        queue.settle(b);
        queue.stopIfIdle();
      },
    };
    queue.add(a);
    queue.add(b);
    await clock.advance(100);
    expect(log).toEqual([-10]);
    expect(keepAlive).toEqual([]);
    expect(cleared).toEqual([]);
    expect(clock.pendingTimers).toBe(0);
  });

  it('starts no timer for an entry due exactly when the armed timer fires, though everything before it settled', async () => {
    const { clock, cleared, set } = recordingClock();
    const queue = new DeadlineQueue(clock);
    const log: number[] = [];
    const a = entry(50, log);
    queue.add(a);
    queue.settle(a);
    queue.add(entry(50, log));
    expect(set).toEqual([50]);
    expect(cleared).toEqual([]);
    expect(clock.aliveTimers).toBe(1);
    await clock.advance(50);
    expect(log).toEqual([50]);
  });

  it('stopIfIdle with no timer armed makes no clock call', async () => {
    const { clock, cleared } = recordingClock();
    const queue = new DeadlineQueue(clock);
    queue.stopIfIdle();
    const log: number[] = [];
    queue.add(entry(10, log));
    await clock.advance(10);
    queue.stopIfIdle();
    expect(cleared).toEqual([]);
  });

  it('works on a clock without keepAlive', async () => {
    const fake = new FakeClock();
    const clock = {
      now: () => fake.now(),
      sleep: (ms: number) => fake.sleep(ms),
      setTimer: (callback: () => void, ms: number) => fake.setTimer(callback, ms),
      clearTimer: (handle: unknown) => fake.clearTimer(handle),
    };
    const queue = new DeadlineQueue(clock);
    const log: number[] = [];
    const a = entry(10, log);
    queue.add(a);
    queue.settle(a);
    queue.add(entry(20, log));
    await fake.advance(20);
    expect(log).toEqual([20]);
  });

  it('an entry added from inside expire() leaves one timer armed, for it', async () => {
    const clock = new FakeClock();
    const queue = new DeadlineQueue(clock);
    const log: number[] = [];
    queue.add({
      deadline: 10,
      settled: false,
      queueNext: undefined,
      expire() {
        log.push(10);
        queue.add(entry(clock.now() + 10, log));
      },
    });
    await clock.advance(10);
    expect(clock.pendingTimers).toBe(1);
    await clock.advance(10);
    expect(log).toEqual([10, 20]);
    expect(clock.pendingTimers).toBe(0);
  });
});
