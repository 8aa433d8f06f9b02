/**
 * The real OpenTelemetry metrics SDK for a test file: a MeterProvider registered globally with an
 * in-memory reader the test collects from itself, unregistered and shut down after the file.
 */
import { metrics } from '@opentelemetry/api';
import { type DataPoint, MeterProvider, type MetricData, MetricReader } from '@opentelemetry/sdk-metrics';
import { afterAll } from 'vitest';

/** A reader collected by the test itself: it exports nothing on its own. */
class TestReader extends MetricReader {
  protected override async onForceFlush(): Promise<void> {}
  protected override async onShutdown(): Promise<void> {}
}

/** What one collection gave: every metric, the one named so, and the SDK's collection errors. */
export interface Collected {
  readonly all: readonly MetricData[];
  named(name: string): MetricData | undefined;
  readonly errors: readonly unknown[];
}

/** A registered test MeterProvider, from {@link useTestMeterProvider}. */
export interface TestMeterProvider {
  /** Its reader (for what {@link collect} leaves out, e.g. the scopes). */
  readonly reader: MetricReader;
  /** Collects every instrument now. */
  collect(): Promise<Collected>;
}

/**
 * Registers a MeterProvider with a {@link TestReader} as the global one now (call it where the
 * registration should happen: policies built before it test the lazy resolution), and unregisters
 * and shuts it down after the file.
 */
export function useTestMeterProvider(): TestMeterProvider {
  const reader = new TestReader();
  const provider = new MeterProvider({ readers: [reader] });
  metrics.setGlobalMeterProvider(provider);
  afterAll(async () => {
    metrics.disable();
    await provider.shutdown();
  });
  return {
    reader,
    async collect() {
      const { resourceMetrics, errors } = await reader.collect();
      const all = resourceMetrics.scopeMetrics.flatMap((scope) => scope.metrics);
      return { all, named: (name) => all.find((metric) => metric.descriptor.name === name), errors };
    },
  };
}

/** Data points of a counter or gauge as "attr=value,…: value" lines, sorted (none: []). */
export function pointLines(points: readonly DataPoint<number>[] | undefined): string[] {
  return (points ?? [])
    .map(
      (point) =>
        `${Object.entries(point.attributes)
          .map(([key, value]) => `${key}=${String(value)}`)
          .join(',')}: ${point.value}`,
    )
    .sort();
}
