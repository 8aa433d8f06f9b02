/**
 * Before the OpenTelemetry API's global slot exists, `telemetry()` looks for it on the first call
 * and then on every 64th (reading `globalThis` costs more than a policy's own bookkeeping): a
 * provider registered after calls began is found within 64 calls, and from then on at once.
 * (Its own file: the slot, once created, lives for the process.)
 */
import { metrics } from '@opentelemetry/api';
import { MeterProvider } from '@opentelemetry/sdk-metrics';
import { afterAll, expect, it } from 'vitest';
import { telemetry } from './telemetry.js';

afterAll(() => metrics.disable());

it('finds a provider registered after calls began within 64 calls, then follows it at once', () => {
  expect(telemetry()).toBeUndefined(); // call 1: looked for, no slot
  metrics.setGlobalMeterProvider(new MeterProvider());
  const answers = Array.from({ length: 64 }, () => telemetry()); // calls 2 … 65
  expect(answers.slice(0, 63).every((t) => t === undefined)).toBe(true);
  expect(answers[63]).toBeDefined(); // call 65 looks again
  metrics.disable();
  expect(telemetry()).toBeUndefined(); // the slot is known now: followed on every call
  metrics.setGlobalMeterProvider(new MeterProvider());
  expect(telemetry()).toBeDefined();
});
