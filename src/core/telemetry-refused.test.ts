/**
 * The application's global OpenTelemetry API is an older minor version than our copy: our copy
 * refuses its registration (the API's own version check), and we report nothing, silently.
 * (Its own file: the global slot, once seen, is kept for the process.)
 */
import { MeterProvider } from '@opentelemetry/sdk-metrics';
import { expect, it } from 'vitest';
import { telemetry } from './telemetry.js';

it('reports nothing when the API refuses the registration (an application copy older than ours)', () => {
  const key = Symbol.for('opentelemetry.js.api.1');
  (globalThis as unknown as Record<symbol, unknown>)[key] = {
    version: '1.0.0',
    metrics: new MeterProvider(),
  };
  expect(telemetry()).toBeUndefined();
  expect(telemetry()).toBeUndefined();
});
