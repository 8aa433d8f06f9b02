import { describe, expect, it } from 'vitest';
import type { Context, Operation } from '../core/context.js';
import { isTimeoutError, TimeoutError } from '../core/errors.js';
import { pipeline } from '../core/pipeline.js';
import type { Policy } from '../core/policy.js';
import { FakeClock } from '../testing/fake-clock.js';
import type { TimeoutMode } from '../timeout/options.js';
import { timeout } from '../timeout/timeout.js';
import { type CircuitBreakerPolicy, circuitBreaker } from './circuit-breaker.js';

/** A hung dependency that honours its signal: it rejects with `onAbort(signal)` when aborted. */
const hangs =
  (onAbort: (signal: AbortSignal) => unknown = (signal) => signal.reason) =>
  ({ signal }: Context) =>
    new Promise<never>((_, reject) => signal.addEventListener('abort', () => reject(onAbort(signal))));

/** How the breaker sits behind an outer policy: composed, or called by hand inside its operation. */
const ways = [
  ['pipeline', (outer: Policy, breaker: CircuitBreakerPolicy): Policy => pipeline(outer, breaker)],
  [
    'execute',
    (outer: Policy, breaker: CircuitBreakerPolicy): Policy => ({
      execute: <T>(op: Operation<T>, options?: { signal?: AbortSignal }) =>
        outer.execute((ctx) => breaker.execute(op, { signal: ctx.signal }), options),
    }),
  ],
] as const;

const modes: TimeoutMode[] = ['cooperative', 'aggressive'];

describe.each(ways)('a breaker behind an outer timeout (via %s)', (_name, behind) => {
  describe.each(modes)('outer timeout in %s mode', (mode) => {
    function setup() {
      const clock = new FakeClock();
      const breaker = circuitBreaker({ clock, failureThreshold: 3, resetTimeoutMs: 1_000 });
      const policy = behind(timeout(5, { clock, mode }), breaker);
      return { clock, breaker, policy };
    }

    it('opens after failureThreshold hung calls: the outer deadline is a timeout failure', async () => {
      const { clock, breaker, policy } = setup();
      for (let i = 0; i < 3; i++) {
        const call = policy.execute(hangs()).catch((e: unknown) => e);
        await clock.advance(5);
        expect(isTimeoutError(await call)).toBe(true);
      }
      expect(breaker.state).toBe('open');
    });

    it('also when the operation rejects with an error of its own once aborted (like fetch’s AbortError)', async () => {
      const { clock, breaker, policy } = setup();
      const ownAbortError = () => new DOMException('This operation was aborted', 'AbortError');
      for (let i = 0; i < 3; i++) {
        const call = policy.execute(hangs(ownAbortError)).catch(() => {});
        await clock.advance(5);
        await call;
      }
      expect(breaker.state).toBe('open');
    });

    it("a caller's own abort still counts as nothing", async () => {
      const { clock, breaker, policy } = setup();
      for (let i = 0; i < 5; i++) {
        const controller = new AbortController();
        const call = policy.execute(hangs(), { signal: controller.signal }).catch((e: unknown) => e);
        await clock.advance(2);
        controller.abort(new Error('caller left'));
        expect(await call).toMatchObject({ message: 'caller left' });
        await clock.advance(10);
      }
      expect(breaker.state).toBe('closed');
    });
  });
});

describe.each([
  ['execute', (b: CircuitBreakerPolicy): Policy => b],
  ['pipeline', (b: CircuitBreakerPolicy): Policy => pipeline(b)],
] as const)('a breaker whose caller signal aborts with a timeout (via %s)', (_name, wrap) => {
  it.each([
    ['a bulwark TimeoutError (a deadline upstream)', () => new TimeoutError(50)],
    [
      'AbortSignal.timeout()’s DOMException TimeoutError',
      () => new DOMException('signal timed out', 'TimeoutError'),
    ],
  ])('%s: the deadline passed, so it is a timeout failure', async (_reason, reason) => {
    const breaker = circuitBreaker({ clock: new FakeClock(), failureThreshold: 2 });
    for (let i = 0; i < 2; i++) {
      const controller = new AbortController();
      const call = wrap(breaker)
        .execute(hangs(), { signal: controller.signal })
        .catch(() => {});
      controller.abort(reason());
      await call;
    }
    expect(breaker.state).toBe('open');
  });
});
