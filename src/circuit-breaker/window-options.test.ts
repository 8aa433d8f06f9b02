import { describe, expect, it } from 'vitest';
import { FakeClock } from '../testing/fake-clock.js';
import { circuitBreaker } from './circuit-breaker.js';
import { smartResilience } from './smart.js';

describe('circuitBreaker window, half-open sampling and trackLatency: bad input', () => {
  it.each([
    [{ window: 100 }, /expected "window" to be an options object, got 100/],
    [{ window: { size: 100 } }, /expected "window.type" to be one of "count", "time", got undefined/],
    [{ window: { type: 'calls', size: 100 } }, /"window.type" to be one of "count", "time", got "calls"/],
    [{ window: { type: 'count' } }, /expected "window.size" to be a positive integer, got undefined/],
    [{ window: { type: 'count', size: 0 } }, /"window.size" to be a positive integer, got 0/],
    [{ window: { type: 'count', size: 2.5 } }, /"window.size" to be a positive integer, got 2.5/],
    [{ window: { type: 'count', size: 100_001 } }, /"window.size" to be at most 100000, got 100001/],
    [
      { window: { type: 'count', sizeMs: 1_000 } },
      /expected "window.size", not "sizeMs", for a count window/,
    ],
    [{ window: { type: 'time', size: 100 } }, /expected "window.sizeMs", not "size", for a time window/],
    [{ window: { type: 'time' } }, /expected "window.sizeMs" to be a positive finite number, got undefined/],
    [{ window: { type: 'time', sizeMs: -1 } }, /"window.sizeMs".*-1/],
    [{ window: { type: 'count', size: 10, buckets: 5 } }, /unknown option "buckets" in window/],
    [
      { failureRate: { threshold: 0.5, windowMs: 1_000 }, window: { type: 'count', size: 10 } },
      /expected "failureRate.windowMs" or "window", not both/,
    ],
    [{ failureRate: { threshold: 0.5 } }, /expected "failureRate.windowMs" or a "window"/],
    [
      { failureRate: { threshold: 0.5, minimumThroughput: 11 }, window: { type: 'count', size: 10 } },
      /expected "failureRate.minimumThroughput" \(11\) to be at most "window.size" \(10\)/,
    ],
    [{ halfOpenSuccessRate: 0 }, /"halfOpenSuccessRate" to be a number above 0 and at most 1, got 0/],
    [{ halfOpenSuccessRate: 1.5 }, /"halfOpenSuccessRate".*1.5/],
    [
      { halfOpenProbes: 5, halfOpenSuccessRate: 0.8, successThreshold: 2 },
      /expected "successThreshold" or "halfOpenSuccessRate", not both/,
    ],
    [{ trackLatency: 'yes' }, /expected "trackLatency" to be a boolean, got "yes"/],
  ])('rejects %o with a TypeError', (options, message) => {
    expect(() => circuitBreaker(options as never)).toThrow(TypeError);
    expect(() => circuitBreaker(options as never)).toThrow(message);
  });

  it('refuses the same bad window inside smartResilience({ breaker })', () => {
    expect(() => smartResilience({ breaker: { window: { type: 'count', size: 0 } } })).toThrow(
      /"breaker.window.size" to be a positive integer, got 0/,
    );
  });

  it.each([
    [{ window: { type: 'count', size: 1 } }],
    [{ window: { type: 'count', size: 100_000 } }],
    [{ window: { type: 'time', sizeMs: 0.5 } }],
    [{ failureRate: { threshold: 0.5, minimumThroughput: 10 }, window: { type: 'count', size: 10 } }],
    [{ failureRate: { threshold: 0.5 }, window: { type: 'time', sizeMs: 1_000 } }],
    [{ slowCallMs: 100, slowCallRate: 0.5, window: { type: 'count', size: 3 } }],
    [{ halfOpenProbes: 1, halfOpenSuccessRate: 1 }],
    [{ trackLatency: false, callTimeoutMs: 100 }],
  ] as const)('accepts %o', (options) => {
    expect(() => circuitBreaker({ clock: new FakeClock(), ...options })).not.toThrow();
  });
});
