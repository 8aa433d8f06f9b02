import fc from 'fast-check';
import { describe, expect, it, vi } from 'vitest';
import { deferred } from '../../test/support/deferred.js';
import type { TimerHandle } from '../core/clock.js';
import { isRejectedError } from '../core/errors.js';
import { type Listener, setListenerErrorHandler } from '../core/events.js';
import { toProblem } from '../core/http-status.js';
import { pipeline } from '../core/pipeline.js';
import type { FailureEvent, RejectedEvent, SuccessEvent } from '../core/policy-events.js';
import { FakeClock } from '../testing/fake-clock.js';
import { isLoadShedError, LoadShedError } from './errors.js';
import { type LoadShedder, loadShedder } from './load-shedder.js';
import {
  type LoadShedderOptions,
  type LoadShedRejection,
  type Priority,
  priorities,
  type SampledSignals,
} from './load-shedder-options.js';

/** A source whose readings the test sets directly. */
function manualSource(initial: SampledSignals = {}) {
  let current: SampledSignals = initial;
  const source = vi.fn(() => current);
  return {
    source,
    set(next: SampledSignals) {
      current = next;
    },
  };
}

/** A FakeClock that records keepAlive calls, as systemClock would unref a timer. */
class RefTrackingClock extends FakeClock {
  readonly unrefed: TimerHandle[] = [];
  override keepAlive(handle: TimerHandle, alive: boolean): void {
    super.keepAlive(handle, alive);
    if (!alive) this.unrefed.push(handle);
  }
}

function shedding(shedder: LoadShedder): Priority[] {
  return priorities.filter((p) => shedder.isShedding(p));
}

/**
 * A shedder on a FakeClock with a manual source, run for its first interval so that the windowed
 * readings count (the sample taken at construction covers no interval yet).
 */
async function make({
  readings,
  ...options
}: Partial<LoadShedderOptions> & { readings?: SampledSignals } = {}) {
  const clock = new FakeClock();
  const src = manualSource(readings ?? {});
  const shedder = loadShedder({
    limits: { eventLoopDelayMs: 100 },
    source: src.source,
    clock,
    ...options,
  });
  await clock.advance(options.intervalMs ?? 1_000);
  return { clock, src, shedder };
}

describe('LoadShedder options', () => {
  const clock = new FakeClock();
  const source = () => ({});
  const base = { limits: { eventLoopDelayMs: 100 }, source, clock };
  const bad: [string, unknown, RegExp][] = [
    ['options', null, /"loadShedder options" to be an options object/],
    ['options', 5, /"loadShedder options" to be an options object/],
    ['limits missing', { ...base, limits: undefined }, /"limits" to be an object, got undefined/],
    ['limits array', { ...base, limits: [1] }, /"limits" to be an options object/],
    ['limits unknown key', { ...base, limits: { cpu: 50 } }, /unknown option "cpu" in limits/],
    [
      'limits empty',
      { ...base, limits: {} },
      /^expected "limits" to set at least one of cpuPercent, eventLoopDelayMs, eventLoopUtilization, heapUsedRatio, inFlight, got none$/,
    ],
    ['cpuPercent 0', { ...base, limits: { cpuPercent: 0 } }, /"limits.cpuPercent" to be a positive finite/],
    ['cpuPercent NaN', { ...base, limits: { cpuPercent: Number.NaN } }, /"limits.cpuPercent"/],
    ['cpuPercent string', { ...base, limits: { cpuPercent: '80' } }, /"limits.cpuPercent".*got "80"/],
    ['eventLoopDelayMs -1', { ...base, limits: { eventLoopDelayMs: -1 } }, /"limits.eventLoopDelayMs"/],
    [
      'eventLoopDelayMs Infinity',
      { ...base, limits: { eventLoopDelayMs: Infinity } },
      /"limits.eventLoopDelayMs"/,
    ],
    [
      'eventLoopUtilization 1.5',
      { ...base, limits: { eventLoopUtilization: 1.5 } },
      /"limits.eventLoopUtilization" to be a number above 0 and at most 1, got 1.5/,
    ],
    ['eventLoopUtilization 0', { ...base, limits: { eventLoopUtilization: 0 } }, /eventLoopUtilization/],
    ['heapUsedRatio 2', { ...base, limits: { heapUsedRatio: 2 } }, /"limits.heapUsedRatio"/],
    ['heapUsedRatio NaN', { ...base, limits: { heapUsedRatio: Number.NaN } }, /"limits.heapUsedRatio"/],
    [
      'heapUsedRatio string',
      { ...base, limits: { heapUsedRatio: '0.5' } },
      /"limits.heapUsedRatio" to be a number above 0 and at most 1, got "0.5"/,
    ],
    ['heapUsedRatio -0.5', { ...base, limits: { heapUsedRatio: -0.5 } }, /above 0 and at most 1, got -0.5/],
    ['inFlight 1.5', { ...base, limits: { inFlight: 1.5 } }, /"limits.inFlight" to be a positive integer/],
    ['inFlight 0', { ...base, limits: { inFlight: 0 } }, /"limits.inFlight" to be a positive integer/],
    ['thresholds not object', { ...base, thresholds: 0.5 }, /"thresholds" to be an options object/],
    [
      'thresholds unknown key',
      { ...base, thresholds: { urgent: 1 } },
      /unknown option "urgent" in thresholds/,
    ],
    ['threshold 0', { ...base, thresholds: { low: 0 } }, /"thresholds.low" to be a positive number/],
    ['threshold NaN', { ...base, thresholds: { high: Number.NaN } }, /"thresholds.high"/],
    [
      'thresholds out of order',
      { ...base, thresholds: { low: 0.9 } },
      /ordered critical ≥ high ≥ normal ≥ low, got critical: 1, high: 0.92, normal: 0.85, low: 0.9/,
    ],
    ['hysteresis negative', { ...base, hysteresis: -0.1 }, /"hysteresis" to be a number from 0 to 1/],
    ['hysteresis string', { ...base, hysteresis: '0.1' }, /"hysteresis"/],
    [
      'hysteresis ≥ low',
      { ...base, hysteresis: 0.7 },
      /"hysteresis" to be less than thresholds.low \(0.7\), got 0.7/,
    ],
    ['source not function', { ...base, source: {} }, /"source" to be a function, got an object/],
    ['source missing', { ...base, source: undefined }, /"source" to be a function \(a sampled signal/],
    ['intervalMs 0', { ...base, intervalMs: 0 }, /"intervalMs" to be a positive finite number, got 0/],
    ['intervalMs Infinity', { ...base, intervalMs: Infinity }, /"intervalMs"/],
    ['retryAfterMs -1', { ...base, retryAfterMs: -1 }, /"retryAfterMs" to be a non-negative finite/],
    ['clock', { ...base, clock: { now: () => 0 } }, /"clock" to be a Clock/],
    ['onShed (renamed onRejected)', { ...base, onShed: () => {} }, /unknown option "onShed"/],
    ['name empty', { ...base, name: '' }, /"name" to be a non-empty string, got ""/],
    ['name number', { ...base, name: 7 }, /"name" to be a non-empty string, got 7/],
    ['onRejected', { ...base, onRejected: 'x' }, /"onRejected" to be a function/],
    ['onSuccess', { ...base, onSuccess: 1 }, /"onSuccess" to be a function/],
    ['onFailure', { ...base, onFailure: {} }, /"onFailure" to be a function/],
    ['onStateChange', { ...base, onStateChange: 1 }, /"onStateChange" to be a function/],
    ['onSampleFailed', { ...base, onSampleFailed: {} }, /"onSampleFailed" to be a function/],
  ];
  it.each(bad)('rejects a bad %s with a TypeError naming it', (_name, options, message) => {
    expect(() => loadShedder(options as LoadShedderOptions)).toThrow(TypeError);
    expect(() => loadShedder(options as LoadShedderOptions)).toThrow(message);
  });

  it('needs no source when only the in-flight limit is set, and then starts no timer', () => {
    const clock = new FakeClock();
    const shedder = loadShedder({ limits: { inFlight: 3 }, clock });
    expect(clock.pendingTimers).toBe(0);
    expect(shedder.pressure.readings).toEqual({ inFlight: 0 });
  });

  it('rejects an unknown priority in admit, isShedding and policy with a TypeError', async () => {
    const { shedder } = await make();
    for (const call of [
      () => shedder.admit('urgent' as Priority),
      () => shedder.isShedding(undefined as unknown as Priority),
      () => shedder.policy('toString' as Priority),
    ]) {
      expect(call).toThrow(TypeError);
      expect(call).toThrow(/"priority" to be one of "critical", "high", "normal", "low"/);
    }
    expect(shedder.inFlight).toBe(0);
  });

  it('accepts partial thresholds, and Infinity to never shed a priority', async () => {
    const { shedder } = await make({
      thresholds: { critical: Infinity },
      readings: { eventLoopDelayMs: 10_000 },
    });
    expect(shedding(shedder)).toEqual(['high', 'normal', 'low']);
  });
});

describe('LoadShedder thresholds per priority', () => {
  it.each([
    [0, []],
    [69.9, []],
    [70, ['low']],
    [84.9, ['low']],
    [85, ['normal', 'low']],
    [92, ['high', 'normal', 'low']],
    [99.9, ['high', 'normal', 'low']],
    [100, ['critical', 'high', 'normal', 'low']],
    [250, ['critical', 'high', 'normal', 'low']],
  ])('a p99 delay of %d ms on a 100 ms limit sheds %j (defaults)', async (delay, expected) => {
    const { shedder } = await make({ readings: { eventLoopDelayMs: delay } });
    expect(shedding(shedder)).toEqual(expected);
    expect(shedder.pressure.shedding).toEqual(expected);
    for (const p of priorities) {
      if ((expected as Priority[]).includes(p)) expect(() => shedder.admit(p)).toThrow(LoadShedError);
      else shedder.admit(p)();
    }
    expect(shedder.inFlight).toBe(0);
  });

  it('refuses with a LoadShedError: kind overloaded, code, retryAfterMs, the signal and ratio', async () => {
    const { shedder } = await make({ readings: { eventLoopDelayMs: 75 }, intervalMs: 250 });
    let error: unknown;
    try {
      shedder.admit('low');
    } catch (e) {
      error = e;
    }
    expect(isLoadShedError(error)).toBe(true);
    expect(isRejectedError(error)).toBe(true);
    expect(error).toMatchObject({
      name: 'LoadShedError',
      code: 'ERR_LOAD_SHED',
      kind: 'overloaded',
      retryAfterMs: 1_000,
      priority: 'low',
      signal: 'eventLoopDelayMs',
      ratio: 0.75,
    });
    expect((error as Error).message).toBe(
      'load shed: "low" priority refused, eventLoopDelayMs at 75 % of its limit',
    );
    expect(toProblem(error)).toMatchObject({ status: 503, code: 'ERR_LOAD_SHED', retryAfterMs: 1_000 });
    expect(isLoadShedError(new Error('x'))).toBe(false);
  });

  it('retryAfterMs defaults to the interval when it is longer than a second, and can be set', async () => {
    const long = (await make({ readings: { eventLoopDelayMs: 100 }, intervalMs: 5_000 })).shedder;
    expect(() => long.admit('critical')).toThrow(expect.objectContaining({ retryAfterMs: 5_000 }));
    const set = (await make({ readings: { eventLoopDelayMs: 100 }, retryAfterMs: 250 })).shedder;
    expect(() => set.admit('critical')).toThrow(expect.objectContaining({ retryAfterMs: 250 }));
  });

  it('custom thresholds apply per priority', async () => {
    const { shedder, src, clock } = await make({
      thresholds: { critical: 0.99, high: 0.5, normal: 0.4, low: 0.1 },
      hysteresis: 0,
      readings: { eventLoopDelayMs: 10 },
    });
    expect(shedding(shedder)).toEqual(['low']);
    src.set({ eventLoopDelayMs: 45 });
    return clock.advance(1_000).then(() => expect(shedding(shedder)).toEqual(['normal', 'low']));
  });

  it('the signal furthest over its limit decides, and each signal without a limit is ignored', async () => {
    const { shedder } = await make({
      limits: { cpuPercent: 100, heapUsedRatio: 0.9, eventLoopUtilization: 1 },
      readings: { cpuPercent: 20, heapUsedRatio: 0.72, eventLoopUtilization: 0.5, eventLoopDelayMs: 10_000 },
    });
    expect(shedding(shedder)).toEqual(['low']);
    expect(shedder.pressure).toMatchObject({ signal: 'heapUsedRatio', shedding: ['low'] });
    expect(shedder.pressure.ratio).toBeCloseTo(0.8);
    expect(() => shedder.admit('low')).toThrow(expect.objectContaining({ signal: 'heapUsedRatio' }));
  });
});

describe('LoadShedder sampling', () => {
  it('samples once at construction and then every intervalMs, on an unref’d timer', async () => {
    const clock = new RefTrackingClock();
    const src = manualSource({ eventLoopDelayMs: 10 });
    const shedder = loadShedder({ limits: { eventLoopDelayMs: 100 }, source: src.source, clock });
    expect(src.source).toHaveBeenCalledTimes(1);
    expect(clock.pendingTimers).toBe(1);
    expect(clock.unrefed).toHaveLength(1);
    src.set({ eventLoopDelayMs: 80 });
    await clock.advance(999);
    expect(shedder.isShedding('low')).toBe(false);
    await clock.advance(1);
    expect(shedder.isShedding('low')).toBe(true);
    expect(shedder.pressure.sampledAt).toBe(1_000);
    await clock.advance(3_000);
    expect(src.source).toHaveBeenCalledTimes(5);
    expect(clock.pendingTimers).toBe(1);
    expect(clock.unrefed).toHaveLength(5);
  });

  it('close() stops sampling, clears the timer, forgets the readings; calling it twice is harmless', async () => {
    const { clock, src, shedder } = await make({
      limits: { eventLoopDelayMs: 100, inFlight: 2 },
      readings: { eventLoopDelayMs: 200 },
    });
    expect(shedding(shedder)).toEqual(priorities);
    expect(shedder.closed).toBe(false);
    shedder.close();
    shedder.close();
    expect(shedder.closed).toBe(true);
    expect(clock.pendingTimers).toBe(0);
    expect(shedding(shedder)).toEqual([]);
    expect(shedder.pressure).toMatchObject({ readings: { inFlight: 0 }, sampledAt: undefined, ratio: 0 });
    await clock.advance(10_000);
    expect(src.source).toHaveBeenCalledTimes(2); // at construction and after the first interval
    // The in-flight limit is live and still applies.
    const a = shedder.admit('critical');
    shedder.admit('critical');
    expect(() => shedder.admit('critical')).toThrow(expect.objectContaining({ signal: 'inFlight' }));
    a();
    shedder.admit('critical');
  });

  it('a listener that closes the shedder during a sample leaves no timer behind', async () => {
    const { clock, src, shedder } = await make({ readings: { eventLoopDelayMs: 0 } });
    shedder.onStateChange(() => shedder.close());
    src.set({ eventLoopDelayMs: 99 });
    await clock.advance(1_000);
    expect(clock.pendingTimers).toBe(0);
  });

  it('a throwing source fails open, reports onSampleFailed, and the next good sample counts', async () => {
    const failures: unknown[] = [];
    const boom = new Error('source broke');
    let mode: 'ok' | 'throw' | 'null' = 'ok';
    const clock = new FakeClock();
    const shedder = loadShedder({
      limits: { eventLoopDelayMs: 100 },
      clock,
      source: () => {
        if (mode === 'throw') throw boom;
        if (mode === 'null') return null as unknown as SampledSignals;
        return { eventLoopDelayMs: 95 };
      },
      onSampleFailed: (e) => failures.push(e.error),
    });
    expect(shedding(shedder)).toEqual([]); // the first interval is not over
    await clock.advance(1_000);
    expect(shedding(shedder)).toEqual(['high', 'normal', 'low']);
    mode = 'throw';
    await clock.advance(1_000);
    expect(shedding(shedder)).toEqual([]);
    expect(shedder.pressure.readings).toEqual({ inFlight: 0 });
    expect(failures).toEqual([boom]);
    mode = 'null';
    await clock.advance(1_000);
    expect(failures[1]).toBeInstanceOf(TypeError);
    expect(String(failures[1])).toMatch(/load source to return an object, got null/);
    mode = 'ok';
    await clock.advance(1_000);
    expect(shedding(shedder)).toEqual(['high', 'normal', 'low']);
    expect(clock.pendingTimers).toBe(1);
  });

  it('invalid single readings (NaN, negative, Infinity, strings, throwing getters) count as unknown', async () => {
    const { shedder, src, clock } = await make({
      limits: { eventLoopDelayMs: 100, cpuPercent: 100 },
      readings: { eventLoopDelayMs: Number.NaN, cpuPercent: -5 },
    });
    expect(shedding(shedder)).toEqual([]);
    expect(shedder.pressure.readings).toEqual({ inFlight: 0 });
    src.set({ eventLoopDelayMs: Infinity, cpuPercent: '99' as unknown as number });
    await clock.advance(1_000);
    expect(shedding(shedder)).toEqual([]);
    src.set(
      Object.defineProperty({ cpuPercent: 90 }, 'eventLoopDelayMs', {
        get() {
          throw new Error('hostile');
        },
        enumerable: true,
      }),
    );
    await clock.advance(1_000);
    expect(shedding(shedder)).toEqual(['normal', 'low']);
    expect(shedder.pressure.readings).toEqual({ cpuPercent: 90, inFlight: 0 });
  });
});

describe('LoadShedder first interval', () => {
  it('a windowed reading at construction covers no interval: unknown, so nothing is shed, critical included', async () => {
    const clock = new FakeClock();
    // Flat out since boot: every windowed signal at 10× its limit, from the first call on.
    const src = manualSource({ cpuPercent: 1_000, eventLoopDelayMs: 1_000, eventLoopUtilization: 1 });
    const shedder = loadShedder({
      limits: { cpuPercent: 100, eventLoopDelayMs: 100, eventLoopUtilization: 0.1 },
      source: src.source,
      clock,
    });
    expect(src.source).toHaveBeenCalledTimes(1);
    shedder.admit('critical')();
    shedder.admit('low')();
    expect(shedder.pressure).toMatchObject({
      readings: { inFlight: 0 },
      ratio: 0,
      signal: undefined,
      shedding: [],
    });
    expect(shedder.pressure.readings).toEqual({ inFlight: 0 });
    // The first timed sample covers one full interval: now it counts.
    await clock.advance(999);
    shedder.admit('critical')();
    await clock.advance(1);
    expect(shedding(shedder)).toEqual(priorities);
    expect(() => shedder.admit('critical')).toThrow(LoadShedError);
  });

  it('a point reading (heapUsedRatio) counts at construction', async () => {
    const { shedder } = await make({ limits: { heapUsedRatio: 0.5 }, readings: { heapUsedRatio: 0.5 } });
    expect(shedding(shedder)).toEqual(priorities);
    expect(shedder.pressure.readings).toEqual({ heapUsedRatio: 0.5, inFlight: 0 });
  });
});

describe('LoadShedder hysteresis', () => {
  it('a priority shed at its threshold stays shed until every signal falls below threshold − hysteresis', async () => {
    const { shedder, src, clock } = await make({ readings: { eventLoopDelayMs: 70 } });
    expect(shedding(shedder)).toEqual(['low']);
    for (const delay of [69, 66, 65]) {
      src.set({ eventLoopDelayMs: delay });
      await clock.advance(1_000);
      expect(shedding(shedder), `${delay} ms`).toEqual(['low']);
    }
    src.set({ eventLoopDelayMs: 64.9 });
    await clock.advance(1_000);
    expect(shedding(shedder)).toEqual([]);
    src.set({ eventLoopDelayMs: 69.9 });
    await clock.advance(1_000);
    expect(shedding(shedder)).toEqual([]);
  });

  it('a reading that hovers around a threshold does not flap', async () => {
    const changes: unknown[] = [];
    const { src, clock } = await make({
      readings: { eventLoopDelayMs: 50 },
      onStateChange: (e) => changes.push(e),
    });
    for (let i = 0; i < 20; i++) {
      src.set({ eventLoopDelayMs: i % 2 === 0 ? 71 : 68 });
      await clock.advance(1_000);
    }
    expect(changes).toEqual([{ shedding: ['low'], previous: [], signal: 'eventLoopDelayMs', ratio: 0.71 }]);
  });

  it('with two signals, a priority returns only when both are below the band', async () => {
    const { shedder, src, clock } = await make({
      limits: { eventLoopDelayMs: 100, cpuPercent: 100 },
      readings: { eventLoopDelayMs: 90, cpuPercent: 90 },
    });
    expect(shedding(shedder)).toEqual(['normal', 'low']);
    src.set({ eventLoopDelayMs: 10, cpuPercent: 82 });
    await clock.advance(1_000);
    expect(shedding(shedder)).toEqual(['normal', 'low']);
    src.set({ eventLoopDelayMs: 10, cpuPercent: 79 });
    await clock.advance(1_000);
    expect(shedding(shedder)).toEqual(['low']);
    src.set({ eventLoopDelayMs: 64, cpuPercent: 10 });
    await clock.advance(1_000);
    expect(shedding(shedder)).toEqual([]);
  });

  it('hysteresis 0 sheds exactly at the threshold, both ways', async () => {
    const { shedder, src, clock } = await make({ hysteresis: 0, readings: { eventLoopDelayMs: 70 } });
    expect(shedding(shedder)).toEqual(['low']);
    src.set({ eventLoopDelayMs: 69.99 });
    await clock.advance(1_000);
    expect(shedding(shedder)).toEqual([]);
  });

  it('property: the state matches the reference rule, and a shed priority implies every lower one is shed', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.array(fc.oneof(fc.double({ min: 0, max: 150, noNaN: true }), fc.constant(Number.NaN)), {
          minLength: 1,
          maxLength: 40,
        }),
        fc.double({ min: 0, max: 0.3, noNaN: true }),
        async (delays, hysteresis) => {
          const { shedder, src, clock } = await make({ hysteresis, readings: { eventLoopDelayMs: 0 } });
          const thresholds = [1, 0.92, 0.85, 0.7];
          const model = [false, false, false, false];
          for (const delay of delays) {
            src.set({ eventLoopDelayMs: delay });
            await clock.advance(1_000);
            const known = !Number.isNaN(delay);
            const ratio = known ? delay / 100 : 0;
            for (let r = 0; r < 4; r++) {
              model[r] = model[r] ? ratio >= thresholds[r]! - hysteresis : known && ratio >= thresholds[r]!;
            }
            const actual = priorities.map((p) => shedder.isShedding(p));
            expect(actual).toEqual(model);
            for (let r = 0; r < 3; r++) if (actual[r]) expect(actual[r + 1]).toBe(true);
          }
          shedder.close();
        },
      ),
      { numRuns: 100 },
    );
  });
});

describe('LoadShedder in-flight limit', () => {
  it('is live and per priority: at most ⌊threshold × limit⌋ in flight after admission; release frees a slot once', async () => {
    const { shedder } = await make({ limits: { inFlight: 10 } });
    // low ⌊7⌋, normal ⌊8.5⌋ = 8, high ⌊9.2⌋ = 9, critical 10
    const releases = Array.from({ length: 7 }, () => shedder.admit('low'));
    expect(() => shedder.admit('low')).toThrow(
      expect.objectContaining({ signal: 'inFlight', priority: 'low', ratio: 0.7 }),
    );
    shedder.admit('normal');
    expect(() => shedder.admit('normal')).toThrow(LoadShedError);
    shedder.admit('high');
    expect(() => shedder.admit('high')).toThrow(LoadShedError);
    expect(shedder.isShedding('high')).toBe(true);
    expect(shedder.isShedding('critical')).toBe(false);
    shedder.admit('critical');
    expect(shedder.inFlight).toBe(10);
    expect(() => shedder.admit('critical')).toThrow(expect.objectContaining({ ratio: 1 }));
    expect(shedder.pressure).toMatchObject({ signal: 'inFlight', ratio: 1, shedding: priorities });
    releases[0]!();
    releases[0]!();
    expect(shedder.inFlight).toBe(9);
    shedder.admit('critical');
    expect(shedder.inFlight).toBe(10);
  });

  it('the policy counts a call in flight until it settles, however it ends, and refuses without running it', async () => {
    const { shedder } = await make({ limits: { inFlight: 1 }, thresholds: { low: 1, normal: 1, high: 1 } });
    const policy = shedder.policy('normal');
    expect(shedder.policy('normal')).toBe(policy);
    expect(policy.priority).toBe('normal');

    const g = deferred<string>();
    const running = policy.execute(() => g.promise);
    expect(shedder.inFlight).toBe(1);
    const op = vi.fn();
    await expect(policy.execute(op)).rejects.toSatisfy(isLoadShedError);
    expect(op).not.toHaveBeenCalled();
    g.resolve('done');
    await expect(running).resolves.toBe('done');
    expect(shedder.inFlight).toBe(0);

    const failing = deferred<string>();
    const rejected = policy.execute(() => failing.promise);
    expect(shedder.inFlight).toBe(1);
    failing.reject(new Error('boom'));
    await expect(rejected).rejects.toThrow('boom');
    expect(shedder.inFlight).toBe(0);

    await expect(
      policy.execute(() => {
        throw new Error('sync');
      }),
    ).rejects.toThrow('sync');
    expect(shedder.inFlight).toBe(0);

    await expect(policy.execute(() => 'value')).resolves.toBe('value');
    expect(shedder.inFlight).toBe(0);

    const controller = new AbortController();
    const aborted = policy.execute(
      ({ signal }) =>
        new Promise((_, reject) => signal.addEventListener('abort', () => reject(signal.reason))),
      { signal: controller.signal },
    );
    expect(shedder.inFlight).toBe(1);
    controller.abort(new Error('caller left'));
    await expect(aborted).rejects.toThrow('caller left');
    expect(shedder.inFlight).toBe(0);

    // An already-aborted caller is refused before admission.
    await expect(policy.execute(op, { signal: AbortSignal.abort(new Error('gone')) })).rejects.toThrow(
      'gone',
    );
    expect(op).not.toHaveBeenCalled();
    expect(shedder.inFlight).toBe(0);
  });

  it('the policy rejects a non-function operation with a TypeError and counts nothing', async () => {
    const { shedder } = await make({ limits: { inFlight: 1 } });
    await expect(shedder.policy('critical').execute(42 as never)).rejects.toThrow(
      /"operation" to be a function, got 42/,
    );
    expect(shedder.inFlight).toBe(0);
  });

  it('the policy composes in a pipeline and shares the count with admit()', async () => {
    const { shedder } = await make({ limits: { inFlight: 2 }, thresholds: { low: 1, normal: 1, high: 1 } });
    const release = shedder.admit('high');
    const g = deferred<string>();
    const call = pipeline(shedder.policy('low')).execute(() => g.promise);
    expect(shedder.inFlight).toBe(2);
    await expect(pipeline(shedder.policy('critical')).execute(() => 1)).rejects.toSatisfy(isLoadShedError);
    release();
    g.resolve('ok');
    await expect(call).resolves.toBe('ok');
    expect(shedder.inFlight).toBe(0);
  });

  it('property: with random durations, failures and aborts, in-flight never exceeds the limit and returns to 0', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.integer({ min: 1, max: 8 }),
        fc.array(
          fc.record({
            priority: fc.constantFrom<Priority>(...priorities),
            startAt: fc.integer({ min: 0, max: 50 }),
            durationMs: fc.integer({ min: 0, max: 30 }),
            end: fc.constantFrom('resolve', 'reject', 'throw', 'abort'),
          }),
          { minLength: 1, maxLength: 40 },
        ),
        async (limit, calls) => {
          const clock = new FakeClock();
          const shedder = loadShedder({ limits: { inFlight: limit }, clock });
          let running = 0;
          let peak = 0;
          const settled: Promise<unknown>[] = [];
          for (const call of calls) {
            clock.setTimer(() => {
              const controller = new AbortController();
              const p = shedder.policy(call.priority).execute(
                async ({ signal }) => {
                  running++;
                  peak = Math.max(peak, running);
                  try {
                    if (call.end === 'throw') throw new Error('sync-ish');
                    if (call.end === 'abort') clock.setTimer(() => controller.abort(new Error('abort')), 1);
                    await clock.sleep(call.durationMs, signal);
                    if (call.end === 'reject') throw new Error('failed');
                    return 'ok';
                  } finally {
                    running--;
                  }
                },
                { signal: controller.signal },
              );
              settled.push(p.catch(() => undefined));
            }, call.startAt);
          }
          await clock.advance(200);
          await Promise.all(settled);
          expect(peak).toBeLessThanOrEqual(limit);
          expect(shedder.inFlight).toBe(0);
          expect(running).toBe(0);
        },
      ),
      { numRuns: 100 },
    );
  });
});

describe('LoadShedder in-flight reported by the source', () => {
  it('uses the larger of the reported count and its own, at once (a point reading) and on every sample', async () => {
    const clock = new FakeClock();
    const src = manualSource({ inFlight: 9 });
    const shedder = loadShedder({ limits: { inFlight: 10 }, source: src.source, clock });
    expect(clock.pendingTimers).toBe(1);
    // low ⌊7⌋, normal 8, high 9, critical 10: 9 reported process-wide.
    expect(() => shedder.admit('low')).toThrow(
      expect.objectContaining({ signal: 'inFlight', priority: 'low', ratio: 0.9 }),
    );
    expect(() => shedder.admit('high')).toThrow(expect.objectContaining({ signal: 'inFlight' }));
    const release = shedder.admit('critical');
    expect(shedder.inFlight).toBe(1);
    expect(shedder.pressure).toMatchObject({
      readings: { inFlight: 9 },
      ratio: 0.9,
      signal: 'inFlight',
      shedding: ['high', 'normal', 'low'],
    });
    src.set({ inFlight: 10 });
    await clock.advance(1_000);
    expect(() => shedder.admit('critical')).toThrow(expect.objectContaining({ ratio: 1 }));
    // The shedder's own count wins when it is higher than what was reported.
    src.set({ inFlight: 0 });
    await clock.advance(1_000);
    const more = Array.from({ length: 6 }, () => shedder.admit('low'));
    expect(shedder.inFlight).toBe(7);
    expect(() => shedder.admit('low')).toThrow(expect.objectContaining({ ratio: 0.7 }));
    expect(shedder.pressure.readings.inFlight).toBe(7);
    release();
    for (const r of more) r();
  });

  it('an invalid reported count is unknown; a failed sample and close() forget it', async () => {
    const clock = new FakeClock();
    const src = manualSource({ inFlight: Number.NaN });
    const shedder = loadShedder({ limits: { inFlight: 10 }, source: src.source, clock });
    shedder.admit('low')();
    for (const bad of [-1, Infinity, '9' as unknown as number]) {
      src.set({ inFlight: bad });
      await clock.advance(1_000);
      expect(shedder.isShedding('low'), String(bad)).toBe(false);
      expect(shedder.pressure.readings).toEqual({ inFlight: 0 });
    }
    src.set({ inFlight: 10 });
    await clock.advance(1_000);
    expect(shedder.isShedding('critical')).toBe(true);
    src.source.mockImplementationOnce(() => {
      throw new Error('source broke');
    });
    await clock.advance(1_000);
    expect(shedder.isShedding('low')).toBe(false);
    await clock.advance(1_000);
    expect(shedder.isShedding('critical')).toBe(true);
    shedder.close();
    expect(shedder.isShedding('low')).toBe(false);
    expect(shedder.pressure.readings).toEqual({ inFlight: 0 });
  });
});

describe('LoadShedder events and pressure', () => {
  it('onRejected fires per refusal (admit and policies) with { policy, reason: shed, error }, its disposer unsubscribes, and a throwing listener never breaks a call', async () => {
    const previous = setListenerErrorHandler(() => {});
    try {
      const seen: RejectedEvent<LoadShedRejection>[] = [];
      const { shedder } = await make({ readings: { eventLoopDelayMs: 86 } });
      const dispose = shedder.onRejected((e) => seen.push(e));
      shedder.onRejected(() => {
        throw new Error('listener bug');
      });
      expect(() => shedder.admit('normal')).toThrow(LoadShedError);
      await expect(shedder.policy('low').execute(() => 'never')).rejects.toThrow(LoadShedError);
      shedder.admit('high')();
      expect(seen.map(({ policy, reason }) => ({ policy, reason }))).toEqual([
        { policy: 'load-shedder', reason: 'shed' },
        { policy: 'load-shedder', reason: 'shed' },
      ]);
      expect(seen.map((e) => e.error)).toEqual([
        expect.objectContaining({ priority: 'normal', signal: 'eventLoopDelayMs', ratio: 0.86 }),
        expect.objectContaining({ priority: 'low', signal: 'eventLoopDelayMs', ratio: 0.86 }),
      ]);
      for (const { error } of seen) expect(isLoadShedError(error)).toBe(true);
      dispose();
      expect(() => shedder.admit('low')).toThrow(LoadShedError);
      expect(seen).toHaveLength(2);
    } finally {
      setListenerErrorHandler(previous);
    }
  });

  it('the error of onRejected is the very error the call rejects with', async () => {
    const onRejected = vi.fn<Listener<RejectedEvent<LoadShedRejection>>>();
    const { shedder } = await make({ readings: { eventLoopDelayMs: 99 }, onRejected });
    let thrown: unknown;
    try {
      shedder.admit('low');
    } catch (error) {
      thrown = error;
    }
    const rejected = await shedder
      .policy('normal')
      .execute(() => 'never')
      .catch((error: unknown) => error);
    expect(onRejected.mock.calls.map(([e]) => e.error)).toEqual([thrown, rejected]);
    expect(onRejected.mock.calls[0]![0].error).toBe(thrown);
    expect(onRejected.mock.calls[1]![0].error).toBe(rejected);
  });

  it('isShedding counts nothing and emits nothing', async () => {
    const onRejected = vi.fn();
    const { shedder } = await make({ readings: { eventLoopDelayMs: 99 }, onRejected });
    expect(shedder.isShedding('low')).toBe(true);
    expect(shedder.isShedding('critical')).toBe(false);
    expect(onRejected).not.toHaveBeenCalled();
    expect(shedder.inFlight).toBe(0);
  });

  it("name names the shedder and is the policy of every event, its own and its policies'", async () => {
    const events: string[] = [];
    const record =
      (what: string) =>
      ({ policy }: { policy: string }): void => {
        events.push(`${what}:${policy}`);
      };
    const { shedder } = await make({
      name: 'api',
      readings: { eventLoopDelayMs: 80 },
      onSuccess: record('success'),
      onFailure: record('failure'),
      onRejected: record('rejected'),
    });
    expect(shedder.name).toBe('api');
    for (const p of priorities) expect(shedder.policy(p).name).toBe('api');
    shedder.policy('low').onRejected(record('low.rejected'));
    await shedder.policy('high').execute(() => 'ok');
    await shedder
      .policy('normal')
      .execute(() => Promise.reject(new Error('boom')))
      .catch(() => undefined);
    await shedder
      .policy('low')
      .execute(() => 'never')
      .catch(() => undefined);
    expect(() => shedder.admit('low')).toThrow(LoadShedError);
    expect(events).toEqual([
      'success:api',
      'failure:api',
      'rejected:api',
      'low.rejected:api',
      'rejected:api',
    ]);
    const { shedder: unnamed } = await make();
    expect(unnamed.name).toBe('load-shedder');
    expect(unnamed.policy('critical').name).toBe('load-shedder');
  });

  it('onSuccess and onFailure (options and subscriptions) see every call through its policies, once, with the uniform shapes', async () => {
    const success = vi.fn<Listener<SuccessEvent>>();
    const failure = vi.fn<Listener<FailureEvent>>();
    const { clock, shedder } = await make({ limits: { inFlight: 10 }, onSuccess: success });
    const disposeFailure = shedder.onFailure(failure);
    const lateSuccess = vi.fn<Listener<SuccessEvent>>();
    const disposeLate = shedder.onSuccess(lateSuccess);
    const slow = shedder.policy('critical').execute(() => clock.sleep(30).then(() => 'slow'));
    await clock.advance(30);
    await expect(slow).resolves.toBe('slow');
    const boom = new Error('boom');
    await expect(
      pipeline(shedder.policy('low')).execute(() => {
        throw boom;
      }),
    ).rejects.toBe(boom);
    expect(success.mock.calls).toEqual([[{ policy: 'load-shedder', durationMs: 30 }]]);
    expect(lateSuccess).toHaveBeenCalledTimes(1);
    expect(failure.mock.calls).toEqual([
      [{ policy: 'load-shedder', error: boom, kind: 'internal', durationMs: 0, handled: false }],
    ]);
    disposeLate();
    disposeFailure();
    disposeFailure();
    await shedder.policy('normal').execute(() => 'ok');
    await shedder
      .policy('high')
      .execute(() => Promise.reject(boom))
      .catch(() => undefined);
    expect(success).toHaveBeenCalledTimes(2);
    expect(lateSuccess).toHaveBeenCalledTimes(1);
    expect(failure).toHaveBeenCalledTimes(1);
    expect(shedder.inFlight).toBe(0);
  });

  it('admit() reports no onSuccess or onFailure: it cannot know how the work ended', async () => {
    const onSuccess = vi.fn();
    const onFailure = vi.fn();
    const { shedder } = await make({ limits: { inFlight: 2 }, onSuccess, onFailure });
    shedder.admit('critical')();
    expect(onSuccess).not.toHaveBeenCalled();
    expect(onFailure).not.toHaveBeenCalled();
  });

  it('onStateChange reports entering and leaving shedding', async () => {
    const changes: unknown[] = [];
    const { src, clock, shedder } = await make({ readings: { eventLoopDelayMs: 10 } });
    shedder.onStateChange((e) => changes.push(e));
    src.set({ eventLoopDelayMs: 93 });
    await clock.advance(1_000);
    src.set({ eventLoopDelayMs: 10 });
    await clock.advance(1_000);
    expect(changes).toEqual([
      { shedding: ['high', 'normal', 'low'], previous: [], signal: 'eventLoopDelayMs', ratio: 0.93 },
      { shedding: [], previous: ['high', 'normal', 'low'], signal: 'eventLoopDelayMs', ratio: 0.1 },
    ]);
  });

  it('pressure is a snapshot of the readings, the top ratio and signal, and when it was sampled', async () => {
    const { shedder } = await make({
      limits: { eventLoopDelayMs: 100, cpuPercent: 200, inFlight: 4 },
      readings: { eventLoopDelayMs: 50, cpuPercent: 40, heapUsedRatio: 0.5 },
    });
    const release = shedder.admit('normal');
    const snapshot = shedder.pressure;
    expect(snapshot).toEqual({
      readings: { cpuPercent: 40, eventLoopDelayMs: 50, inFlight: 1 },
      ratio: 0.5,
      signal: 'eventLoopDelayMs',
      shedding: [],
      sampledAt: 1_000,
    });
    shedder.admit('critical');
    shedder.admit('critical');
    // ⌊0.92 × 4⌋ = ⌊0.85 × 4⌋ = 3 and ⌊0.7 × 4⌋ = 2: only critical still fits.
    expect(shedder.pressure).toMatchObject({
      ratio: 0.75,
      signal: 'inFlight',
      shedding: ['high', 'normal', 'low'],
    });
    release();
    expect(snapshot.readings.inFlight).toBe(1);
  });
});
