/**
 * Factories are the way in: the policy classes are exported as types only (a user cannot build one
 * around its factory's option reading, or hand it an internal rank), and the load shedder has one
 * factory under one name in both entry points.
 */
import { describe, expect, it } from 'vitest';
import * as root from '../src/index.js';
import * as node from '../src/node/index.js';
import { FakeClock } from '../src/testing/fake-clock.js';

describe('public classes', () => {
  it.each([
    'RetryPolicy',
    'TimeoutPolicy',
    'BulkheadPolicy',
    'ConcurrencyLimitPolicy',
    'LoadShedder',
    'LoadShedPolicy',
    'SmartResiliencePolicy',
    'RetryBudget',
    'RateLimiter',
    'MemoryRateLimitStore',
    'MemorySagaLog',
    'MemoryOutbox',
    'KeyedPolicies',
  ])('%s is not a value export of bulwark', (name) => {
    expect(Object.keys(root)).not.toContain(name);
  });

  it('bulwark/node exports no constructible shedder either', () => {
    expect(Object.keys(node).sort()).toEqual(['loadShedder', 'processSignals']);
  });
});

describe('loadShedder: one factory, one options type', () => {
  it('from bulwark needs a source for a sampled signal, and none for in-flight alone', () => {
    expect(() => root.loadShedder({ limits: { cpuPercent: 90 } })).toThrow(
      /"source" to be a function \(a sampled signal has a limit; use loadShedder\(\) from bulwark\/node/,
    );
    const clock = new FakeClock();
    const counting = root.loadShedder({ limits: { inFlight: 1 }, clock });
    const release = counting.admit('critical');
    expect(() => counting.admit('critical')).toThrow(root.LoadShedError);
    release();
    expect(clock.pendingTimers).toBe(0);
  });

  it('from bulwark/node reads the process live when no source is given, and stops with close()', () => {
    const options: root.LoadShedderOptions = { limits: { eventLoopUtilization: 0.99, heapUsedRatio: 0.99 } };
    const shedder = node.loadShedder(options);
    try {
      expect(shedder.pressure.readings.heapUsedRatio).toBeGreaterThan(0);
      expect(shedder.isShedding('critical')).toBe(false);
    } finally {
      shedder.close();
    }
    expect(shedder.closed).toBe(true);
    expect(shedder.pressure.readings).toEqual({ inFlight: 0 });
  });

  it('from bulwark/node checks every option before opening the live readings', () => {
    expect(() => node.loadShedder({ limits: { eventLoopDelayMs: 100 }, intervalMs: 0 })).toThrow(
      /"intervalMs" to be a positive finite number, got 0/,
    );
  });
});
