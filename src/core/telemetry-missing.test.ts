/**
 * `@opentelemetry/api` not installed (its load fails): nothing is reported and nothing fails, span
 * events included, and the missing package is looked for once, not at every call or registration.
 * (Its own file: the API, once loaded or found missing, is kept for the process.)
 */
import Module from 'node:module';
import { afterAll, expect, it } from 'vitest';
import { retry } from '../retry/retry.js';
import { countEvent, telemetry, telemetryOptions } from './telemetry.js';

type Load = (request: string, ...rest: unknown[]) => unknown;
const loader = Module as unknown as { _load: Load };
const load = loader._load;
let attempts = 0;
loader._load = function (this: unknown, request: string, ...rest: unknown[]) {
  if (request === '@opentelemetry/api') {
    attempts++;
    throw Object.assign(new Error(`Cannot find module '${request}'`), { code: 'MODULE_NOT_FOUND' });
  }
  return load.call(this, request, ...rest);
};
const key = Symbol.for('opentelemetry.js.api.1');
const slot = globalThis as unknown as Record<symbol, unknown>;
afterAll(() => {
  loader._load = load;
  telemetryOptions({});
  delete slot[key];
});

it('reports nothing and fails nothing without the API, and looks for it once', async () => {
  // Another copy of the API (the application's) has registered a provider.
  slot[key] = { version: '1.9.0', metrics: { getMeter() {} } };
  expect(telemetry()).toBeUndefined();
  (slot[key] as { metrics: unknown }).metrics = { getMeter() {} };
  expect(telemetry()).toBeUndefined();
  telemetryOptions({ spanEvents: true });
  expect(() => countEvent('retry', 'retry', 'orders', new Error('down'))).not.toThrow();
  expect(await retry({ maxAttempts: 1 }).execute(() => 'ok')).toBe('ok');
  expect(attempts).toBe(1);
});
