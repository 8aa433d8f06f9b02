import { describe, expect, it } from 'vitest';
import { timeout } from '../index.js';
import { FakeClock } from './fake-clock.js';

describe('FakeClock keepAlive and aliveTimers', () => {
  it('counts a timer as alive until keepAlive(handle, false), and again after keepAlive(handle, true)', () => {
    const clock = new FakeClock();
    const a = clock.setTimer(() => {}, 10);
    clock.setTimer(() => {}, 20);
    expect(clock.aliveTimers).toBe(2);
    clock.keepAlive(a, false);
    expect(clock.aliveTimers).toBe(1);
    expect(clock.pendingTimers).toBe(2); // released, still pending
    clock.keepAlive(a, true);
    expect(clock.aliveTimers).toBe(2);
  });

  it('forgets fired and cleared timers, and ignores unknown handles', async () => {
    const clock = new FakeClock();
    const a = clock.setTimer(() => {}, 10);
    const b = clock.setTimer(() => {}, 20);
    clock.keepAlive(b, false);
    clock.clearTimer(b);
    await clock.advance(10);
    clock.keepAlive(a, true); // fired: ignored
    clock.keepAlive({}, true); // unknown: ignored
    expect(clock.aliveTimers).toBe(0);
    expect(clock.pendingTimers).toBe(0);
  });

  it("sees the timeout's shared deadline timer released once its only call settles in time", async () => {
    const clock = new FakeClock();
    await expect(timeout(1_000, { clock }).execute(() => 'fast')).resolves.toBe('fast');
    expect(clock.pendingTimers).toBe(1); // still armed for the settled call's deadline
    expect(clock.aliveTimers).toBe(0); // but keeps no process alive
  });
});
