import { getEventListeners } from 'node:events';
import { describe, expect, it } from 'vitest';
import { FakeClock } from '../testing/fake-clock.js';
import { neverAborted } from './abort.js';
import { sleepWith } from './clock.js';

const listeners = (signal: AbortSignal): number => getEventListeners(signal, 'abort').length;

/** Resolves to what the sleep did: 'woke' or the reason it rejected with. */
const watch = (sleep: Promise<void>): { result: unknown } => {
  const seen: { result: unknown } = { result: undefined };
  sleep.then(
    () => {
      seen.result = 'woke';
    },
    (reason: unknown) => {
      seen.result = reason;
    },
  );
  return seen;
};

describe('sleepWith', () => {
  it.each([
    ['no signal', undefined],
    ['the never-aborting signal', neverAborted],
  ])('with %s, wakes after ms and not before', async (_, signal) => {
    const clock = new FakeClock();
    const seen = watch(sleepWith(clock, 100, signal));
    await clock.advance(99);
    expect(seen.result).toBeUndefined();
    await clock.advance(1);
    expect(seen.result).toBe('woke');
  });

  it('with a signal that never aborts, wakes after ms and leaves no listener on the signal', async () => {
    const clock = new FakeClock();
    const controller = new AbortController();
    const seen = watch(sleepWith(clock, 100, controller.signal));
    expect(listeners(controller.signal)).toBe(1);
    await clock.advance(99);
    expect(seen.result).toBeUndefined();
    await clock.advance(1);
    expect(seen.result).toBe('woke');
    expect(listeners(controller.signal)).toBe(0);
  });

  it('rejects at once with the reason of a signal that already aborted, starting no timer', async () => {
    const clock = new FakeClock();
    const seen = watch(sleepWith(clock, 100, AbortSignal.abort('gone')));
    await clock.advance(0);
    expect(seen.result).toBe('gone');
    expect(clock.pendingTimers).toBe(0);
  });

  it('rejects with the reason as soon as the signal aborts, clearing its timer', async () => {
    const clock = new FakeClock();
    const controller = new AbortController();
    const seen = watch(sleepWith(clock, 100, controller.signal));
    await clock.advance(40);
    controller.abort('enough');
    await clock.advance(0);
    expect(seen.result).toBe('enough');
    expect(clock.pendingTimers).toBe(0);
    expect(listeners(controller.signal)).toBe(0);
  });
});
