import { describe, expect, it } from 'vitest';
import type { AbortListener } from './abort.js';
import {
  type AbortWatch,
  AttemptContext,
  abortWatch,
  type Context,
  contextAborted,
  contextAbortReason,
  rootContext,
  unwatchContext,
  watchContext,
} from './context.js';

/** A context whose signal is made only when read (like a timeout scope), counting the reads. */
function lazyContext() {
  const watchers = new Set<AbortListener>();
  const state = { aborted: false, reason: undefined as unknown, signalReads: 0 };
  const watch: AbortWatch = {
    get isAborted() {
      return state.aborted;
    },
    get abortReason() {
      return state.reason;
    },
    watchAbort: (listener) => watchers.add(listener),
    unwatchAbort: (listener) => watchers.delete(listener),
  };
  const context: Context & { readonly [abortWatch]: AbortWatch } = {
    attempt: 1,
    deadline: 500,
    get signal(): AbortSignal {
      state.signalReads++;
      return state.aborted ? AbortSignal.abort(state.reason) : new AbortController().signal;
    },
    [abortWatch]: watch,
  };
  const abort = (reason: unknown): void => {
    state.aborted = true;
    state.reason = reason;
    for (const listener of watchers) typeof listener === 'function' ? listener() : listener.handleEvent();
  };
  return { context, state, watchers, abort };
}

describe('rootContext', () => {
  it('has a deadline field only when the call has a deadline', () => {
    const signal = new AbortController().signal;
    expect(Object.keys(rootContext(signal, undefined)).sort()).toEqual(['attempt', 'signal']);
    expect('deadline' in rootContext(signal, undefined)).toBe(false);
    expect(rootContext(signal, 1_000)).toEqual({ signal, attempt: 1, deadline: 1_000 });
  });
});

describe('reading a context with a lazily created signal', () => {
  it('contextAborted and contextAbortReason read its watch, never its signal', () => {
    const { context, state, abort } = lazyContext();
    expect(contextAborted(context)).toBe(false);
    expect(contextAbortReason(context)).toBeUndefined();
    abort('gone');
    expect(contextAborted(context)).toBe(true);
    expect(contextAbortReason(context)).toBe('gone');
    expect(state.signalReads).toBe(0);
  });

  it('a plain context is read through its signal', () => {
    const controller = new AbortController();
    const context: Context = { signal: controller.signal, attempt: 1 };
    expect([contextAborted(context), contextAbortReason(context)]).toEqual([false, undefined]);
    controller.abort('gone');
    expect([contextAborted(context), contextAbortReason(context)]).toEqual([true, 'gone']);
  });
});

describe('AttemptContext', () => {
  it('renumbers the attempt and reads deadline and abort through to a lazy parent without creating its signal', () => {
    const { context, state, watchers, abort } = lazyContext();
    const attempt = new AttemptContext(context, 3);
    expect(attempt.attempt).toBe(3);
    expect(attempt.deadline).toBe(500);
    let told = 0;
    const listener = (): void => {
      told++;
    };
    watchContext(attempt, listener);
    expect(watchers.has(listener)).toBe(true);
    expect(contextAborted(attempt)).toBe(false);
    abort('gone');
    expect(told).toBe(1);
    expect(contextAborted(attempt)).toBe(true);
    expect(contextAbortReason(attempt)).toBe('gone');
    unwatchContext(attempt, listener);
    expect(watchers.has(listener)).toBe(false);
    expect(state.signalReads).toBe(0);
    expect(attempt.signal.reason).toBe('gone');
  });

  it('over a plain parent, reads its signal', () => {
    const controller = new AbortController();
    const attempt = new AttemptContext({ signal: controller.signal, attempt: 1 }, 2);
    expect(attempt.signal).toBe(controller.signal);
    expect(attempt.deadline).toBeUndefined();
    controller.abort('gone');
    expect(contextAbortReason(attempt)).toBe('gone');
  });
});
