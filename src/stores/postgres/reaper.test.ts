import { describe, expect, it } from 'vitest';
import { FakeClock } from '../../testing/fake-clock.js';
import { Reaper } from './reaper.js';

describe('Reaper', () => {
  it('runs every interval once started, never keeps the process alive, survives a failed run, stops for good', async () => {
    const clock = new FakeClock();
    let runs = 0;
    const reaper = new Reaper(clock, 1_000, async () => {
      runs += 1;
      if (runs === 1) throw new Error('database down');
    });
    await clock.advance(5_000);
    expect(runs).toBe(0);
    reaper.start();
    reaper.start();
    expect(clock.pendingTimers).toBe(1);
    expect(clock.aliveTimers).toBe(0);
    await clock.advance(1_000);
    await clock.advance(1_000);
    expect(runs).toBe(2);
    reaper.stop();
    reaper.start();
    await clock.advance(5_000);
    expect(runs).toBe(2);
    expect(clock.pendingTimers).toBe(0);
  });
});
