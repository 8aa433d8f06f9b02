/**
 * Resolving the OpenTelemetry instruments lazily: the registered provider's instruments as soon
 * as it is registered (and again after a change), nothing after it is disabled; and the
 * `error.type` of an error. Before the API's global slot exists it is looked for on the first and
 * every 64th call (telemetry-sampling.test.ts); an API that refuses the registration is in
 * telemetry-refused.test.ts; the figures a scripted run exports are in test/telemetry/.
 */
import { metrics } from '@opentelemetry/api';
import { MeterProvider } from '@opentelemetry/sdk-metrics';
import { afterEach, expect, it } from 'vitest';
import { ResilienceError } from './errors.js';
import { errorType, telemetry } from './telemetry.js';

afterEach(() => metrics.disable());

it('resolves the registered provider at once, the same instruments while it stays, none once disabled', async () => {
  const first = new MeterProvider();
  metrics.setGlobalMeterProvider(first);
  const resolved = telemetry();
  expect(resolved).toBeDefined();
  expect(telemetry()).toBe(resolved); // nothing changed: nothing resolved again
  metrics.disable();
  expect(telemetry()).toBeUndefined();
  metrics.setGlobalMeterProvider(new MeterProvider());
  const again = telemetry();
  expect(again).toBeDefined();
  expect(again).not.toBe(resolved);
  await first.shutdown();
});

it('error.type is the error code, else the class name, else _OTHER; never the message', () => {
  expect(errorType(new ResilienceError('secret 42', { code: 'E_DOWN', kind: 'unavailable' }))).toBe('E_DOWN');
  expect(errorType(new TypeError('user@example.com'))).toBe('TypeError');
  expect(errorType(Object.assign(new Error('x'), { code: 'ECONNRESET' }))).toBe('ECONNRESET');
  expect(errorType({ message: 'plain object' })).toBe('_OTHER');
  expect(errorType('a string')).toBe('String');
  expect(errorType(null)).toBe('_OTHER');
  expect(errorType(undefined)).toBe('_OTHER');
  // A code that is not a non-empty string is no code; a class without a name, no class name.
  expect(errorType(Object.assign(new Error('x'), { code: 503 }))).toBe('Error');
  expect(errorType(Object.assign(new Error('x'), { code: '' }))).toBe('Error');
  const Anonymous = (() => class extends Error {})();
  expect(errorType(new Anonymous('x'))).toBe('_OTHER');
  expect(errorType({ constructor: { name: 42 } })).toBe('_OTHER');
  expect(errorType(Object.create(null))).toBe('_OTHER');
});
