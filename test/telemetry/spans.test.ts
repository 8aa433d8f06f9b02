/**
 * Span events (`telemetryOptions({ spanEvents: true })`), with the real tracing SDK and the
 * AsyncLocalStorage context manager: retries, a breaker's refusal and a hedge show on the span
 * active when they happen, as `bulwark.<event>` with the counter's attributes; nothing is recorded
 * with the option off or without an active span, and no span is started per call.
 */
import { context, metrics, trace } from '@opentelemetry/api';
import { AsyncLocalStorageContextManager } from '@opentelemetry/context-async-hooks';
import { MeterProvider } from '@opentelemetry/sdk-metrics';
import {
  BasicTracerProvider,
  InMemorySpanExporter,
  SimpleSpanProcessor,
} from '@opentelemetry/sdk-trace-base';
import { afterAll, afterEach, expect, it } from 'vitest';
import { circuitBreaker, ResilienceError, retry, telemetryOptions } from '../../src/index.js';
import { FakeClock } from '../../src/testing/index.js';

const exporter = new InMemorySpanExporter();
const provider = new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(exporter)] });
const contextManager = new AsyncLocalStorageContextManager().enable();
context.setGlobalContextManager(contextManager);
trace.setGlobalTracerProvider(provider);
const tracer = trace.getTracer('test');
afterEach(() => {
  telemetryOptions({});
  exporter.reset();
});
afterAll(async () => {
  trace.disable();
  context.disable();
  await provider.shutdown();
});

const unavailable = () => new ResilienceError('down', { code: 'E_DOWN', kind: 'unavailable' });

async function request(spanEvents: boolean): Promise<{ name: string; attributes: unknown }[]> {
  telemetryOptions({ spanEvents });
  const clock = new FakeClock();
  const policy = retry({ name: 'orders-api', maxAttempts: 3, backoff: () => 10, clock });
  const breaker = circuitBreaker({ name: 'payments', failureThreshold: 1, resetTimeoutMs: 60_000, clock });
  await tracer.startActiveSpan('request', async (span) => {
    let calls = 0;
    const call = policy.execute(async () => {
      calls++;
      if (calls < 3) throw unavailable();
      return 'ok';
    });
    await clock.advance(20);
    await call;
    await breaker.execute(() => Promise.reject(unavailable())).catch(() => {});
    await breaker.execute(() => 'refused').catch(() => {});
    span.end();
  });
  const spans = exporter.getFinishedSpans();
  expect(spans.map((s) => s.name)).toEqual(['request']); // no span per call
  return spans[0]!.events.map(({ name, attributes }) => ({ name, attributes }));
}

it('records nothing by default (before any telemetryOptions call)', async () => {
  const clock = new FakeClock();
  const breaker = circuitBreaker({ failureThreshold: 1, clock });
  await tracer.startActiveSpan('request', async (span) => {
    await breaker.execute(() => Promise.reject(unavailable())).catch(() => {});
    await breaker.execute(() => 'refused').catch(() => {});
    span.end();
  });
  expect(exporter.getFinishedSpans().map((span) => span.events)).toEqual([[]]);
});

it('records retries and a breaker refusal on the active span, with the counter attributes', async () => {
  expect(await request(true)).toEqual([
    {
      name: 'bulwark.retry',
      attributes: {
        'bulwark.event': 'retry',
        'bulwark.pattern': 'retry',
        'bulwark.policy': 'orders-api',
        'error.type': 'E_DOWN',
      },
    },
    {
      name: 'bulwark.retry',
      attributes: {
        'bulwark.event': 'retry',
        'bulwark.pattern': 'retry',
        'bulwark.policy': 'orders-api',
        'error.type': 'E_DOWN',
      },
    },
    {
      name: 'bulwark.state_change',
      attributes: {
        'bulwark.event': 'state_change',
        'bulwark.pattern': 'circuit-breaker',
        'bulwark.policy': 'payments',
      },
    },
    {
      name: 'bulwark.rejected',
      attributes: {
        'bulwark.event': 'rejected',
        'bulwark.pattern': 'circuit-breaker',
        'bulwark.policy': 'payments',
        'error.type': 'ERR_CIRCUIT_OPEN',
      },
    },
  ]);
});

it('records nothing with the option off, or outside any span', async () => {
  expect(await request(false)).toEqual([]);
  exporter.reset();
  telemetryOptions({ spanEvents: true });
  const clock = new FakeClock();
  const breaker = circuitBreaker({ failureThreshold: 1, clock });
  await breaker.execute(() => Promise.reject(unavailable())).catch(() => {});
  await breaker.execute(() => 'refused').catch(() => {});
  expect(exporter.getFinishedSpans()).toEqual([]); // no span started for the calls themselves
});

it('records nothing with the option off while metrics flow, nor once it is reset by telemetryOptions({})', async () => {
  const meterProvider = new MeterProvider();
  metrics.setGlobalMeterProvider(meterProvider);
  try {
    expect(await request(false)).toEqual([]);
  } finally {
    metrics.disable();
    await meterProvider.shutdown();
  }
  exporter.reset();
  telemetryOptions({ spanEvents: true });
  telemetryOptions({}); // back to the default: off
  const clock = new FakeClock();
  const breaker = circuitBreaker({ failureThreshold: 1, clock });
  await tracer.startActiveSpan('request', async (span) => {
    await breaker.execute(() => Promise.reject(unavailable())).catch(() => {});
    await breaker.execute(() => 'refused').catch(() => {});
    span.end();
  });
  expect(exporter.getFinishedSpans().map((span) => span.events)).toEqual([[]]);
});

it('refuses unknown options and a non-boolean spanEvents', () => {
  expect(() => telemetryOptions({ spanEvent: true } as never)).toThrow(
    /unknown telemetry option "spanEvent"/,
  );
  expect(() => telemetryOptions({ spanEvents: 'yes' } as never)).toThrow(/"spanEvents" to be a boolean/);
});
