/**
 * How a load shedder reads its source: which readings count, which signal is reported (in refusals
 * and in `pressure`), where the hysteresis band ends, how a failed sample is heard, and what it
 * asks of its clock and of a source it opened itself. (load-shedder.test.ts covers the rest.)
 */
import { describe, expect, it, vi } from 'vitest';
import type { Clock } from '../core/clock.js';
import { FakeClock } from '../testing/fake-clock.js';
import { LoadShedError } from './errors.js';
import { LoadShedder, loadShedder } from './load-shedder.js';
import { type Priority, priorities, type SampledSignals } from './load-shedder-options.js';

function shedding(shedder: LoadShedder): Priority[] {
  return priorities.filter((p) => shedder.isShedding(p));
}

function refusal(shedder: LoadShedder, priority: Priority): LoadShedError {
  try {
    shedder.admit(priority)();
  } catch (error) {
    if (error instanceof LoadShedError) return error;
    throw error;
  }
  throw new Error(`${priority} was admitted`);
}

describe('LoadShedder readings', () => {
  it('a reading of 0 is known: it shows in pressure, as the top signal at ratio 0', async () => {
    const clock = new FakeClock();
    const shedder = loadShedder({ limits: { cpuPercent: 100 }, source: () => ({ cpuPercent: 0 }), clock });
    await clock.advance(1_000);
    expect(shedder.pressure).toMatchObject({
      readings: { cpuPercent: 0, inFlight: 0 },
      signal: 'cpuPercent',
      ratio: 0,
      shedding: [],
    });
  });

  it('an unknown reading does not hide a known one behind it', async () => {
    const clock = new FakeClock();
    const shedder = loadShedder({
      limits: { cpuPercent: 100, heapUsedRatio: 0.5 },
      source: () => ({ cpuPercent: Number.NaN, heapUsedRatio: 0.48 }),
      clock,
    });
    await clock.advance(1_000);
    expect(shedding(shedder)).toEqual(['high', 'normal', 'low']);
    expect(refusal(shedder, 'low')).toMatchObject({ signal: 'heapUsedRatio', ratio: 0.96 });
    expect(shedder.pressure).toMatchObject({ signal: 'heapUsedRatio', ratio: 0.96 });
  });

  it('when two signals are equally far over, the first in order (cpuPercent, eventLoopDelayMs, …) is reported', async () => {
    const clock = new FakeClock();
    const shedder = loadShedder({
      limits: { cpuPercent: 100, eventLoopDelayMs: 200 },
      source: () => ({ cpuPercent: 80, eventLoopDelayMs: 160 }),
      clock,
    });
    await clock.advance(1_000);
    expect(refusal(shedder, 'low')).toMatchObject({ signal: 'cpuPercent', ratio: 0.8 });
    expect(shedder.pressure).toMatchObject({ signal: 'cpuPercent', ratio: 0.8 });
  });

  it('ignores the inFlight a source reports when there is no in-flight limit', async () => {
    const clock = new FakeClock();
    const shedder = loadShedder({
      limits: { heapUsedRatio: 0.9 },
      source: () => ({ heapUsedRatio: 0.1, inFlight: 500 }),
      clock,
    });
    expect(shedder.pressure.readings).toEqual({ heapUsedRatio: 0.1, inFlight: 0 });
    await clock.advance(1_000);
    expect(shedder.pressure.readings).toEqual({ heapUsedRatio: 0.1, inFlight: 0 });
  });

  it('a source that returns a non-object (a bare number) fails the sample, open, with a TypeError', async () => {
    const clock = new FakeClock();
    const failures: unknown[] = [];
    let value: unknown = { eventLoopDelayMs: 95 };
    const shedder = loadShedder({
      limits: { eventLoopDelayMs: 100 },
      source: () => value as SampledSignals,
      clock,
      onSampleFailed: ({ error }) => failures.push(error),
    });
    await clock.advance(1_000);
    expect(shedding(shedder)).toEqual(['high', 'normal', 'low']);
    value = 95;
    await clock.advance(1_000);
    expect(shedding(shedder)).toEqual([]);
    expect(failures).toHaveLength(1);
    expect(failures[0]).toBeInstanceOf(TypeError);
    expect(String(failures[0])).toMatch(/expected the load source to return an object, got 95/);
    expect(shedder.pressure).toMatchObject({ readings: { inFlight: 0 }, signal: undefined, ratio: 0 });
  });
});

describe('LoadShedder hysteresis band edge', () => {
  it('a shed priority stays shed while the reading sits exactly at (threshold − hysteresis) × limit', async () => {
    const clock = new FakeClock();
    let delay = 80;
    const shedder = loadShedder({
      limits: { eventLoopDelayMs: 100 },
      thresholds: { low: 0.75 },
      hysteresis: 0.25,
      source: () => ({ eventLoopDelayMs: delay }),
      clock,
    });
    await clock.advance(1_000);
    expect(shedding(shedder)).toEqual(['low']);
    delay = 50; // 0.75 − 0.25 = 0.5 of the limit: not below the band yet
    await clock.advance(1_000);
    expect(shedding(shedder)).toEqual(['low']);
    delay = 49.5;
    await clock.advance(1_000);
    expect(shedding(shedder)).toEqual([]);
  });
});

describe('LoadShedder and its clock', () => {
  it('works with a clock that has no keepAlive (it is optional)', async () => {
    const fake = new FakeClock();
    const clock: Clock = {
      now: () => fake.now(),
      sleep: (ms, signal) => fake.sleep(ms, signal),
      setTimer: (callback, ms) => fake.setTimer(callback, ms),
      clearTimer: (handle) => fake.clearTimer(handle),
    };
    let delay = 10;
    const shedder = loadShedder({
      limits: { eventLoopDelayMs: 100 },
      source: () => ({ eventLoopDelayMs: delay }),
      clock,
    });
    delay = 99;
    await fake.advance(1_000);
    expect(shedding(shedder)).toEqual(['high', 'normal', 'low']);
    expect(fake.pendingTimers).toBe(1);
    shedder.close();
    expect(fake.pendingTimers).toBe(0);
  });

  it('close() hands the clock only the timer it set: none for a shedder that never sampled', () => {
    const clock = new FakeClock();
    const clearTimer = vi.spyOn(clock, 'clearTimer');
    const counting = loadShedder({ limits: { inFlight: 5 }, clock });
    counting.close();
    expect(clearTimer).not.toHaveBeenCalled();
    const setTimer = vi.spyOn(clock, 'setTimer');
    const sampling = loadShedder({ limits: { cpuPercent: 90 }, source: () => ({}), clock });
    sampling.close();
    expect(clearTimer).toHaveBeenCalledTimes(1);
    expect(clearTimer).toHaveBeenCalledWith(setTimer.mock.results[0]!.value);
  });

  it('a listener that closes the shedder mid-sample leaves the clock nothing to clear', async () => {
    const clock = new FakeClock();
    let delay = 0;
    const shedder = loadShedder({
      limits: { eventLoopDelayMs: 100 },
      source: () => ({ eventLoopDelayMs: delay }),
      clock,
    });
    const clearTimer = vi.spyOn(clock, 'clearTimer');
    shedder.onStateChange(() => shedder.close());
    delay = 99;
    await clock.advance(1_000);
    expect(shedder.closed).toBe(true);
    expect(clearTimer).not.toHaveBeenCalled();
    expect(clock.pendingTimers).toBe(0);
  });
});

describe('LoadShedder with a source it opens itself', () => {
  it('opens it for the limited sampled signals, reads it, and closes it once however often close() is called', async () => {
    const clock = new FakeClock();
    const close = vi.fn();
    const read = vi.fn(() => ({ heapUsedRatio: 0.95 }));
    const open = vi.fn(() => ({ read, close }));
    const shedder = new LoadShedder(
      { limits: { heapUsedRatio: 1, eventLoopUtilization: 0.9, inFlight: 10 }, clock },
      open,
    );
    expect(open).toHaveBeenCalledWith(['eventLoopUtilization', 'heapUsedRatio']);
    expect(read).toHaveBeenCalledTimes(1);
    expect(shedding(shedder)).toEqual(['high', 'normal', 'low']);
    shedder.close();
    shedder.close();
    expect(close).toHaveBeenCalledTimes(1);
  });

  it('is not opened when a source is given, nor when only the in-flight limit is set', () => {
    const clock = new FakeClock();
    const open = vi.fn(() => ({ read: () => ({}), close: () => {} }));
    new LoadShedder({ limits: { cpuPercent: 90 }, source: () => ({}), clock }, open).close();
    new LoadShedder({ limits: { inFlight: 3 }, clock }, open).close();
    expect(open).not.toHaveBeenCalled();
  });
});

describe('LoadShedder pressure', () => {
  it('leaves an unknown reading out of pressure.readings (not present as undefined)', async () => {
    const clock = new FakeClock();
    const shedder = loadShedder({
      limits: { cpuPercent: 100, heapUsedRatio: 0.9, inFlight: 10 },
      source: () => ({ cpuPercent: Number.NaN, heapUsedRatio: 0.2 }),
      clock,
    });
    await clock.advance(1_000);
    expect(Object.keys(shedder.pressure.readings).sort()).toEqual(['heapUsedRatio', 'inFlight']);
    shedder.close();
    expect(Object.keys(shedder.pressure.readings)).toEqual(['inFlight']);
  });

  it('reports inFlight as the signal only when it is strictly further over than every sampled one', async () => {
    const clock = new FakeClock();
    const shedder = loadShedder({
      limits: { eventLoopDelayMs: 100, inFlight: 4 },
      source: () => ({ eventLoopDelayMs: 50 }),
      clock,
    });
    await clock.advance(1_000);
    shedder.admit('critical');
    shedder.admit('critical');
    // 2 of 4 in flight and 50 of 100 ms: a tie, so the sampled signal stays.
    expect(shedder.pressure).toMatchObject({ ratio: 0.5, signal: 'eventLoopDelayMs' });
    shedder.admit('critical');
    expect(shedder.pressure).toMatchObject({ ratio: 0.75, signal: 'inFlight' });
  });

  it('an idle shedder with only an in-flight limit names no signal', () => {
    const shedder = loadShedder({ limits: { inFlight: 4 }, clock: new FakeClock() });
    expect(shedder.pressure).toEqual({
      readings: { inFlight: 0 },
      ratio: 0,
      signal: undefined,
      shedding: [],
      sampledAt: undefined,
    });
  });
});

describe('LoadShedder onSampleFailed subscription', () => {
  it('hears each failed sample until its disposer is called', async () => {
    const clock = new FakeClock();
    let broken = false;
    const boom = new Error('no reading');
    const shedder = loadShedder({
      limits: { eventLoopDelayMs: 100 },
      source: () => {
        if (broken) throw boom;
        return { eventLoopDelayMs: 1 };
      },
      clock,
    });
    const heard = vi.fn();
    const dispose = shedder.onSampleFailed(heard);
    await clock.advance(1_000);
    expect(heard).not.toHaveBeenCalled();
    broken = true;
    await clock.advance(1_000);
    expect(heard).toHaveBeenCalledTimes(1);
    expect(heard).toHaveBeenCalledWith({ error: boom });
    dispose();
    await clock.advance(1_000);
    expect(heard).toHaveBeenCalledTimes(1);
  });
});
