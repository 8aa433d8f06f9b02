import { describe, expect, it, vi } from 'vitest';
import { pipeline } from '../core/pipeline.js';
import type { FailureEvent } from '../core/policy-events.js';
import { FakeClock } from '../testing/fake-clock.js';
import { timeout } from '../timeout/timeout.js';
import { fallback } from './fallback.js';

describe('fallback', () => {
  it('passes a success through without calling the handler', async () => {
    const handler = vi.fn(() => 'default');
    await expect(fallback(handler).execute(() => 'real')).resolves.toBe('real');
    expect(handler).not.toHaveBeenCalled();
  });

  it('replaces a failure with the handler value, given the error and the context', async () => {
    const error = new Error('down');
    const handler = vi.fn(
      async (e: unknown, ctx: { attempt: number }) => `${(e as Error).message}:${ctx.attempt}`,
    );
    await expect(
      fallback(handler).execute(() => {
        throw error;
      }),
    ).resolves.toBe('down:1');
    expect(handler).toHaveBeenCalledWith(error, expect.objectContaining({ attempt: 1 }));
  });

  it('applies only when `when` matches', async () => {
    const policy = fallback(() => 'cached', { when: (e) => (e as { status?: number }).status === 503 });
    await expect(
      policy.execute(() => Promise.reject(Object.assign(new Error(), { status: 503 }))),
    ).resolves.toBe('cached');
    const notFound = Object.assign(new Error('nf'), { status: 404 });
    await expect(policy.execute(() => Promise.reject(notFound))).rejects.toBe(notFound);
  });

  it('rejects with the handler error when the handler throws', async () => {
    const handlerError = new Error('fallback broke too');
    await expect(
      fallback(() => {
        throw handlerError;
      }).execute(() => Promise.reject(new Error('x'))),
    ).rejects.toBe(handlerError);
  });

  it('never falls back once the caller has aborted', async () => {
    const controller = new AbortController();
    const handler = vi.fn(() => 'default');
    const p = fallback(handler).execute(
      ({ signal }) =>
        new Promise((_, reject) => signal.addEventListener('abort', () => reject(signal.reason))),
      { signal: controller.signal },
    );
    const reason = new Error('left');
    controller.abort(reason);
    await expect(p).rejects.toBe(reason);
    expect(handler).not.toHaveBeenCalled();
  });

  it('composes: pipeline(fallback, timeout) answers with the fallback on timeout', async () => {
    const clock = new FakeClock();
    const p = pipeline(
      fallback(() => 'stale'),
      timeout(10, { clock, mode: 'aggressive' }),
    ).execute(() => new Promise(() => {}));
    await clock.advance(10);
    await expect(p).resolves.toBe('stale');
  });

  it('reports a throwing handler to onFailure as a failure it acted on, with the handler error', async () => {
    const clock = new FakeClock();
    const handlerError = new Error('cache down too');
    const failures: FailureEvent[] = [];
    const policy = fallback(
      () => {
        throw handlerError;
      },
      { clock, onFailure: (e) => failures.push(e) },
    );
    await expect(policy.execute(() => Promise.reject(new Error('origin down')))).rejects.toBe(handlerError);
    expect(failures).toEqual([
      expect.objectContaining({ policy: 'fallback', error: handlerError, handled: true }),
    ]);
  });

  it('reports a failure that `when` turns away as not acted on', async () => {
    const clock = new FakeClock();
    const failures: FailureEvent[] = [];
    const policy = fallback(() => 'cached', { clock, when: () => false, onFailure: (e) => failures.push(e) });
    const error = new Error('not for us');
    await expect(policy.execute(() => Promise.reject(error))).rejects.toBe(error);
    expect(failures).toEqual([expect.objectContaining({ error, handled: false })]);
  });

  it('refuses an unknown option, naming fallback options', () => {
    expect(() => fallback(() => 1, { whenever: () => true } as never)).toThrow(
      /^unknown option "whenever" in fallback options/,
    );
  });

  it('rejects bad input with a TypeError', () => {
    expect(() => fallback('x' as never)).toThrow(/"handler".*"x"/);
    expect(() => fallback(() => 1, { when: true as never })).toThrow(/"when".*true/);
  });
});
