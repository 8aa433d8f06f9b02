import { describe, expect, it } from 'vitest';
import { FakeClock } from '../testing/fake-clock.js';
import { PollingWait, type Watch } from './polling-wait.js';

/** A signal stand-in that counts its abort listeners. */
function countingSignal(aborted = false) {
  const listeners = new Set<() => void>();
  const signal = {
    aborted,
    reason: new Error('left'),
    addEventListener: (type: string, listener: () => void) => type === 'abort' && listeners.add(listener),
    removeEventListener: (type: string, listener: () => void) =>
      type === 'abort' && listeners.delete(listener),
  };
  return {
    signal: signal as unknown as AbortSignal,
    listeners,
    abort: () => {
      for (const listener of [...listeners]) listener();
    },
  };
}

function watchable() {
  let wake: (() => void) | undefined;
  let unwatched = 0;
  const watch: Watch = (_key, w) => {
    wake = w;
    return () => {
      unwatched += 1;
    };
  };
  return { watch, wake: () => wake?.(), unwatched: () => unwatched };
}

describe('PollingWait', () => {
  it('polls after 25 ms, doubling up to 1 s, never past the lease or the time left', async () => {
    const clock = new FakeClock(0);
    const wait = new PollingWait(undefined, 'k', clock, 5_000);
    const delays: number[] = [];
    for (const retryAfterMs of [60_000, 60_000, 60_000, 60_000, 60_000, 60_000, 60_000, 30, 60_000]) {
      const started = clock.now();
      const next = wait.next(retryAfterMs, undefined);
      await clock.next();
      await next;
      delays.push(clock.now() - started);
    }
    expect(delays).toEqual([25, 50, 100, 200, 400, 800, 1_000, 30, 1_000]);
    expect(wait.remaining()).toBe(5_000 - 3_605);
    await clock.advance(10_000);
    expect(wait.remaining()).toBe(0);
  });

  it('a wake-up ends the wait at once; one that came between waits ends the next one at once, once', async () => {
    const clock = new FakeClock(0);
    const { watch, wake } = watchable();
    const wait = new PollingWait(watch, 'k', clock, 60_000);
    const first = wait.next(60_000, undefined);
    wake();
    await first;
    expect(clock.pendingTimers).toBe(0);
    wake(); // arrives while the waiter is claiming again
    await wait.next(60_000, undefined);
    expect(clock.now()).toBe(0);
    let done = false;
    const third = wait.next(60_000, undefined).then(() => {
      done = true;
    });
    await Promise.resolve();
    expect(done).toBe(false); // the earlier wake-up was used up
    await clock.advance(100);
    await third;
    expect(clock.now()).toBe(100);
  });

  it('an aborted signal rejects at once; an abort mid-wait rejects with its reason; no listener is left', async () => {
    const clock = new FakeClock(0);
    const wait = new PollingWait(undefined, 'k', clock, 60_000);
    const already = countingSignal(true);
    await expect(wait.next(1_000, already.signal)).rejects.toThrow('left');
    expect(already.listeners.size).toBe(0);
    const later = countingSignal();
    const pending = wait.next(1_000, later.signal);
    expect(later.listeners.size).toBe(1);
    later.abort();
    await expect(pending).rejects.toThrow('left');
    expect(later.listeners.size).toBe(0);
    expect(clock.pendingTimers).toBe(0);
    const polled = countingSignal();
    const poll = wait.next(1_000, polled.signal);
    await clock.advance(1_000);
    await poll;
    expect(polled.listeners.size).toBe(0);
  });

  it('a wake-up that ended a wait is used up: the next wait polls', async () => {
    const clock = new FakeClock(0);
    const { watch, wake } = watchable();
    const wait = new PollingWait(watch, 'k', clock, 60_000);
    const first = wait.next(60_000, undefined);
    wake();
    await first;
    let done = false;
    const second = wait.next(60_000, undefined).then(() => {
      done = true;
    });
    await Promise.resolve();
    await Promise.resolve();
    expect(done).toBe(false);
    await clock.advance(50);
    await second;
  });

  it('close unwatches', () => {
    const clock = new FakeClock(0);
    const { watch, unwatched } = watchable();
    new PollingWait(watch, 'k', clock, 1).close();
    expect(unwatched()).toBe(1);
    new PollingWait(undefined, 'k', clock, 1).close(); // a store that cannot watch
  });
});

describe('PollingWait jitter', () => {
  it('with random, each delay is between half and all of the poll delay; pollDelayMs is the hint before jitter', async () => {
    const clock = new FakeClock(0);
    const draws = [0, 0.5, 0.75];
    const wait = new PollingWait(undefined, 'k', clock, 60_000, () => draws.shift() ?? 0);
    const delays: number[] = [];
    for (let i = 0; i < 3; i++) {
      expect(wait.pollDelayMs).toBe(25 * 2 ** i);
      const started = clock.now();
      const next = wait.next(60_000, undefined);
      await clock.next();
      await next;
      delays.push(clock.now() - started);
    }
    expect(delays).toEqual([12.5, 37.5, 87.5]);
  });
});
