import { describe, expect, it } from 'vitest';
import { FakeClock } from '../testing/fake-clock.js';
import type { Context } from './context.js';
import { isTimeoutError } from './errors.js';
import { failure, type Outcome } from './outcome.js';
import { TimeLimit } from './time-limit.js';

const root: Context = { signal: new AbortController().signal, attempt: 1 };

/** A step that ends only when its signal aborts. */
const hang = (ctx: Context): Promise<Outcome<never>> =>
  new Promise((resolve) => ctx.signal.addEventListener('abort', () => resolve(failure(ctx.signal.reason))));

describe.each([false, true])(
  'TimeLimit (aggressive: %s): a shorter limit after a longer one',
  (aggressive) => {
    it('a limit shrunk after a settled call (the breaker restoring callTimeoutMs) fires at its own time', async () => {
      const clock = new FakeClock();
      const limit = new TimeLimit(clock, aggressive);
      await limit.run(() => Promise.resolve({ ok: true, value: 1 }), root, 1_000);
      let endedAt: number | undefined;
      const call = limit.run(hang, root, 50).then((outcome) => {
        endedAt = clock.now();
        return outcome;
      });
      await clock.advance(50);
      expect(endedAt).toBe(50);
      const outcome = await call;
      expect(!outcome.ok && isTimeoutError(outcome.error)).toBe(true);
    });

    it('a limit shrunk while a longer call still runs fires at its own time too', async () => {
      const clock = new FakeClock();
      const limit = new TimeLimit(clock, aggressive);
      const long = limit.run(hang, root, 1_000);
      const endedAt: number[] = [];
      const short = limit.run(hang, root, 50).then(() => endedAt.push(clock.now()));
      await clock.advance(1_000);
      await short;
      await long;
      expect(endedAt).toEqual([50]);
      expect(clock.pendingTimers).toBe(0);
    });
  },
);
