/**
 * The observable gauges with the real OpenTelemetry metrics SDK (an in-memory reader), in a
 * process where no circuit breaker was ever built: a gauge with no policy to read reports nothing
 * and the collection has no error, and every policy of a gauge is observed, not just the last.
 * (Its own file: the gauges' policies are registered for the process.)
 */
import { type DiagLogger, diag } from '@opentelemetry/api';
import type { DataPoint } from '@opentelemetry/sdk-metrics';
import { afterAll, expect, it } from 'vitest';
import { bulkhead, concurrencyLimit, retry } from '../../src/index.js';
import { FakeClock } from '../../src/testing/index.js';
import { deferred } from '../support/deferred.js';
import { useTestMeterProvider } from '../support/otel-metrics.js';

const { collect } = useTestMeterProvider();
afterAll(() => diag.disable());

/** What the SDK complains about (an observed value that is not a number, ...). */
const complaints: unknown[][] = [];
const record = (...args: unknown[]) => {
  complaints.push(args);
};
const logger: DiagLogger = { error: record, warn: record, info() {}, debug() {}, verbose() {} };
diag.setLogger(logger);

it('observes every policy of a gauge, only the gauges a policy offers, and nothing (without error) on a gauge no policy reports', async () => {
  const clock = new FakeClock();
  const first = bulkhead({ name: 'first', maxConcurrent: 2, maxQueue: 0, clock });
  const second = concurrencyLimit(3, { name: 'second', clock });
  const release = deferred<void>();
  const calls = [first.execute(() => release.promise), second.execute(() => release.promise)];
  await clock.advance(0);
  retry({ name: 'neither', clock }); // reports no gauge: nothing to read
  const collected = await collect();
  expect(collected.errors).toEqual([]);
  expect(complaints).toEqual([]);
  const points = (name: string) =>
    ((collected.named(name)?.dataPoints ?? []) as DataPoint<number>[])
      .map(
        (point) =>
          `${point.attributes['bulwark.pattern']}/${point.attributes['bulwark.policy']}: ${point.value}`,
      )
      .sort();
  expect(points('bulwark.in_flight')).toEqual(['bulkhead/first: 1', 'concurrency-limit/second: 1']);
  expect(points('bulwark.queue.depth')).toEqual(['bulkhead/first: 0']);
  expect(points('bulwark.circuit.state')).toEqual([]);
  release.resolve();
  await Promise.all(calls);
});
