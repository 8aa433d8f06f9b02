import { describe, expect, it, vi } from 'vitest';
import { deferred } from '../../test/support/deferred.js';
import { bulkhead } from '../admission/bulkhead.js';
import { pipeline } from '../core/pipeline.js';
import { constant } from '../retry/backoff.js';
import { retryAll } from '../retry/retry.js';
import { FakeClock } from '../testing/fake-clock.js';
import { timeout } from './timeout.js';

const modes = ['cooperative', 'aggressive'] as const;

describe.each(modes)("timeout (%s): a caller's abort reaches everything inside at once", (mode) => {
  it('stops a retry inside: no attempt starts after the abort', async () => {
    const clock = new FakeClock();
    const controller = new AbortController();
    const attemptsAt: number[] = [];
    const policy = pipeline(
      timeout(5_000, { mode, clock }),
      retryAll({ maxAttempts: 10, backoff: constant(20), clock }),
    );
    const call = policy
      .execute(
        () => {
          attemptsAt.push(clock.now());
          throw new Error('flaky');
        },
        { signal: controller.signal },
      )
      .catch((error: unknown) => error);
    await clock.advance(30);
    const reason = new Error('caller left');
    controller.abort(reason);
    await expect(call).resolves.toBe(reason);
    await clock.advance(10_000);
    expect(attemptsAt).toEqual([0, 20]);
    expect(clock.pendingTimers).toBe(0);
  });

  it('aborts the operation signal at once, even when the signal was read before the abort', async () => {
    const clock = new FakeClock();
    const controller = new AbortController();
    let signal: AbortSignal | undefined;
    const call = timeout(5_000, { mode, clock })
      .execute(
        (ctx) => {
          signal = ctx.signal;
          return new Promise((_, reject) =>
            ctx.signal.addEventListener('abort', () => reject(ctx.signal.reason)),
          );
        },
        { signal: controller.signal },
      )
      .catch((error: unknown) => error);
    await clock.advance(10);
    const reason = new Error('caller left');
    controller.abort(reason);
    expect(signal?.aborted).toBe(true);
    expect(signal?.reason).toBe(reason);
    await expect(call).resolves.toBe(reason);
  });

  it('a queued operation in a bulkhead inside never runs after its caller aborted', async () => {
    const clock = new FakeClock();
    const gate = bulkhead({ maxConcurrent: 1, maxQueue: 4, clock });
    const holder = deferred<string>();
    const held = gate.execute(() => holder.promise);
    const controller = new AbortController();
    const charge = vi.fn(() => 'charged');
    const call = pipeline(timeout(5_000, { mode, clock }), gate)
      .execute(charge, { signal: controller.signal })
      .catch((error: unknown) => error);
    await clock.advance(10);
    expect(gate.queued).toBe(1);
    const reason = new Error('caller left');
    controller.abort(reason);
    expect(gate.queued).toBe(0);
    await expect(call).resolves.toBe(reason);
    holder.resolve('held');
    await expect(held).resolves.toBe('held');
    await clock.advance(10_000);
    expect(charge).not.toHaveBeenCalled();
    expect([gate.inFlight, gate.queued]).toEqual([0, 0]);
  });
});
