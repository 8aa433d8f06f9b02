import { describe, expect, it } from 'vitest';
import { ResilienceError } from '../core/errors.js';
import { FakeClock } from '../testing/fake-clock.js';
import { circuitBreaker } from './circuit-breaker.js';
import { CircuitOpenError } from './errors.js';

const down = () => Promise.reject(new ResilienceError('down', { code: 'E_DOWN', kind: 'unavailable' }));
const refusal = (call: Promise<unknown>) =>
  call.then(
    () => undefined,
    (e: unknown) => e as CircuitOpenError,
  );

describe('CircuitOpenError messages say why the call was refused', () => {
  it('open: how long calls stay refused', async () => {
    const clock = new FakeClock();
    const breaker = circuitBreaker({ clock, failureThreshold: 1, resetTimeoutMs: 1_000 });
    await breaker.execute(down).catch(() => {});
    await clock.advance(400);
    const error = await refusal(breaker.execute(() => 'x'));
    expect(error?.message).toBe('circuit open: calls refused for 600 ms more');
    expect(error?.state).toBe('open');
  });

  it('half-open: every probe slot is taken', async () => {
    const clock = new FakeClock();
    const breaker = circuitBreaker({ clock, failureThreshold: 1, resetTimeoutMs: 100 });
    await breaker.execute(down).catch(() => {});
    await clock.advance(100);
    const probe = breaker.execute(() => clock.sleep(10).then(() => 'probe'));
    const error = await refusal(breaker.execute(() => 'x'));
    expect(error?.message).toBe('circuit half-open: every probe slot is taken');
    expect(error?.retryAfterMs).toBeUndefined();
    await clock.advance(10);
    expect(await probe).toBe('probe');
  });

  it('isolated: refused until reset()', async () => {
    const breaker = circuitBreaker({ clock: new FakeClock() });
    breaker.isolate();
    const error = await refusal(breaker.execute(() => 'x'));
    expect(error?.message).toBe('circuit isolated: calls refused until reset()');
  });

  it('rounds the time left up to whole milliseconds, and reads 0 when it is unknown', () => {
    expect(new CircuitOpenError('open', 0.2).message).toBe('circuit open: calls refused for 1 ms more');
    expect(new CircuitOpenError('open').message).toBe('circuit open: calls refused for 0 ms more');
  });
});
