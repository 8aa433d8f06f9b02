import { describe, expect, it, vi } from 'vitest';
import { bulkhead } from '../admission/bulkhead.js';
import { concurrencyLimit } from '../admission/concurrency-limit.js';
import { loadShedder } from '../admission/load-shedder.js';
import { circuitBreaker } from '../circuit-breaker/circuit-breaker.js';
import { inferredResilient, smartResilience } from '../circuit-breaker/smart.js';
import { hedge } from '../hedge/hedge.js';
import { rateLimiter } from '../rate-limit/rate-limiter.js';
import { fallback } from '../retry/fallback.js';
import { retry, retryAll, retryIf } from '../retry/retry.js';
import { FakeClock } from '../testing/fake-clock.js';
import { timeout } from '../timeout/timeout.js';
import { pipeline } from './pipeline.js';
import { composable, type Policy } from './policy.js';

const clock = new FakeClock();

/** Every built-in policy, in each shape whose `execute` takes a different path. */
const factories: readonly (readonly [string, () => Policy<unknown>])[] = [
  ['timeout', () => timeout(100, { clock })],
  ['timeout (aggressive)', () => timeout(100, { clock, mode: 'aggressive' })],
  ['retry', () => retry({ clock })],
  ['retry (maxElapsedMs)', () => retry({ clock, maxElapsedMs: 1_000 })],
  ['retryIf', () => retryIf(() => true, { clock })],
  ['retryAll', () => retryAll({ clock })],
  ['fallback', () => fallback(() => 'fallback')],
  ['circuitBreaker', () => circuitBreaker({ clock })],
  ['circuitBreaker (callTimeoutMs)', () => circuitBreaker({ clock, callTimeoutMs: 100 })],
  ['smartResilience', () => smartResilience({ clock })],
  ['inferredResilient', () => inferredResilient({ clock })],
  ['bulkhead', () => bulkhead({ maxConcurrent: 1, maxQueue: 1, clock })],
  ['concurrencyLimit', () => concurrencyLimit(1)],
  ['loadShedder policy', () => loadShedder({ limits: { inFlight: 10 }, clock }).policy('normal')],
  ['rateLimiter policy', () => rateLimiter({ limit: 10, periodMs: 1_000, clock }).policy('k')],
  [
    'rateLimiter policy (wait)',
    () => rateLimiter({ limit: 10, periodMs: 1_000, clock }).policy('k', { wait: true }),
  ],
  ['hedge', () => hedge({ clock, delayMs: 10 })],
  ['hedge (attempts: 1)', () => hedge({ clock, attempts: 1 })],
  ['hedge (variants)', () => hedge({ clock, variants: [() => 'ok', () => 'ok'] })],
  ['pipeline()', () => pipeline()],
  [
    'pipeline(timeout, retry, bulkhead)',
    () =>
      pipeline(timeout(100, { clock }), retry({ clock }), bulkhead({ maxConcurrent: 1, maxQueue: 1, clock })),
  ],
  [
    'composable(foreign)',
    () =>
      composable({
        execute: (op) => Promise.resolve(op({ signal: new AbortController().signal, attempt: 1 })),
      }),
  ],
];

const notSignals: readonly (readonly [string, unknown])[] = [
  ['a look-alike object', { aborted: false }],
  ['an aborted look-alike', { aborted: true, reason: 'x', addEventListener() {}, removeEventListener() {} }],
  ['null', null],
  ['a string', 'signal'],
  ['an AbortController', new AbortController()],
];

describe.each(factories)('%s: a signal that is not an AbortSignal', (_, make) => {
  it.each(notSignals)('%s: a TypeError rejection (never a throw), and nothing runs', async (_, signal) => {
    const policy = make();
    const op = vi.fn(() => 'ran');
    let result: Promise<unknown> | undefined;
    expect(() => {
      result = policy.execute(op, { signal } as never);
    }).not.toThrow();
    await expect(result).rejects.toThrow(TypeError);
    await expect(result).rejects.toThrow(/expected "signal" to be an AbortSignal/);
    expect(op).not.toHaveBeenCalled();
    // The policy is unharmed: a good call still runs (a slot was not lost, nothing stayed queued).
    await expect(policy.execute(() => 'ok')).resolves.toBe('ok');
  });
});

describe.each([
  ['bulkhead', () => bulkhead({ maxConcurrent: 1, maxQueue: 2, clock })],
  ['concurrencyLimit', () => concurrencyLimit(1)],
] as const)('%s: a bad signal while every slot is busy', (_, make) => {
  it('is refused before queueing; the holder keeps its value and the slot frees for the next caller', async () => {
    const policy = make();
    let release!: (value: string) => void;
    const held = policy.execute(() => new Promise<string>((resolve) => (release = resolve)));
    const op = vi.fn(() => 'ran');
    await expect(policy.execute(op, { signal: { aborted: false } } as never)).rejects.toThrow(TypeError);
    release('held');
    await expect(held).resolves.toBe('held');
    expect(op).not.toHaveBeenCalled();
    expect(policy.inFlight).toBe(0);
    await expect(policy.execute(() => 'next')).resolves.toBe('next');
    expect(policy.inFlight).toBe(0);
  });
});
