import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { hedge } from '../hedge/hedge.js';
import { FakeClock } from '../testing/fake-clock.js';
import { timeout } from '../timeout/timeout.js';
import { TimeoutError } from './errors.js';
import { pipeline } from './pipeline.js';

// Counts every AbortController our code creates while a test runs.
const Original = globalThis.AbortController;
let created = 0;
beforeEach(() => {
  created = 0;
  globalThis.AbortController = class CountingAbortController extends Original {
    constructor() {
      super();
      created++;
    }
  };
});
afterEach(() => {
  globalThis.AbortController = Original;
});

const modes = ['cooperative', 'aggressive'] as const;
const never = () => new Promise<never>(() => {});

describe('policies inside a timeout watch it without creating its signal', () => {
  it.each(modes)(
    'an aggressive timeout inside a %s timeout creates no AbortController on success',
    async (mode) => {
      const clock = new FakeClock();
      const policy = pipeline(timeout(3_000, { mode, clock }), timeout(1_000, { mode: 'aggressive', clock }));
      for (let i = 0; i < 3; i++) await expect(policy.execute(async () => i)).resolves.toBe(i);
      expect(created).toBe(0);
    },
  );

  it.each(modes)(
    'a hedge inside a %s timeout creates no AbortController when its first try wins',
    async (mode) => {
      const clock = new FakeClock();
      const policy = pipeline(timeout(3_000, { mode, clock }), hedge({ attempts: 2, delayMs: 100, clock }));
      await expect(policy.execute(async () => 'first')).resolves.toBe('first');
      expect(created).toBe(0);
    },
  );
});

describe("an outer timeout's deadline reaches what watches it", () => {
  it.each(modes)(
    'an inner aggressive timeout ends at the outer %s deadline, with the outer error',
    async (mode) => {
      const clock = new FakeClock();
      const policy = pipeline(timeout(50, { mode, clock }), timeout(1_000, { mode: 'aggressive', clock }));
      let seen: AbortSignal | undefined;
      const call = policy
        .execute(({ signal }) => {
          seen = signal;
          return never();
        })
        .catch((error: unknown) => error);
      await clock.advance(50);
      const error = await call;
      expect(error).toBeInstanceOf(TimeoutError);
      expect((error as TimeoutError).timeoutMs).toBe(50);
      expect(seen?.aborted).toBe(true);
      expect(clock.now()).toBe(50);
    },
  );

  it.each(modes)(
    'an outer %s deadline ends an inner aggressive timeout without creating an AbortController when no one reads a signal',
    async (mode) => {
      const clock = new FakeClock();
      const policy = pipeline(timeout(50, { mode, clock }), timeout(1_000, { mode: 'aggressive', clock }));
      const call = policy.execute(never).catch((error: unknown) => error);
      await clock.advance(50);
      expect(await call).toBeInstanceOf(TimeoutError);
      expect(created).toBe(0);
    },
  );

  it('a hedge inside a timeout aborts every try at the deadline', async () => {
    const clock = new FakeClock();
    const policy = pipeline(
      timeout(150, { mode: 'aggressive', clock }),
      hedge({ attempts: 2, delayMs: 100, clock }),
    );
    const signals: AbortSignal[] = [];
    const call = policy
      .execute(({ signal }) => {
        signals.push(signal);
        return never();
      })
      .catch((error: unknown) => error);
    await clock.advance(150);
    expect(await call).toBeInstanceOf(TimeoutError);
    expect(signals).toHaveLength(2);
    expect(signals.every((s) => s.aborted && s.reason instanceof TimeoutError)).toBe(true);
  });

  it("a caller's abort reaches an operation two timeouts deep whose signal is read after the abort", async () => {
    const clock = new FakeClock();
    const controller = new AbortController();
    const policy = pipeline(timeout(3_000, { clock }), timeout(1_000, { mode: 'aggressive', clock }));
    const reason = new Error('caller left');
    let read: (() => AbortSignal) | undefined;
    const call = policy
      .execute(
        (context) => {
          read = () => context.signal;
          return never();
        },
        { signal: controller.signal },
      )
      .catch((error: unknown) => error);
    controller.abort(reason);
    expect(await call).toBe(reason);
    const signal = read?.();
    expect(signal?.aborted).toBe(true);
    expect(signal?.reason).toBe(reason);
  });
});

describe('a queue inside a timeout', () => {
  it.each(modes)(
    'a bulkhead call queued inside a %s timeout is handed its slot without creating a signal',
    async (mode) => {
      const { bulkhead } = await import('../admission/bulkhead.js');
      const clock = new FakeClock();
      const policy = pipeline(timeout(3_000, { mode, clock }), bulkhead({ maxConcurrent: 1, maxQueue: 4 }));
      let release: () => void = () => {};
      const first = policy.execute(
        () => new Promise<string>((resolve) => (release = () => resolve('first'))),
      );
      const queued = policy.execute(async () => 'queued');
      release();
      await expect(first).resolves.toBe('first');
      await expect(queued).resolves.toBe('queued');
      expect(created).toBe(0);
    },
  );
});
