import { describe, expect, it } from 'vitest';
import { circuitBreaker } from './circuit-breaker.js';

describe('circuitBreaker bad input', () => {
  it.each([
    [{ failureThreshold: 0 }, /"failureThreshold".*got 0/],
    [{ failureThreshold: 1.5 }, /"failureThreshold".*1.5/],
    [
      { failureRate: { threshold: 0, windowMs: 1_000 } },
      /"failureRate.threshold" to be a number above 0 and at most 1, got 0/,
    ],
    [{ failureRate: { threshold: 1.2, windowMs: 1_000 } }, /"failureRate.threshold".*1.2/],
    [{ failureRate: { threshold: 0.5, windowMs: Number.NaN } }, /"failureRate.windowMs".*NaN/],
    [
      { failureRate: { threshold: 0.5, windowMs: 1_000, minimumThroughput: 0 } },
      /"failureRate.minimumThroughput"/,
    ],
    [{ failureRate: 0.5 }, /"failureRate".*0.5/],
    [{ slowCallMs: 100 }, /"slowCallMs" and "slowCallRate" to be given together/],
    [{ slowCallMs: -1, slowCallRate: 0.5 }, /"slowCallMs".*-1/],
    [{ slowCallMs: 100, slowCallRate: 2 }, /"slowCallRate" to be a number above 0 and at most 1, got 2/],
    [{ resetTimeoutMs: 0 }, /"resetTimeoutMs".*got 0/],
    [{ resetTimeoutMs: Infinity }, /"resetTimeoutMs".*Infinity/],
    [{ resetBackoff: 0.5 }, /"resetBackoff" to be a finite number of at least 1, got 0.5/],
    [{ resetBackoff: Infinity }, /"resetBackoff" to be a finite number of at least 1, got Infinity/],
    [{ resetTimeoutMs: 100, maxResetTimeoutMs: 50 }, /"maxResetTimeoutMs" \(50\).*"resetTimeoutMs" \(100\)/],
    [{ halfOpenProbes: 0 }, /"halfOpenProbes".*got 0/],
    [{ successThreshold: -2 }, /"successThreshold".*-2/],
    [{ callTimeoutMs: 0 }, /"callTimeoutMs".*got 0/],
    [{ maxCallTimeoutMs: 100 }, /"callTimeoutMs" with "maxCallTimeoutMs"/],
    [{ callTimeoutMs: 100, maxCallTimeoutMs: 50 }, /"maxCallTimeoutMs" \(50\)/],
    [{ isFailure: 'yes' }, /"isFailure".*"yes"/],
    [{ clock: {} }, /"clock"/],
    ['fast', /"circuitBreaker options".*"fast"/],
  ])('rejects %o with a TypeError', (options, message) => {
    expect(() => circuitBreaker(options as never)).toThrow(TypeError);
    expect(() => circuitBreaker(options as never)).toThrow(message);
  });

  it.each([
    [{ resetTimeoutMs: 100, maxResetTimeoutMs: 100 }],
    [{ callTimeoutMs: 100, maxCallTimeoutMs: 100 }],
  ])('accepts a ceiling equal to its base: %o', (options) => {
    expect(() => circuitBreaker(options)).not.toThrow();
  });

  it.each([Number.NaN, Infinity, '5', undefined])(
    'rejects an open initialState whose openUntil is %o',
    (openUntil) => {
      const initialState = { state: 'open', consecutiveFailures: 1, reopenCount: 0, openUntil };
      expect(() => circuitBreaker({ initialState: initialState as never })).toThrow(TypeError);
      expect(() => circuitBreaker({ initialState: initialState as never })).toThrow(
        /expected "initialState.openUntil" to be a finite number for an open circuit, got /,
      );
    },
  );
});
