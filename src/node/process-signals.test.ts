import { describe, expect, it } from 'vitest';
import { isLoadShedError } from '../admission/errors.js';
import { LoadShedder } from '../admission/load-shedder.js';
import { FakeClock } from '../testing/fake-clock.js';
import { loadShedder, processSignals } from './index.js';

/** Keeps the CPU busy (and the event loop blocked) for about `ms` of real time. */
function spin(ms: number): void {
  const end = performance.now() + ms;
  while (performance.now() < end) {
    // busy
  }
}

describe('processSignals', () => {
  it.each([
    [{ signals: 'cpuPercent' }, /"signals" to be an array of "cpuPercent", .*got "cpuPercent"/],
    [{ signals: ['cpu'] }, /"signals" to be an array of/],
    [
      { signals: ['heapUsedRatio', 'cpu'] },
      /^expected "signals" to be an array of "cpuPercent", "eventLoopDelayMs", "eventLoopUtilization", "heapUsedRatio", got /,
    ],
    [{ resolutionMs: 0 }, /"resolutionMs" to be a positive integer, got 0/],
    [{ resolutionMs: 2.5 }, /"resolutionMs" to be a positive integer, got 2.5/],
    [null, /"processSignals options" to be an options object/],
  ])('rejects bad options %j with a TypeError', (options, message) => {
    expect(() => processSignals(options as never)).toThrow(TypeError);
    expect(() => processSignals(options as never)).toThrow(message);
  });

  it('reads CPU, event-loop utilization and heap for the time since the previous read', () => {
    const signals = processSignals();
    try {
      spin(30);
      const readings = signals.read();
      expect(readings.cpuPercent).toBeGreaterThan(0);
      expect(readings.eventLoopUtilization).toBeGreaterThan(0);
      expect(readings.eventLoopUtilization).toBeLessThanOrEqual(1);
      expect(readings.heapUsedRatio).toBeGreaterThan(0);
      expect(readings.heapUsedRatio).toBeLessThan(1);
      // The histogram is reset on each read; within one synchronous block nothing was recorded.
      expect(signals.read().eventLoopDelayMs).toBeUndefined();
    } finally {
      signals.close();
      signals.close();
    }
  });

  it('measures only the signals asked for', () => {
    const signals = processSignals({ signals: ['heapUsedRatio'] });
    spin(5);
    const readings = signals.read();
    signals.close();
    expect(readings.heapUsedRatio).toBeGreaterThan(0);
    expect(readings.cpuPercent).toBeUndefined();
    expect(readings.eventLoopUtilization).toBeUndefined();
    expect(readings.eventLoopDelayMs).toBeUndefined();
  });
});

describe('loadShedder (bulwark/node)', () => {
  it('defaults to the live readings of the limited signals and stops them on close', () => {
    const clock = new FakeClock();
    const shedder = loadShedder({ limits: { heapUsedRatio: 1, cpuPercent: 10_000 }, clock });
    const { readings } = shedder.pressure;
    expect(readings.heapUsedRatio).toBeGreaterThan(0);
    expect(readings.eventLoopDelayMs).toBeUndefined();
    expect(clock.pendingTimers).toBe(1);
    expect(shedder.isShedding('critical')).toBe(false);
    shedder.close();
    expect(clock.pendingTimers).toBe(0);
    expect(shedder.pressure.readings).toEqual({ inFlight: 0 });
  });

  it('a live heap reading over the low threshold sheds low but not critical', () => {
    const used = processSignals({ signals: ['heapUsedRatio'] });
    const ratio = used.read().heapUsedRatio!;
    used.close();
    // The heap now sits at ~50 % of this limit: far above low's 0.1, far below critical's 1, so
    // garbage collection or allocation in between cannot change the outcome.
    const shedder = loadShedder({
      limits: { heapUsedRatio: Math.min(1, ratio * 2) },
      thresholds: { low: 0.1 },
      clock: new FakeClock(),
    });
    try {
      let refused: unknown;
      try {
        shedder.admit('low');
      } catch (error) {
        refused = error;
      }
      expect(isLoadShedError(refused)).toBe(true);
      shedder.admit('critical')();
    } finally {
      shedder.close();
    }
  });

  it('uses an injected source as is, and needs none for the in-flight limit alone', async () => {
    const clock = new FakeClock();
    const injected = loadShedder({ limits: { cpuPercent: 100 }, source: () => ({ cpuPercent: 99 }), clock });
    expect(injected).toBeInstanceOf(LoadShedder);
    await clock.advance(1_000); // a CPU reading counts once it covers one interval
    expect(injected.pressure.readings).toEqual({ cpuPercent: 99, inFlight: 0 });
    injected.close();
    const counting = loadShedder({ limits: { inFlight: 1 }, clock });
    expect(clock.pendingTimers).toBe(0);
    counting.admit('critical');
    expect(counting.isShedding('critical')).toBe(true);
  });

  it('validates its options like the core shedder', () => {
    expect(() => loadShedder(null as never)).toThrow(/"loadShedder options" to be an options object/);
    expect(() => loadShedder({ limits: { eventLoopDelayMs: -1 } })).toThrow(TypeError);
    expect(() => loadShedder({ limits: { eventLoopDelayMs: 100 }, intervalMs: 0 })).toThrow(
      /"intervalMs" to be a positive finite number/,
    );
    expect(() => loadShedder({ limits: {} })).toThrow(/at least one of/);
  });
});
