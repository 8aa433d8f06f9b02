/**
 * What `processSignals().read()` computes from the process's counters, and which of them the
 * `bulwark/node` load shedder opens, on controlled counters: `performance`,
 * `monitorEventLoopDelay` and `getHeapStatistics` are replaced by fakes the test moves, and
 * `process.cpuUsage` is spied on. (process-signals.test.ts reads the live ones.)
 */
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';

const fake = vi.hoisted(() => {
  class FakeHistogram {
    count = 0;
    p99Ns = 0;
    enabled = false;
    disables = 0;
    resets = 0;
    constructor(readonly resolution: number | undefined) {}
    enable(): boolean {
      this.enabled = true;
      return true;
    }
    disable(): boolean {
      this.enabled = false;
      this.disables++;
      return true;
    }
    reset(): void {
      this.count = 0;
      this.p99Ns = 0;
      this.resets++;
    }
    percentile(p: number): number {
      return p === 99 ? this.p99Ns : Number.NaN;
    }
    /** The loop was delayed: `ms` is the p99 from now on. */
    record(ms: number): void {
      this.count++;
      this.p99Ns = ms * 1e6;
    }
  }
  return {
    FakeHistogram,
    histograms: [] as InstanceType<typeof FakeHistogram>[],
    nowMs: 0,
    elu: { idle: 0, active: 0 },
    heap: { used_heap_size: 0, heap_size_limit: 0 },
    cpu: { user: 0, system: 0 },
  };
});

vi.mock('node:perf_hooks', async (importOriginal) => {
  const original = await importOriginal<typeof import('node:perf_hooks')>();
  type Elu = { idle: number; active: number; utilization: number };
  const performance = {
    now: () => fake.nowMs,
    eventLoopUtilization: (current?: Elu, previous?: Elu): Elu => {
      if (current === undefined || previous === undefined) {
        const { idle, active } = fake.elu;
        return { idle, active, utilization: idle + active > 0 ? active / (idle + active) : 0 };
      }
      const idle = current.idle - previous.idle;
      const active = current.active - previous.active;
      return { idle, active, utilization: idle + active > 0 ? active / (idle + active) : 0 };
    },
  };
  return {
    ...original,
    performance,
    monitorEventLoopDelay: (options?: { resolution?: number }) => {
      const histogram = new fake.FakeHistogram(options?.resolution);
      fake.histograms.push(histogram);
      return histogram;
    },
  };
});

vi.mock('node:v8', async (importOriginal) => {
  const original = await importOriginal<typeof import('node:v8')>();
  return { ...original, getHeapStatistics: () => ({ ...fake.heap }) };
});

const { processSignals } = await import('./process-signals.js');
const { loadShedder } = await import('./load-shedder.js');
const { FakeClock } = await import('../testing/fake-clock.js');

beforeEach(() => {
  fake.histograms.length = 0;
  fake.nowMs = 1_000;
  fake.elu = { idle: 500, active: 500 };
  fake.heap = { used_heap_size: 50, heap_size_limit: 200 };
  fake.cpu = { user: 1_000_000, system: 1_000_000 };
  vi.spyOn(process, 'cpuUsage').mockImplementation((previous?: NodeJS.CpuUsage) =>
    previous === undefined
      ? { ...fake.cpu }
      : { user: fake.cpu.user - previous.user, system: fake.cpu.system - previous.system },
  );
});

afterEach(() => {
  vi.restoreAllMocks();
});

describe('processSignals readings (controlled counters)', () => {
  it('cpuPercent is user + system CPU time over wall time since the previous read, × 100', () => {
    const signals = processSignals({ signals: ['cpuPercent'] });
    fake.nowMs += 200;
    fake.cpu.user += 30_000; // µs
    fake.cpu.system += 20_000;
    expect(signals.read().cpuPercent).toBeCloseTo(25, 10); // 50 ms of CPU in 200 ms
    fake.nowMs += 100;
    fake.cpu.user += 150_000; // two threads busy: more CPU time than wall time
    expect(signals.read().cpuPercent).toBeCloseTo(150, 10);
    signals.close();
  });

  it('cpuPercent and eventLoopUtilization are unknown when no time passed since the previous read', () => {
    const signals = processSignals({ signals: ['cpuPercent', 'eventLoopUtilization'] });
    fake.cpu.user += 10_000;
    expect(signals.read()).toEqual({
      cpuPercent: undefined,
      eventLoopDelayMs: undefined,
      eventLoopUtilization: undefined,
      heapUsedRatio: undefined,
    });
    signals.close();
  });

  it('eventLoopUtilization is the share of active time between two reads', () => {
    const signals = processSignals({ signals: ['eventLoopUtilization'] });
    fake.nowMs += 100;
    fake.elu = { idle: fake.elu.idle + 75, active: fake.elu.active + 25 };
    expect(signals.read().eventLoopUtilization).toBeCloseTo(0.25, 10);
    fake.nowMs += 100;
    fake.elu = { idle: fake.elu.idle + 10, active: fake.elu.active + 90 };
    expect(signals.read().eventLoopUtilization).toBeCloseTo(0.9, 10);
    signals.close();
  });

  it('heapUsedRatio is used heap ÷ heap limit now, unknown when the limit reads 0', () => {
    const signals = processSignals({ signals: ['heapUsedRatio'] });
    expect(signals.read().heapUsedRatio).toBe(0.25);
    fake.heap = { used_heap_size: 10, heap_size_limit: 0 };
    expect(signals.read().heapUsedRatio).toBeUndefined();
    signals.close();
  });

  it('eventLoopDelayMs is the p99 in ms from two histograms taking turns, each reset when read', () => {
    const signals = processSignals({ signals: ['eventLoopDelayMs'], resolutionMs: 20 });
    expect(fake.histograms).toHaveLength(2);
    const [first, second] = fake.histograms as [
      InstanceType<typeof fake.FakeHistogram>,
      InstanceType<typeof fake.FakeHistogram>,
    ];
    expect([first.enabled, second.enabled]).toEqual([true, true]);
    expect([first.resolution, second.resolution]).toEqual([20, 20]);
    first.record(40);
    second.record(30);
    // Read 1 reads (and resets) the first histogram; the second keeps covering the gap.
    expect(signals.read().eventLoopDelayMs).toBe(40);
    expect([first.resets, second.resets]).toEqual([1, 0]);
    // Read 2 reads the second one, which still holds what it saw across read 1.
    expect(signals.read().eventLoopDelayMs).toBe(30);
    expect([first.resets, second.resets]).toEqual([1, 1]);
    // Read 3 is the first one's turn again: it recorded nothing since its reset.
    expect(signals.read().eventLoopDelayMs).toBeUndefined();
    second.record(70);
    expect(signals.read().eventLoopDelayMs).toBe(70);
    signals.close();
  });

  it('the histograms default to a 10 ms resolution', () => {
    const signals = processSignals({ signals: ['eventLoopDelayMs'] });
    expect(fake.histograms.map((h) => h.resolution)).toEqual([10, 10]);
    signals.close();
  });

  it('close() disables both histograms once, and the delay is unknown afterwards', () => {
    const signals = processSignals({ signals: ['eventLoopDelayMs', 'heapUsedRatio'] });
    const [first, second] = fake.histograms as [
      InstanceType<typeof fake.FakeHistogram>,
      InstanceType<typeof fake.FakeHistogram>,
    ];
    signals.close();
    signals.close();
    expect([first.enabled, second.enabled]).toEqual([false, false]);
    expect([first.disables, second.disables]).toEqual([1, 1]);
    first.record(40);
    second.record(40);
    const readings = signals.read();
    expect(readings.eventLoopDelayMs).toBeUndefined();
    expect(readings.heapUsedRatio).toBe(0.25);
    expect([first.resets, second.resets]).toEqual([0, 0]);
  });

  it('a signal not asked for is not measured: no histogram, no CPU or heap reading', () => {
    const signals = processSignals({ signals: ['eventLoopUtilization'] });
    expect(fake.histograms).toHaveLength(0);
    fake.nowMs += 100;
    fake.cpu.user += 50_000;
    const readings = signals.read();
    expect(readings.cpuPercent).toBeUndefined();
    expect(readings.heapUsedRatio).toBeUndefined();
    expect(readings.eventLoopDelayMs).toBeUndefined();
    expect(process.cpuUsage).not.toHaveBeenCalled();
    signals.close();
  });

  it('measures all four signals by default', () => {
    const signals = processSignals();
    expect(fake.histograms).toHaveLength(2);
    fake.nowMs += 100;
    fake.cpu.user += 50_000;
    fake.elu = { idle: fake.elu.idle + 50, active: fake.elu.active + 50 };
    fake.histograms[0]!.record(12);
    expect(signals.read()).toEqual({
      cpuPercent: 50,
      eventLoopDelayMs: 12,
      eventLoopUtilization: 0.5,
      heapUsedRatio: 0.25,
    });
    signals.close();
  });
});

describe('loadShedder (bulwark/node) live readings', () => {
  it('measures only the signals that have a limit', async () => {
    const clock = new FakeClock();
    const heapOnly = loadShedder({ limits: { heapUsedRatio: 0.9, inFlight: 10 }, clock });
    expect(fake.histograms).toHaveLength(0);
    expect(process.cpuUsage).not.toHaveBeenCalled();
    expect(heapOnly.pressure.readings).toEqual({ heapUsedRatio: 0.25, inFlight: 0 });
    heapOnly.close();
    const delayOnly = loadShedder({ limits: { eventLoopDelayMs: 100 }, clock });
    expect(fake.histograms).toHaveLength(2);
    expect(process.cpuUsage).not.toHaveBeenCalled();
    // The sample at construction read the first histogram; the first timed one reads the second.
    fake.histograms[1]!.record(95);
    await clock.advance(1_000);
    expect(delayOnly.pressure.readings).toEqual({ eventLoopDelayMs: 95, inFlight: 0 });
    expect(delayOnly.isShedding('high')).toBe(true);
    delayOnly.close();
    expect(fake.histograms.map((h) => h.enabled)).toEqual([false, false]);
  });
});
