import { describe, expect, it, vi } from 'vitest';
import type { Context } from '../core/context.js';
import { isTimeoutError } from '../core/errors.js';
import { pipeline } from '../core/pipeline.js';
import type { FailureEvent } from '../core/policy-events.js';
import { constant } from '../retry/backoff.js';
import { isRetriesExhaustedError } from '../retry/errors.js';
import { retry } from '../retry/retry.js';
import { timeout } from '../timeout/timeout.js';
import { chaos, type InjectedEvent } from './chaos.js';
import { FakeClock } from './fake-clock.js';
import { seededRandom } from './seeded-random.js';

const unavailable = () => Object.assign(new Error('Service Unavailable'), { status: 503 });

/** An operation that counts its runs and answers 'ran'. */
function counted() {
  const operation = vi.fn((_context: Context) => 'ran');
  return operation;
}

describe('chaos.fault', () => {
  it('at rate 1 fails every call with the error, without running the operation', async () => {
    const error = unavailable();
    const operation = counted();
    const policy = chaos.fault({ rate: 1, error });
    await expect(policy.execute(operation)).rejects.toBe(error);
    await expect(pipeline(policy).execute(operation)).rejects.toBe(error);
    expect(operation).not.toHaveBeenCalled();
  });

  it('at rate 0 runs every call as is', async () => {
    const operation = counted();
    const policy = chaos.fault({ rate: 0, error: unavailable() });
    await expect(policy.execute(operation)).resolves.toBe('ran');
    expect(operation).toHaveBeenCalledTimes(1);
  });

  it('calls an error function with the call context; what it throws fails the call too', async () => {
    const seen: number[] = [];
    const made = chaos.fault({
      rate: 1,
      error: ({ attempt }: Context) => {
        seen.push(attempt);
        return new Error(`fault ${attempt}`);
      },
    });
    await expect(made.execute(() => 'ran')).rejects.toThrow('fault 1');
    const broken = new Error('the factory broke');
    const throwing = chaos.fault({
      rate: 1,
      error: () => {
        throw broken;
      },
    });
    await expect(throwing.execute(() => 'ran')).rejects.toBe(broken);
    expect(seen).toEqual([1]);
  });

  it('is retried inside a retry: the seeded faults fall exactly where the draws say', async () => {
    const clock = new FakeClock();
    const draws = seededRandom(7);
    const expected = Array.from({ length: 6 }, () => draws() < 0.5);
    const attempts: number[] = [];
    const policy = pipeline(
      retry({ maxAttempts: 6, backoff: constant(10), clock }),
      chaos.fault({ rate: 0.5, seed: 7, error: unavailable }),
    );
    const call = policy.execute(({ attempt }) => attempts.push(attempt));
    await clock.advance(100);
    const firstClean = expected.indexOf(false) + 1;
    await expect(call).resolves.toBe(1);
    expect(attempts).toEqual([firstClean]);
    expect(firstClean).toBe(3); // seed 7 draws 0.01 and 0.06 first: two faults, then a clean try
  });

  it('reports an injected failure as handled, and every injection to onInjected', async () => {
    const clock = new FakeClock();
    const failures: FailureEvent[] = [];
    const injected: InjectedEvent[] = [];
    const policy = chaos.fault({
      rate: 1,
      error: unavailable,
      clock,
      name: 'payments-down',
      onFailure: (event) => failures.push(event),
      onInjected: (event) => injected.push(event),
    });
    const rejected = await pipeline(retry({ maxAttempts: 2, backoff: constant(0), clock }), policy)
      .execute(() => 'ran')
      .catch((error: unknown) => error);
    expect(isRetriesExhaustedError(rejected)).toBe(true);
    expect(injected).toEqual([
      { policy: 'payments-down', injected: 'fault', attempt: 1 },
      { policy: 'payments-down', injected: 'fault', attempt: 2 },
    ]);
    expect(failures.map(({ policy, kind, handled }) => ({ policy, kind, handled }))).toEqual([
      { policy: 'payments-down', kind: 'unavailable', handled: true },
      { policy: 'payments-down', kind: 'unavailable', handled: true },
    ]);
  });
});

describe('enabled and the draws', () => {
  it('enabled: false never injects and draws nothing', async () => {
    const random = vi.fn(() => 0);
    const policy = chaos.fault({ rate: 1, random, enabled: false, error: unavailable });
    await expect(policy.execute(() => 'ran')).resolves.toBe('ran');
    expect(random).not.toHaveBeenCalled();
  });

  it('an enabled function is read on every call, and switches injection at run time', async () => {
    let on = false;
    const enabled = vi.fn(() => on);
    const random = vi.fn(() => 0.5);
    const policy = chaos.outcome({ rate: 0.6, random, enabled, value: 'injected' });
    await expect(policy.execute(() => 'ran')).resolves.toBe('ran');
    on = true;
    await expect(policy.execute(() => 'ran')).resolves.toBe('injected');
    on = false;
    await expect(policy.execute(() => 'ran')).resolves.toBe('ran');
    expect(enabled).toHaveBeenCalledTimes(3);
    expect(random).toHaveBeenCalledTimes(1);
  });

  it('an enabled function that throws fails that call, the operation unrun', async () => {
    const broken = new Error('flag service down');
    const operation = counted();
    const policy = chaos.fault({
      rate: 1,
      error: unavailable,
      enabled: () => {
        throw broken;
      },
    });
    await expect(policy.execute(operation)).rejects.toBe(broken);
    await expect(pipeline(policy).execute(operation)).rejects.toBe(broken);
    expect(operation).not.toHaveBeenCalled();
  });

  it('a call is injected when random() < rate: a draw equal to the rate is not', async () => {
    const at = (draw: number) => chaos.outcome({ rate: 0.25, random: () => draw, value: 'injected' });
    await expect(at(0.2499).execute(() => 'ran')).resolves.toBe('injected');
    await expect(at(0.25).execute(() => 'ran')).resolves.toBe('ran');
  });

  it('the same seed gives the same injections, policy after policy', async () => {
    const run = async () => {
      const policy = chaos.outcome({ rate: 0.3, seed: 99, value: 'x' });
      const results: string[] = [];
      for (let i = 0; i < 20; i++) results.push(await policy.execute(() => '.'));
      return results.join('');
    };
    const first = await run();
    expect(await run()).toBe(first);
    expect(first).toMatch(/x/);
    expect(first).toMatch(/\./);
  });
});

describe('chaos.latency', () => {
  it('delays the operation by ms on the clock, then runs it', async () => {
    const clock = new FakeClock();
    const startedAt: number[] = [];
    const policy = chaos.latency({ rate: 1, ms: 250, clock });
    const call = policy.execute(() => startedAt.push(clock.now()));
    await clock.advance(249);
    expect(startedAt).toEqual([]);
    await clock.advance(1);
    await expect(call).resolves.toBe(1);
    expect(startedAt).toEqual([250]);
    expect(clock.pendingTimers).toBe(0);
  });

  it("the caller's abort ends the wait at once: the call rejects with the reason, nothing runs", async () => {
    const clock = new FakeClock();
    const operation = counted();
    const controller = new AbortController();
    const call = chaos
      .latency({ rate: 1, ms: 1_000, clock })
      .execute(operation, { signal: controller.signal });
    const rejected = expect(call).rejects.toBe('caller left');
    await clock.advance(10);
    controller.abort('caller left');
    await rejected;
    expect(operation).not.toHaveBeenCalled();
    expect(clock.pendingTimers).toBe(0);
  });

  it('an outer timeout cuts the injected latency short with a TimeoutError', async () => {
    const clock = new FakeClock();
    const operation = counted();
    const policy = pipeline(timeout(100, { clock }), chaos.latency({ rate: 1, ms: 5_000, clock }));
    const call = policy.execute(operation).catch((error: unknown) => error);
    await clock.advance(100);
    expect(isTimeoutError(await call)).toBe(true);
    expect(operation).not.toHaveBeenCalled();
    await clock.advance(100);
    expect(clock.pendingTimers).toBe(0);
  });
});

describe('chaos.outcome', () => {
  it('answers with the value instead of running the operation', async () => {
    const operation = counted();
    const policy = chaos.outcome({ rate: 1, value: 'stale' });
    const answer: string = await policy.execute(operation);
    expect(answer).toBe('stale');
    expect(operation).not.toHaveBeenCalled();
  });

  it('calls a value function with the context, awaits it, and fails the call when it rejects', async () => {
    const policy = chaos.outcome({ rate: 1, value: async ({ attempt }: Context) => `attempt ${attempt}` });
    await expect(policy.execute(() => 'ran')).resolves.toBe('attempt 1');
    const broken = new Error('no value');
    const failing = chaos.outcome({ rate: 1, value: () => Promise.reject(broken) });
    await expect(failing.execute(() => 'ran')).rejects.toBe(broken);
  });

  it('a value function returning a function injects that function', async () => {
    const handler = () => 'handled';
    await expect(chaos.outcome({ rate: 1, value: () => handler }).execute(() => handler)).resolves.toBe(
      handler,
    );
  });
});

describe('chaos.behavior', () => {
  it('runs before the call with its context, then the call', async () => {
    const order: string[] = [];
    const policy = chaos.behavior({ rate: 1, run: ({ attempt }) => void order.push(`behavior ${attempt}`) });
    await expect(policy.execute(() => order.push('operation'))).resolves.toBe(2);
    expect(order).toEqual(['behavior 1', 'operation']);
  });

  it('a throwing or rejecting behavior fails the call, handled, without running the operation', async () => {
    const failures: FailureEvent[] = [];
    const operation = counted();
    const broken = new Error('disk full');
    const policy = chaos.behavior({
      rate: 1,
      run: async () => {
        throw broken;
      },
      onFailure: (event) => failures.push(event),
    });
    await expect(policy.execute(operation)).rejects.toBe(broken);
    expect(operation).not.toHaveBeenCalled();
    expect(failures).toEqual([expect.objectContaining({ error: broken, handled: true })]);
  });

  it('an operation failing after a behavior that went well is not a failure the policy made', async () => {
    const failures: FailureEvent[] = [];
    const policy = chaos.behavior({ rate: 1, run: () => {}, onFailure: (event) => failures.push(event) });
    const own = new Error('its own');
    await expect(
      policy.execute(() => {
        throw own;
      }),
    ).rejects.toBe(own);
    expect(failures).toEqual([expect.objectContaining({ error: own, handled: false })]);
  });

  it("the caller's abort during the behavior keeps the operation from running", async () => {
    const clock = new FakeClock();
    const operation = counted();
    const controller = new AbortController();
    const policy = chaos.behavior({ rate: 1, run: () => clock.sleep(100) });
    const call = policy.execute(operation, { signal: controller.signal });
    const rejected = expect(call).rejects.toBe('caller left');
    controller.abort('caller left');
    await clock.advance(100);
    await rejected;
    expect(operation).not.toHaveBeenCalled();
  });
});
