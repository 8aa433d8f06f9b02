import { describe, expect, it } from 'vitest';
import { deferred } from '../../../test/support/deferred.js';
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

  it('stopped while a run is in flight: that run ends it, nothing is armed again', async () => {
    const clock = new FakeClock();
    const run = deferred<void>();
    let runs = 0;
    const reaper = new Reaper(clock, 1_000, () => {
      runs += 1;
      return run.promise;
    });
    reaper.start();
    await clock.advance(1_000);
    expect(runs).toBe(1);
    reaper.stop();
    run.resolve();
    await new Promise((resolve) => setImmediate(resolve)); // every microtask of the run's end
    expect(clock.pendingTimers).toBe(0);
    await clock.advance(5_000);
    expect(runs).toBe(1);
  });
});
