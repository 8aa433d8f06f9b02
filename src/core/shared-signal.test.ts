import { getEventListeners } from 'node:events';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { deferred } from '../../test/support/deferred.js';
import { bulkhead } from '../admission/bulkhead.js';
import { hedge } from '../hedge/hedge.js';
import { constant } from '../retry/backoff.js';
import { retryAll } from '../retry/retry.js';
import { FakeClock } from '../testing/fake-clock.js';
import { timeout } from '../timeout/timeout.js';
import type { Context } from './context.js';
import type { Policy } from './policy.js';

/** Real AbortControllers, real process warnings: only time is fake. */
const listeners = (signal: AbortSignal): number => getEventListeners(signal, 'abort').length;

let warnings: Error[] = [];
const onWarning = (warning: Error): void => {
  warnings.push(warning);
};
beforeEach(() => {
  warnings = [];
  process.on('warning', onWarning);
});
afterEach(() => {
  process.off('warning', onWarning);
});

/** Lets process.emitWarning (deferred to a later tick) deliver what it has. */
const warningsDelivered = () => new Promise((resolve) => setImmediate(resolve));

interface Case {
  readonly name: string;
  readonly calls: number;
  /** Starts one call of the policy under test that stays in flight until `release` resolves. */
  readonly start: (signal: AbortSignal, release: Promise<void>) => Promise<unknown>;
  /** Moves the calls to the point where each holds its subscription to the signal. */
  readonly settle?: (clock: FakeClock) => Promise<void>;
}

/** An operation that honours its signal and otherwise waits for the test to let it finish. */
const reading =
  (release: Promise<void>) =>
  ({ signal }: Context): Promise<string> =>
    new Promise((resolve, reject) => {
      const stop = (): void => reject(signal.reason);
      signal.addEventListener('abort', stop, { once: true });
      void release.then(() => {
        signal.removeEventListener('abort', stop);
        resolve('done');
      });
    });

function cases(clock: FakeClock): readonly Case[] {
  const policies: [string, Policy<unknown>][] = [
    ['timeout (cooperative)', timeout(10_000, { clock })],
    ['timeout (aggressive)', timeout(10_000, { clock, mode: 'aggressive' })],
  ];
  const held = deferred<void>();
  const admission = bulkhead({ maxConcurrent: 1, maxQueue: 200, clock });
  void admission.execute(() => held.promise);
  return [
    ...policies.map(
      ([name, policy]): Case => ({
        name,
        calls: 100,
        start: (signal, release) => policy.execute(reading(release), { signal }),
      }),
    ),
    {
      name: 'bulkhead (queued waiters)',
      calls: 100,
      start: (signal, release) => {
        release.then(() => held.resolve());
        return admission.execute(reading(release), { signal });
      },
    },
    {
      name: 'hedge',
      calls: 50,
      start: (signal, release) => hedge({ clock, delayMs: 10 }).execute(reading(release), { signal }),
      settle: (c) => c.advance(10), // both tries started: each try's signal read
    },
    {
      name: 'retry sleep',
      calls: 16,
      start: (signal, release) => {
        let attempt = 0;
        return retryAll({ clock, maxAttempts: 2, backoff: constant(1_000) }).execute(
          () => {
            attempt++;
            if (attempt === 1) throw new Error('again');
            return release.then(() => 'done');
          },
          { signal },
        );
      },
    },
  ];
}

describe('one signal shared by many concurrent calls', () => {
  const names = cases(new FakeClock()).map((c) => c.name);
  it.each(names)('%s: at most one abort listener on the signal, none after, no warning', async (name) => {
    const clock = new FakeClock();
    const c = cases(clock).find((x) => x.name === name)!;
    const controller = new AbortController();
    const release = deferred<void>();
    const calls = Array.from({ length: c.calls }, () => c.start(controller.signal, release.promise));
    await c.settle?.(clock);
    await clock.advance(0);
    expect(listeners(controller.signal)).toBeLessThanOrEqual(1);
    if (name === 'retry sleep') {
      await clock.advance(1_000);
      expect(listeners(controller.signal)).toBeLessThanOrEqual(1);
    }
    release.resolve();
    await clock.advance(2_000);
    await Promise.all(calls);
    expect(listeners(controller.signal)).toBe(0);
    await warningsDelivered();
    expect(warnings.map((w) => w.name)).toEqual([]);
  });

  it.each(names)('%s: the shared signal aborting ends every call with its reason', async (name) => {
    const clock = new FakeClock();
    const c = cases(clock).find((x) => x.name === name)!;
    const controller = new AbortController();
    const never = new Promise<void>(() => {});
    const calls = Array.from({ length: c.calls }, () =>
      c.start(controller.signal, never).catch((error: unknown) => error),
    );
    await c.settle?.(clock);
    await clock.advance(0);
    const reason = new Error('request gone');
    controller.abort(reason);
    const outcomes = await Promise.all(calls);
    expect(outcomes.every((o) => o === reason)).toBe(true);
    expect(listeners(controller.signal)).toBe(0);
    await warningsDelivered();
    expect(warnings.map((w) => w.name)).toEqual([]);
  });
});
