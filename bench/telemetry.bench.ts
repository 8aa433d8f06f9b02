/**
 * What telemetry costs per call, around a resolved async no-op: each policy measured with no
 * OpenTelemetry SDK registered, then again with the real metrics SDK registered (an in-memory
 * reader nobody collects from: the cost of recording, not of exporting). The no-SDK cost against
 * the code before telemetry is an instruction count (callgrind, BENCHMARKS.md): wall-clock
 * differences of a few percent are noise on this machine.
 */
import { metrics } from '@opentelemetry/api';
import { MeterProvider, MetricReader } from '@opentelemetry/sdk-metrics';
import { bulkhead, circuitBreaker, pipeline, retry, timeout } from 'bulwark';
import { type Case, measureAll, ns, table } from './support.js';

class IdleReader extends MetricReader {
  protected override async onForceFlush(): Promise<void> {}
  protected override async onShutdown(): Promise<void> {}
}

const noop = async () => 1;

function cases(): Case[] {
  const policies = {
    retry: retry({ maxAttempts: 3 }),
    breaker: circuitBreaker(),
    bulkhead: bulkhead({ maxConcurrent: 10, maxQueue: 10 }),
    pipeline: pipeline(timeout(1_000), retry({ maxAttempts: 3 }), circuitBreaker()),
  };
  return [
    { name: 'bare call', fn: () => noop() },
    { name: 'retry', fn: () => policies.retry.execute(noop) },
    { name: 'circuitBreaker', fn: () => policies.breaker.execute(noop) },
    { name: 'bulkhead', fn: () => policies.bulkhead.execute(noop) },
    { name: 'pipeline(timeout, retry, circuitBreaker)', fn: () => policies.pipeline.execute(noop) },
  ];
}

export default async function telemetryBench(): Promise<string> {
  const off = await measureAll(cases());
  const provider = new MeterProvider({ readers: [new IdleReader()] });
  metrics.setGlobalMeterProvider(provider);
  const on = await measureAll(cases());
  metrics.disable();
  await provider.shutdown();
  const rows = off.map((result, i) => {
    const withSdk = on[i]!;
    return [result.name, ns(result.avgNs), ns(withSdk.avgNs), ns(withSdk.avgNs - result.avgNs)];
  });
  const report = `## Telemetry cost per call (resolved async no-op)\n\n${table(
    ['case', 'no SDK', 'metrics SDK registered', 'added by recording'],
    rows,
  )}`;
  console.log(report);
  return report;
}
