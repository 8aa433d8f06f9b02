import { describe, expect, it } from 'vitest';
import type { Context } from '../core/context.js';
import { isTimeoutError } from '../core/errors.js';
import type { FailureEvent } from '../core/policy-events.js';
import { FakeClock } from '../testing/fake-clock.js';
import { timeout } from './timeout.js';

/** An operation that settles only when its signal aborts (with the signal's reason). */
const honoursSignal = ({ signal }: Context) =>
  new Promise<never>((_, reject) => signal.addEventListener('abort', () => reject(signal.reason)));

/** An operation that fails with `error` after `ms`, ignoring its signal. */
const failsAfter = (clock: FakeClock, ms: number, error: unknown) => async () => {
  await clock.sleep(ms);
  throw error;
};

describe.each(['cooperative', 'aggressive'] as const)('timeout (%s) onFailure: handled', (mode) => {
  function setup(startMs = 0) {
    const clock = new FakeClock(startMs);
    const failures: FailureEvent[] = [];
    const policy = timeout(100, { clock, mode, onFailure: (e) => failures.push(e) });
    return { clock, failures, policy };
  }

  it('a call timed out at its own deadline is a failure the timeout acted on', async () => {
    const { clock, failures, policy } = setup(1_000);
    const call = policy.execute(honoursSignal).catch((e: unknown) => e);
    await clock.advance(100);
    const error = await call;
    expect(isTimeoutError(error)).toBe(true);
    expect(failures).toEqual([expect.objectContaining({ policy: 'timeout', error, handled: true })]);
  });

  it('a failure before the deadline is reported as not acted on', async () => {
    const { clock, failures, policy } = setup(1_000);
    const early = new Error('refused');
    const call = policy.execute(failsAfter(clock, 50, early)).catch((e: unknown) => e);
    await clock.advance(100);
    expect(await call).toBe(early);
    expect(failures).toEqual([expect.objectContaining({ error: early, handled: false })]);
  });

  it('a failure exactly at the deadline, before the timer fired, is the timeout acting', async () => {
    const { clock, failures, policy } = setup();
    const late = new Error('late failure');
    // Due at the deadline and set before the policy's timer, so it fires first in the same instant.
    const gate = clock.sleep(100);
    const call = policy
      .execute(async () => {
        await gate;
        throw late;
      })
      .catch((e: unknown) => e);
    await clock.advance(100);
    const error = await call;
    expect(isTimeoutError(error)).toBe(true);
    expect(failures).toEqual([expect.objectContaining({ error, handled: true })]);
  });

  it("the caller's earlier deadline is the one that counts", async () => {
    const { clock, failures, policy } = setup(1_000);
    const call = policy.execute(honoursSignal, { deadline: 1_040 }).catch((e: unknown) => e);
    await clock.advance(40);
    const error = await call;
    expect(isTimeoutError(error)).toBe(true);
    expect(failures).toEqual([expect.objectContaining({ error, handled: true })]);
  });

  it("a caller's later deadline does not delay the timeout's own", async () => {
    const { clock, failures, policy } = setup(1_000);
    const call = policy.execute(honoursSignal, { deadline: 9_999 }).catch((e: unknown) => e);
    await clock.advance(100);
    const error = await call;
    expect(isTimeoutError(error)).toBe(true);
    expect(failures).toEqual([expect.objectContaining({ error, handled: true })]);
  });

  it("a failure before the caller's earlier deadline is not acted on", async () => {
    const { clock, failures, policy } = setup(1_000);
    const early = new Error('refused');
    const call = policy.execute(failsAfter(clock, 30, early), { deadline: 1_040 }).catch((e: unknown) => e);
    await clock.advance(100);
    expect(await call).toBe(early);
    expect(failures).toEqual([expect.objectContaining({ error: early, handled: false })]);
  });
});
