/**
 * The instruments as the real OpenTelemetry metrics SDK exports them: their meter, names,
 * descriptions and units are a contract (docs/observability.md). (Its own file: the instruments
 * are created when telemetry is first resolved, which this test does.)
 */
import { expect, it } from 'vitest';
import { telemetry } from '../../src/core/telemetry.js';
import { bulkhead, circuitBreaker } from '../../src/index.js';
import { FakeClock } from '../../src/testing/index.js';
import { useTestMeterProvider } from '../support/otel-metrics.js';

const { reader } = useTestMeterProvider();

it('describes every instrument as docs/observability.md says, on the meter "bulwark"', async () => {
  const clock = new FakeClock();
  circuitBreaker({ name: 'payments', clock }); // a point on each gauge
  bulkhead({ name: 'edge', maxConcurrent: 1, maxQueue: 0, clock });
  const t = telemetry()!; // resolved now: the instruments are created on the meter
  t.events.add(1, { 'bulwark.event': 'retry' }); // and a record on each
  t.attemptDuration.record(0.001, { 'bulwark.policy': 'p' });
  t.pipelineDuration.record(0.001, { 'bulwark.policy': 'p' });
  const { resourceMetrics } = await reader.collect();
  expect(resourceMetrics.scopeMetrics.map((scope) => scope.scope.name)).toEqual(['bulwark']);
  const descriptors = Object.fromEntries(
    resourceMetrics.scopeMetrics[0]!.metrics.map(({ descriptor }) => [
      descriptor.name,
      { description: descriptor.description, unit: descriptor.unit },
    ]),
  );
  expect(descriptors).toEqual({
    'bulwark.events': {
      description: 'What the resilience policies did: retries, refusals, state changes, ...',
      unit: '{event}',
    },
    'bulwark.attempt.duration': {
      description: 'Duration of each call a policy ran, admission included',
      unit: 's',
    },
    'bulwark.pipeline.duration': {
      description: 'Duration of each call through a pipeline of policies',
      unit: 's',
    },
    'bulwark.circuit.state': {
      description: 'Circuit breaker state: 0 closed, 1 open, 2 half-open, 3 isolated',
      unit: '',
    },
    'bulwark.in_flight': { description: 'Calls running inside an admission policy', unit: '' },
    'bulwark.queue.depth': { description: 'Calls waiting for admission', unit: '' },
  });
});
