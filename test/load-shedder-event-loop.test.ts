/**
 * The live load shedder against a really blocked event loop: the p99 event-loop delay measured by
 * `monitorEventLoopDelay` passes `low`'s threshold, so `low` is shed while `critical` still passes.
 * Real time is used only to block the loop; the assertions are on decisions and counts.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { isLoadShedError, type LoadShedder } from '../src/index.js';
import { loadShedder, processSignals } from '../src/node/index.js';

const shedders: LoadShedder[] = [];
afterEach(() => {
  for (const s of shedders.splice(0)) s.close();
});

/** Blocks the event loop with a busy loop for at least `ms`. */
function blockFor(ms: number): void {
  const end = performance.now() + ms;
  while (performance.now() < end) {
    // busy: nothing else in this process can run
  }
}

/** Lets the event loop turn until `condition` holds; fails after `capMs` of real time. */
async function until(condition: () => boolean, what: string, capMs = 10_000): Promise<void> {
  const start = performance.now();
  while (!condition()) {
    if (performance.now() - start > capMs) throw new Error(`never happened: ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
}

/**
 * Waits for the first timed sample, so the delay histograms have ticked: like any
 * `monitorEventLoopDelay`, they record nothing for a block that starts before their first tick.
 */
async function warmUp(shedder: LoadShedder): Promise<void> {
  const first = shedder.pressure.sampledAt;
  await until(() => shedder.pressure.sampledAt !== first, 'the first timed sample');
}

describe('loadShedder right after a busy boot (live perf_hooks readings)', () => {
  it('admits critical and low at once: the first readings cover no interval yet', () => {
    // A busy boot: the CPU and the event loop flat out for ~200 ms before the shedder exists.
    blockFor(200);
    const shedder = loadShedder({
      limits: { cpuPercent: 90, eventLoopUtilization: 0.9, eventLoopDelayMs: 100 },
    });
    shedders.push(shedder);
    shedder.admit('critical')();
    shedder.admit('low')();
    expect(shedder.pressure.shedding).toEqual([]);
    expect(shedder.pressure.readings).toEqual({ inFlight: 0 });
  });
});

describe('loadShedder on a blocked event loop (live perf_hooks readings)', () => {
  it('sheds low while critical passes after the loop was blocked for 1 s', async () => {
    // low at 10 % of 5 s = 500 ms of p99 delay; critical only at 5 s.
    const shedder = loadShedder({
      limits: { eventLoopDelayMs: 5_000 },
      thresholds: { low: 0.1 },
      intervalMs: 100,
    });
    shedders.push(shedder);
    const shedEvents: string[] = [];
    shedder.onRejected(({ error }) => {
      if (isLoadShedError(error)) shedEvents.push(`${error.priority}:${error.signal}`);
    });

    await warmUp(shedder);
    blockFor(1_000);
    await until(() => shedder.isShedding('low'), 'a sample sees the blocked loop');

    // Decided synchronously, within one sample: 100 calls of each priority.
    let lowAdmitted = 0;
    let lowShed = 0;
    let criticalAdmitted = 0;
    for (let i = 0; i < 100; i++) {
      try {
        shedder.admit('low')();
        lowAdmitted++;
      } catch (error) {
        expect(isLoadShedError(error)).toBe(true);
        expect(error).toMatchObject({ priority: 'low', signal: 'eventLoopDelayMs', kind: 'overloaded' });
        lowShed++;
      }
      shedder.admit('critical')();
      criticalAdmitted++;
    }
    console.info(
      `blocked loop: p99 delay ${shedder.pressure.readings.eventLoopDelayMs?.toFixed(0)} ms; ` +
        `low admitted ${lowAdmitted}, shed ${lowShed}; critical admitted ${criticalAdmitted}`,
    );
    expect(lowAdmitted).toBe(0);
    expect(lowShed).toBe(100);
    expect(criticalAdmitted).toBe(100);
    expect(shedder.pressure.readings.eventLoopDelayMs).toBeGreaterThanOrEqual(500);
    expect(shedder.pressure.shedding).toContain('low');
    expect(shedder.pressure.shedding).not.toContain('critical');
    expect(shedEvents).toHaveLength(100);
    expect(new Set(shedEvents)).toEqual(new Set(['low:eventLoopDelayMs']));
    expect(shedder.inFlight).toBe(0);
  });

  it('the policy refuses low work without running it while the blocked loop is reported', async () => {
    const shedder = loadShedder({
      limits: { eventLoopDelayMs: 5_000 },
      thresholds: { low: 0.1 },
      intervalMs: 100,
    });
    shedders.push(shedder);
    await warmUp(shedder);
    blockFor(1_000);
    await until(() => shedder.isShedding('low'), 'a sample sees the blocked loop');
    let ran = 0;
    const low = shedder.policy('low').execute(() => ran++);
    const critical = shedder.policy('critical').execute(() => ran++);
    const [lowResult, criticalResult] = await Promise.allSettled([low, critical]);
    expect(lowResult.status).toBe('rejected');
    expect(isLoadShedError((lowResult as PromiseRejectedResult).reason)).toBe(true);
    expect(criticalResult).toEqual({ status: 'fulfilled', value: 0 });
    expect(ran).toBe(1);
  });

  it('a block that starts right after a read (a histogram reset) is still reported', async () => {
    const signals = processSignals({ signals: ['eventLoopDelayMs'] });
    try {
      // Let both histograms tick once, as a running shedder's would have.
      await new Promise((resolve) => setTimeout(resolve, 50));
      signals.read();
      blockFor(300);
      // A few ticks after the block, so it is recorded.
      await new Promise((resolve) => setTimeout(resolve, 50));
      const delays = [signals.read().eventLoopDelayMs, signals.read().eventLoopDelayMs];
      console.info(`block right after a reset: readings ${delays.map((d) => d?.toFixed(0)).join(', ')} ms`);
      expect(Math.max(...delays.map((d) => d ?? 0))).toBeGreaterThanOrEqual(300);
    } finally {
      signals.close();
    }
  });
});
