import { describe, expect, it } from 'vitest';
import type { Context } from '../core/context.js';
import { ResilienceError } from '../core/errors.js';
import { pipeline } from '../core/pipeline.js';
import type { Policy } from '../core/policy.js';
import type { FailureEvent } from '../core/policy-events.js';
import { FakeClock } from '../testing/fake-clock.js';
import { type CircuitBreakerPolicy, circuitBreaker } from './circuit-breaker.js';
import type { CircuitBreakerOptions } from './options.js';

const down = () => new ResilienceError('down', { code: 'E_DOWN', kind: 'unavailable' });
const canceled = () => new ResilienceError('gave up', { code: 'E_GAVE_UP', kind: 'canceled' });
const badRequest = () => Object.assign(new Error('bad request'), { status: 400 });

const ways = [
  ['execute', (b: CircuitBreakerPolicy): Policy => b],
  ['pipeline', (b: CircuitBreakerPolicy): Policy => pipeline(b)],
] as const;

/** A call held open until the test settles it. */
function held() {
  let settle!: (error?: unknown) => void;
  const op = (_ctx: Context) =>
    new Promise<string>((resolve, reject) => {
      settle = (error) => (error === undefined ? resolve('held ok') : reject(error));
    });
  return { op, settle: (error?: unknown) => settle(error) };
}

function setup(options: CircuitBreakerOptions = {}) {
  const clock = new FakeClock();
  const breaker = circuitBreaker({ clock, ...options });
  const changes: string[] = [];
  breaker.onStateChange(({ from, to }) => changes.push(`${from}→${to}`));
  return { clock, breaker, changes };
}

describe.each(ways)('what a call says about the dependency (via %s)', (_name, wrap) => {
  const fail = (policy: Policy, error: () => unknown) =>
    policy.execute(() => Promise.reject(error())).catch((e: unknown) => e);

  it('an error of kind canceled (its signal never aborted) neither counts nor resets the failure count', async () => {
    const { breaker } = setup({ failureThreshold: 3 });
    const policy = wrap(breaker);
    await fail(policy, down);
    await fail(policy, down);
    await fail(policy, canceled);
    expect(breaker.toJSON().consecutiveFailures).toBe(2);
    expect(breaker.state).toBe('closed');
    await fail(policy, down);
    expect(breaker.state).toBe('open');
  });

  it("a caller's abort between failures neither counts nor resets the failure count", async () => {
    const { breaker } = setup({ failureThreshold: 3 });
    const policy = wrap(breaker);
    await fail(policy, down);
    await fail(policy, down);
    const controller = new AbortController();
    const aborted = policy
      .execute(
        ({ signal }) => new Promise((_, reject) => signal.addEventListener('abort', () => reject(down()))),
        { signal: controller.signal },
      )
      .catch(() => {});
    controller.abort(new Error('caller left'));
    await aborted;
    expect(breaker.toJSON().consecutiveFailures).toBe(2);
    await fail(policy, down);
    expect(breaker.state).toBe('open');
  });

  it.each([
    ['without a call timeout', {}],
    ['with a call timeout', { callTimeoutMs: 1_000 }],
  ])('onFailure reports handled only for failures the breaker counted (%s)', async (_case, extra) => {
    const { breaker } = setup({ failureThreshold: 10, ...extra });
    const failures: FailureEvent[] = [];
    breaker.onFailure((e) => failures.push(e));
    const policy = wrap(breaker);
    await fail(policy, down);
    await fail(policy, badRequest);
    expect(failures.map((e) => [e.kind, e.handled])).toEqual([
      ['unavailable', true],
      ['invalid', false],
    ]);
  });

  it('a failed probe adds to the failure count: toJSON and the stretched call timeout show it', async () => {
    const { clock, breaker } = setup({ failureThreshold: 2, resetTimeoutMs: 100, callTimeoutMs: 1_000 });
    const policy = wrap(breaker);
    await fail(policy, down);
    await fail(policy, down);
    await clock.advance(100);
    await fail(policy, down); // the probe fails: open again
    expect(breaker.toJSON()).toEqual({
      state: 'open',
      consecutiveFailures: 3,
      reopenCount: 1,
      openUntil: 200,
    });
    expect(breaker.callTimeoutMs).toBe(1_300);
  });

  it('a probe that ends after another probe re-opened the circuit changes nothing', async () => {
    const { clock, breaker, changes } = setup({
      failureThreshold: 1,
      resetTimeoutMs: 100,
      halfOpenProbes: 2,
    });
    const policy = wrap(breaker);
    await fail(policy, down);
    await clock.advance(100);
    const first = held();
    const second = held();
    const firstCall = policy.execute(first.op).catch((e: unknown) => e);
    const secondCall = policy.execute(second.op).catch((e: unknown) => e);
    first.settle(down());
    await firstCall;
    expect(breaker.state).toBe('open');
    second.settle();
    expect(await secondCall).toBe('held ok');
    expect(breaker.state).toBe('open');
    expect(changes).toEqual(['closed→open', 'open→half-open', 'half-open→open']);
  });

  it('a call admitted before isolate() and reset() says nothing once it ends', async () => {
    const { breaker, changes } = setup({ failureThreshold: 1 });
    const policy = wrap(breaker);
    const late = held();
    const call = policy.execute(late.op).catch((e: unknown) => e);
    breaker.isolate();
    breaker.reset();
    late.settle(down());
    await call;
    expect(breaker.state).toBe('closed');
    expect(breaker.toJSON().consecutiveFailures).toBe(0);
    expect(changes).toEqual(['closed→isolated', 'isolated→closed']);
  });
});

describe('circuitBreaker defaults', () => {
  it('works with no options at all', async () => {
    const breaker = circuitBreaker();
    expect(await breaker.execute(() => 'ok')).toBe('ok');
    expect(breaker.state).toBe('closed');
  });

  it('has no call timeout unless callTimeoutMs is set', async () => {
    const breaker = circuitBreaker({ clock: new FakeClock() });
    await breaker.execute(() => Promise.reject(down())).catch(() => {});
    expect(breaker.callTimeoutMs).toBeUndefined();
  });

  it('opens after 5 consecutive failures by default', async () => {
    const breaker = circuitBreaker({ clock: new FakeClock() });
    for (let i = 0; i < 4; i++) await breaker.execute(() => Promise.reject(down())).catch(() => {});
    expect(breaker.state).toBe('closed');
    await breaker.execute(() => Promise.reject(down())).catch(() => {});
    expect(breaker.state).toBe('open');
  });

  it('caps the stretched call timeout at 3 × callTimeoutMs by default', async () => {
    const breaker = circuitBreaker({ clock: new FakeClock(), callTimeoutMs: 100, failureThreshold: 100 });
    for (let i = 0; i < 15; i++) await breaker.execute(() => Promise.reject(down())).catch(() => {});
    expect(breaker.callTimeoutMs).toBe(250); // 100 × (1 + 15 / 10)
    for (let i = 0; i < 10; i++) await breaker.execute(() => Promise.reject(down())).catch(() => {});
    expect(breaker.callTimeoutMs).toBe(300); // not 350
  });
});
