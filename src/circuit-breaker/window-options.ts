/**
 * The `window` option: which sliding window the rate rules judge and `stats()` reports over, how it
 * is read, and its defaults (with the older `failureRate.windowMs`).
 */

import type { Clock } from '../core/clock.js';
import {
  type Check,
  nested,
  oneOf,
  optional,
  positiveInt,
  positiveNumber,
  required,
  type Schema,
} from '../core/read-options.js';
import { CountWindow, MAX_WINDOW_SIZE } from './count-window.js';
import { type OutcomeWindow, TimeWindow } from './window.js';

/**
 * The sliding window the rate rules judge and `stats()` reports over: the last `size` calls
 * (resilience4j's count-based window; 1 to 100,000), or the calls of the last `sizeMs` (10 buckets).
 *
 * @example
 * circuitBreaker({ window: { type: 'count', size: 100 }, failureRate: { threshold: 0.5 } });
 */
export type CircuitWindow =
  | { readonly type: 'count'; readonly size: number }
  | { readonly type: 'time'; readonly sizeMs: number };

/** A count window's size: a positive integer, bounded (its ring is allocated up front). */
const windowSize: Check<number> = (name, value) => {
  const size = positiveInt(name, value);
  if (size > MAX_WINDOW_SIZE) {
    throw new TypeError(`expected "${name}" to be at most ${MAX_WINDOW_SIZE}, got ${size}`);
  }
  return size;
};

const windowSchema = {
  type: required(oneOf<CircuitWindow['type']>(['count', 'time'])),
  size: optional(windowSize),
  sizeMs: optional(positiveNumber),
} satisfies Schema<{ type: unknown; size: unknown; sizeMs: unknown }>;

/** Reads a {@link CircuitWindow}: `size` for a count window, `sizeMs` for a time window. */
export const circuitWindow: Check<CircuitWindow> = (name, value) => {
  const w = nested(windowSchema)(name, value);
  const [wanted, other] = w.type === 'count' ? (['size', 'sizeMs'] as const) : (['sizeMs', 'size'] as const);
  if (w[other] !== undefined) {
    throw new TypeError(`expected "${name}.${wanted}", not "${other}", for a ${w.type} window`);
  }
  // Absent: the field's own check refuses undefined with its usual message.
  return w.type === 'count'
    ? { type: 'count', size: windowSize(`${name}.size`, w.size) }
    : { type: 'time', sizeMs: positiveNumber(`${name}.sizeMs`, w.sizeMs) };
};

/**
 * The window: `window`, or `failureRate.windowMs`'s time window (one of them with a failure-rate
 * rule, never both), else 10 s for a slow-call rule alone, else the last 100 calls.
 */
export function windowOf(
  window: CircuitWindow | undefined,
  rate: { readonly windowMs: number | undefined } | undefined,
  slowRule: boolean,
): CircuitWindow {
  const windowMs = rate?.windowMs;
  if (window !== undefined) {
    if (windowMs !== undefined) throw new TypeError('expected "failureRate.windowMs" or "window", not both');
    return window;
  }
  if (windowMs !== undefined) return { type: 'time', sizeMs: windowMs };
  if (rate !== undefined) throw new TypeError('expected "failureRate.windowMs" or a "window"');
  return slowRule ? { type: 'time', sizeMs: 10_000 } : { type: 'count', size: 100 };
}

/** 20 by default, at most a count window's size (a rate over more calls could never be judged). */
export function minimumThroughputOf(given: number | undefined, window: CircuitWindow): number {
  if (window.type === 'time') return given ?? 20;
  if (given === undefined) return Math.min(20, window.size);
  if (given > window.size) {
    throw new TypeError(
      `expected "failureRate.minimumThroughput" (${given}) to be at most "window.size" (${window.size})`,
    );
  }
  return given;
}

/** The window a {@link CircuitWindow} describes, keeping latencies when `trackLatency`. */
export function openWindow(window: CircuitWindow, clock: Clock, trackLatency: boolean): OutcomeWindow {
  return window.type === 'count'
    ? new CountWindow(window.size, trackLatency)
    : new TimeWindow(clock, window.sizeMs, trackLatency);
}
