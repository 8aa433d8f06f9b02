import { describe, expect, it } from 'vitest';
import { type Clock, sleepWith } from '../core/clock.js';
import type { Context } from '../core/context.js';
import { isTimeoutError, ResilienceError, TimeoutError } from '../core/errors.js';
import { pipeline } from '../core/pipeline.js';
import type { Policy } from '../core/policy.js';
import { FakeClock } from '../testing/fake-clock.js';
import { type CircuitBreakerPolicy, circuitBreaker } from './circuit-breaker.js';
import type { CircuitBreakerOptions } from './options.js';

const ways = [
  ['execute', (b: CircuitBreakerPolicy): Policy => b],
  ['pipeline', (b: CircuitBreakerPolicy): Policy => pipeline(b)],
] as const;

/** Ignores its signal: settles after `ms` of fake time with `value`, or with `error()` when given. */
const ignoresSignal =
  (clock: FakeClock, ms: number, error?: () => unknown) =>
  async (_ctx: Context): Promise<string> => {
    await clock.sleep(ms);
    if (error !== undefined) throw error();
    return 'late value';
  };

/** Runs one call to the end and says how and when it settled. */
async function settled(clock: FakeClock, call: Promise<unknown>, advanceMs = 20_000) {
  const result = call.then(
    (value) => ({ ok: true as const, value, at: clock.now() }),
    (error: unknown) => ({ ok: false as const, error, at: clock.now() }),
  );
  await clock.advance(advanceMs);
  return result;
}

function setup(options: CircuitBreakerOptions) {
  const clock = new FakeClock();
  const breaker = circuitBreaker({ clock, callTimeoutMs: 10, failureThreshold: 3, ...options });
  return { clock, breaker };
}

describe.each(ways)('circuitBreaker callTimeoutMode via %s', (_name, wrap) => {
  it("'aggressive' (the default) rejects at the limit even when the operation ignores its signal; it counts as a failure", async () => {
    const { clock, breaker } = setup({});
    for (let i = 0; i < 3; i++) {
      const start = clock.now();
      const r = await settled(clock, wrap(breaker).execute(ignoresSignal(clock, 10_000)));
      expect(r.ok).toBe(false);
      expect(isTimeoutError((r as { error: unknown }).error)).toBe(true);
      expect(r.at - start).toBe(i === 0 ? 10 : 10 * (1 + i / 10)); // the limit stretches while failing
    }
    expect(breaker.state).toBe('open');
  });

  it("'cooperative' waits for the operation, then still fails the late call with TimeoutError and counts it", async () => {
    const { clock, breaker } = setup({ callTimeoutMode: 'cooperative' });
    for (let i = 0; i < 3; i++) {
      const start = clock.now();
      const r = await settled(clock, wrap(breaker).execute(ignoresSignal(clock, 10_000)));
      expect(r.at - start).toBe(10_000);
      expect(isTimeoutError((r as { error: unknown }).error)).toBe(true);
    }
    expect(breaker.state).toBe('open');
  });

  it("'cooperative': a late failure is a TimeoutError with the failure as cause", async () => {
    const { clock, breaker } = setup({ callTimeoutMode: 'cooperative' });
    const down = new ResilienceError('down', { code: 'E', kind: 'unavailable' });
    const r = await settled(clock, wrap(breaker).execute(ignoresSignal(clock, 50, () => down)));
    const error = (r as { error: { cause?: unknown } }).error;
    expect(isTimeoutError(error)).toBe(true);
    expect(error.cause).toBe(down);
  });

  it.each(['aggressive', 'cooperative'] as const)(
    '%s: a call that ends in time returns its value and is a success',
    async (callTimeoutMode) => {
      const { clock, breaker } = setup({ callTimeoutMode, failureThreshold: 1 });
      const r = await settled(clock, wrap(breaker).execute(ignoresSignal(clock, 9)));
      expect(r).toMatchObject({ ok: true, value: 'late value', at: 9 });
      expect(breaker.state).toBe('closed');
    },
  );

  it.each(['aggressive', 'cooperative'] as const)(
    "%s: a caller's abort before the limit counts as nothing",
    async (callTimeoutMode) => {
      const { clock, breaker } = setup({ callTimeoutMode, failureThreshold: 1 });
      const controller = new AbortController();
      const op = ({ signal }: Context) =>
        new Promise((_, reject) => signal.addEventListener('abort', () => reject(signal.reason)));
      const call = wrap(breaker)
        .execute(op, { signal: controller.signal })
        .catch((e: unknown) => e);
      await clock.advance(5);
      controller.abort(new Error('caller left'));
      expect(await call).toMatchObject({ message: 'caller left' });
      expect(breaker.state).toBe('closed');
    },
  );
});

describe('circuitBreaker callTimeoutMode validation', () => {
  it.each([
    [{ callTimeoutMs: 10, callTimeoutMode: 'fast' }, /"callTimeoutMode".*"fast"/],
    [{ callTimeoutMode: 'aggressive' }, /"callTimeoutMs" with "callTimeoutMode"/],
  ])('rejects %o with a TypeError naming the option', (options, message) => {
    expect(() => circuitBreaker(options as never)).toThrow(TypeError);
    expect(() => circuitBreaker(options as never)).toThrow(message);
  });
});

/** The breaker's clock on a busy event loop: its timers fire `lagMs` late (the operation's do not). */
function lagging(clock: FakeClock, lagMs: number): Clock {
  const lagged: Clock = {
    now: () => clock.now(),
    setTimer: (callback, ms) => clock.setTimer(callback, ms + lagMs),
    clearTimer: (handle) => clock.clearTimer(handle),
    sleep: (ms, signal) => sleepWith(lagged, ms, signal),
  };
  return lagged;
}

describe.each(ways)(
  'circuitBreaker callTimeoutMs: the limit is where the call ends (via %s)',
  (_name, wrap) => {
    it("'cooperative': a value that arrives exactly at the limit is past it: a TimeoutError, counted", async () => {
      const { clock, breaker } = setup({ callTimeoutMode: 'cooperative', failureThreshold: 1 });
      const r = await settled(clock, wrap(breaker).execute(ignoresSignal(clock, 10)));
      expect(r.ok).toBe(false);
      expect(isTimeoutError((r as { error: unknown }).error)).toBe(true);
      expect(r.at).toBe(10);
      expect(breaker.state).toBe('open');
    });

    it("'cooperative': a caller's earlier deadline is the limit: a later value fails with the TimeoutError naming it", async () => {
      const clock = new FakeClock(1_000);
      const breaker = circuitBreaker({ clock, callTimeoutMs: 1_000, callTimeoutMode: 'cooperative' });
      const r = await settled(clock, wrap(breaker).execute(ignoresSignal(clock, 100), { deadline: 1_040 }));
      const error = (r as { error: Error }).error;
      expect(isTimeoutError(error)).toBe(true);
      expect(error.message).toBe("operation hit the caller's deadline after 40 ms (timeout 1000 ms)");
      expect(r.at).toBe(1_100);
    });

    it("'cooperative': a caller's later deadline does not stretch the limit", async () => {
      const clock = new FakeClock(1_000);
      const breaker = circuitBreaker({ clock, callTimeoutMs: 1_000, callTimeoutMode: 'cooperative' });
      const r = await settled(clock, wrap(breaker).execute(ignoresSignal(clock, 1_500), { deadline: 5_000 }));
      const error = (r as { error: Error }).error;
      expect(isTimeoutError(error)).toBe(true);
      expect(error.message).toBe(new TimeoutError(1_000).message);
      expect(r.at).toBe(2_500);
    });

    it("'aggressive': a value that arrives past the limit, before the limit's late timer fires, is a TimeoutError all the same, counted", async () => {
      const clock = new FakeClock();
      const breaker = circuitBreaker({ clock: lagging(clock, 5), callTimeoutMs: 10, failureThreshold: 1 });
      const r = await settled(clock, wrap(breaker).execute(ignoresSignal(clock, 12)));
      expect(r.ok).toBe(false);
      expect(isTimeoutError((r as { error: unknown }).error)).toBe(true);
      expect(r.at).toBe(12);
      expect(breaker.state).toBe('open');
    });

    it("'aggressive': a value before the limit is a success, whatever the timer does", async () => {
      const clock = new FakeClock();
      const breaker = circuitBreaker({ clock: lagging(clock, 5), callTimeoutMs: 10, failureThreshold: 1 });
      const r = await settled(clock, wrap(breaker).execute(ignoresSignal(clock, 9)));
      expect(r).toMatchObject({ ok: true, value: 'late value', at: 9 });
      expect(breaker.state).toBe('closed');
    });
  },
);
