/**
 * Telemetry with the real OpenTelemetry metrics SDK (an in-memory reader): after a scripted run —
 * 2 retries then success, a breaker that opens and closes, 3 rate-limited calls, 1 shed — the
 * exported figures are exact. The retry policy is built before the SDK is registered (OTel JS has
 * no delegating MeterProvider: the instruments must be resolved lazily for it to report).
 */
import type { DataPoint, Histogram } from '@opentelemetry/sdk-metrics';
import { expect, it } from 'vitest';
import {
  bulkhead,
  circuitBreaker,
  fallback,
  hedge,
  pipeline,
  ResilienceError,
  rateLimiter,
  retry,
  timeout,
} from '../../src/index.js';
import { loadShedder } from '../../src/node/index.js';
import { FakeClock } from '../../src/testing/index.js';
import { deferred } from '../support/deferred.js';
import { pointLines, useTestMeterProvider } from '../support/otel-metrics.js';

const clock = new FakeClock();
const unavailable = () => new ResilienceError('down', { code: 'E_DOWN', kind: 'unavailable' });
const builtBefore = retry({ name: 'orders-api', maxAttempts: 3, backoff: () => 10, clock });

const { collect } = useTestMeterProvider();
const lines = pointLines;

it('exports exact figures after a scripted run, from a policy built before the SDK was registered too', async () => {
  // 2 retries, then success.
  let calls = 0;
  const retried = builtBefore.execute(async () => {
    calls++;
    if (calls < 3) throw unavailable();
    return 'ok';
  });
  await clock.advance(100);
  expect(await retried).toBe('ok');

  // A breaker that opens (2 failures), refuses once, half-opens after 1 s and closes on success.
  const breaker = circuitBreaker({ name: 'payments', failureThreshold: 2, resetTimeoutMs: 1_000, clock });
  for (let i = 0; i < 2; i++) await breaker.execute(() => Promise.reject(unavailable())).catch(() => {});
  await breaker.execute(() => 'refused').catch(() => {});
  await clock.advance(1_000);
  expect(await breaker.execute(() => 'probe')).toBe('probe');

  // 3 calls rate-limited.
  const limited = rateLimiter({ name: 'per-user', limit: 1, periodMs: 60_000, clock }).policy('user:1');
  for (let i = 0; i < 4; i++) await limited.execute(() => 'ok').catch(() => {});

  // 1 shed.
  let heapUsedRatio = 0.1;
  const shedder = loadShedder({ limits: { heapUsedRatio: 0.9 }, source: () => ({ heapUsedRatio }), clock });
  const low = shedder.policy('low');
  heapUsedRatio = 0.95;
  await clock.advance(1_000);
  await low.execute(() => 'ok').catch(() => {});

  const { named } = await collect();
  const events = named('bulwark.events')!;
  expect(lines(events.dataPoints as DataPoint<number>[])).toEqual(
    [
      'bulwark.event=retry,bulwark.pattern=retry,bulwark.policy=orders-api,error.type=E_DOWN: 2',
      'bulwark.event=state_change,bulwark.pattern=circuit-breaker,bulwark.policy=payments: 3',
      'bulwark.event=rejected,bulwark.pattern=circuit-breaker,bulwark.policy=payments,error.type=ERR_CIRCUIT_OPEN: 1',
      'bulwark.event=rate_limited,bulwark.pattern=rate-limit,bulwark.policy=per-user,error.type=ERR_RATE_LIMITED: 3',
      'bulwark.event=shed,bulwark.pattern=load-shedder,bulwark.policy=load-shedder,error.type=ERR_LOAD_SHED: 1',
    ].sort(),
  );

  // Every call a policy ran (a refusal runs nothing: it is an event), by outcome, in seconds on
  // the policy's clock.
  const durations = named('bulwark.attempt.duration')!;
  expect(durations.descriptor.unit).toBe('s');
  const counts = (durations.dataPoints as DataPoint<Histogram>[])
    .map(
      (point) =>
        `${point.attributes['bulwark.policy']}/${point.attributes['bulwark.outcome']}: ${point.value.count}`,
    )
    .sort();
  expect(counts).toEqual(
    ['orders-api/success: 1', 'payments/failure: 2', 'payments/success: 1', 'per-user/success: 1'].sort(),
  );
  const retryPoint = (durations.dataPoints as DataPoint<Histogram>[]).find(
    (point) => point.attributes['bulwark.policy'] === 'orders-api',
  )!;
  expect(retryPoint.value.sum).toBeCloseTo(0.02); // two 10 ms backoffs on the fake clock
  expect(retryPoint.value.buckets.boundaries[0]).toBe(0.0005); // fitted to sub-second calls

  // The breaker's state gauge reads closed again.
  const state = named('bulwark.circuit.state')!;
  const payments = (state.dataPoints as DataPoint<number>[]).find(
    (p) => p.attributes['bulwark.policy'] === 'payments',
  );
  expect(payments?.value).toBe(0);
});

it('counts hedges started and rate-limit store failures', async () => {
  const before = lines(((await collect()).named('bulwark.events')?.dataPoints ?? []) as DataPoint<number>[]);
  const hedged = hedge({ name: 'search', attempts: 2, delayMs: 10, clock });
  const slow = hedged.execute(() => clock.sleep(50).then(() => 'done'));
  await clock.advance(50);
  expect(await slow).toBe('done');
  const down = () => Promise.reject(new Error('ECONNREFUSED'));
  const limiter = rateLimiter({
    name: 'shared',
    limit: 1,
    periodMs: 1_000,
    store: { take: down, peek: down, reset: down },
    storeFailure: 'fail-open',
    clock,
  });
  expect((await limiter.take('k')).fallback).toBe('fail-open');
  const after = lines((await collect()).named('bulwark.events')!.dataPoints as DataPoint<number>[]);
  expect(after.filter((line) => !before.includes(line))).toEqual([
    'bulwark.event=hedge,bulwark.pattern=hedge,bulwark.policy=search: 1',
    'bulwark.event=store_error,bulwark.pattern=rate-limit,bulwark.policy=shared,error.type=ERR_STORE_UNAVAILABLE: 1',
  ]);
});

it('records each call through a pipeline on bulwark.pipeline.duration, under its name', async () => {
  const checkout = pipeline(
    { name: 'checkout', clock },
    timeout(1_000, { clock }),
    retry({ backoff: () => 25, clock }),
  );
  let calls = 0;
  const call = checkout.execute(async () => {
    calls++;
    if (calls === 1) throw unavailable();
    return 'ok';
  });
  await clock.advance(25);
  expect(await call).toBe('ok');
  await pipeline({ clock }, retry({ maxAttempts: 1, clock }))
    .execute(() => Promise.reject(unavailable()))
    .catch(() => {});
  const pipelines = (await collect()).named('bulwark.pipeline.duration')!;
  expect(pipelines.descriptor.unit).toBe('s');
  const points = (pipelines.dataPoints as DataPoint<Histogram>[])
    .map((point) => ({
      policy: point.attributes['bulwark.policy'],
      outcome: point.attributes['bulwark.outcome'],
      count: point.value.count,
      sum: point.value.sum,
    }))
    .sort((a, b) => String(a.policy).localeCompare(String(b.policy)));
  expect(points).toEqual([
    { policy: 'checkout', outcome: 'success', count: 1, sum: 0.025 },
    { policy: 'pipeline', outcome: 'failure', count: 1, sum: 0 },
  ]);
});

it('counts a refusal of shedder.admit (the HTTP adapters use it) as shed, once', async () => {
  const before = lines(((await collect()).named('bulwark.events')?.dataPoints ?? []) as DataPoint<number>[]);
  let heapUsedRatio = 0.1;
  const shedder = loadShedder({
    name: 'edge',
    limits: { heapUsedRatio: 0.9 },
    source: () => ({ heapUsedRatio }),
    clock,
  });
  heapUsedRatio = 0.95;
  await clock.advance(1_000);
  expect(() => shedder.admit('low')).toThrow();
  const after = lines((await collect()).named('bulwark.events')!.dataPoints as DataPoint<number>[]);
  expect(after.filter((line) => !before.includes(line))).toEqual([
    'bulwark.event=shed,bulwark.pattern=load-shedder,bulwark.policy=edge,error.type=ERR_LOAD_SHED: 1',
  ]);
});

it('observes the calls in flight and queued of each bulkhead, under its name', async () => {
  const edge = bulkhead({ name: 'edge', maxConcurrent: 2, maxQueue: 5, clock });
  const release = deferred<void>();
  const calls = Array.from({ length: 3 }, () => edge.execute(() => release.promise));
  await clock.advance(0);
  const gauge = async (name: string) =>
    ((await collect()).named(name)!.dataPoints as DataPoint<number>[]).find(
      (point) => point.attributes['bulwark.policy'] === 'edge',
    );
  expect(await gauge('bulwark.in_flight')).toMatchObject({
    attributes: { 'bulwark.pattern': 'bulkhead', 'bulwark.policy': 'edge' },
    value: 2,
  });
  expect((await gauge('bulwark.queue.depth'))?.value).toBe(1);
  release.resolve();
  await Promise.all(calls);
  expect((await gauge('bulwark.in_flight'))?.value).toBe(0);
  expect((await gauge('bulwark.queue.depth'))?.value).toBe(0);
});

it('records a call whose failure a fallback answered as a failure', async () => {
  const answered = fallback(() => 'default', { name: 'answered', clock });
  expect(await answered.execute(() => Promise.reject(unavailable()))).toBe('default');
  const durations = (await collect()).named('bulwark.attempt.duration')!;
  const points = (durations.dataPoints as DataPoint<Histogram>[]).filter(
    (point) => point.attributes['bulwark.policy'] === 'answered',
  );
  expect(points.map((point) => [point.attributes['bulwark.outcome'], point.value.count])).toEqual([
    ['failure', 1],
  ]);
});

it('observes each breaker state as its number, and no calls in flight for a breaker', async () => {
  const breaker = circuitBreaker({ name: 'states', failureThreshold: 1, resetTimeoutMs: 1_000, clock });
  const gauge = async (name: string) =>
    ((await collect()).named(name)?.dataPoints as DataPoint<number>[] | undefined)?.find(
      (point) => point.attributes['bulwark.policy'] === 'states',
    );
  expect((await gauge('bulwark.circuit.state'))?.value).toBe(0);
  await breaker.execute(() => Promise.reject(unavailable())).catch(() => {});
  expect((await gauge('bulwark.circuit.state'))?.value).toBe(1);
  await clock.advance(1_000);
  const probe = deferred<string>();
  const probing = breaker.execute(() => probe.promise);
  expect(breaker.state).toBe('half-open');
  expect((await gauge('bulwark.circuit.state'))?.value).toBe(2);
  probe.resolve('ok');
  await probing;
  breaker.isolate();
  expect((await gauge('bulwark.circuit.state'))?.value).toBe(3);
  expect(await gauge('bulwark.in_flight')).toBeUndefined();
  expect(await gauge('bulwark.queue.depth')).toBeUndefined();
});
