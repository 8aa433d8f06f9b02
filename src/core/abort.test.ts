import { getEventListeners } from 'node:events';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { isAbortSignal, neverAborted, offAbort, onAbort, signalTypeError } from './abort.js';

const listeners = (signal: AbortSignal): number => getEventListeners(signal, 'abort').length;

afterEach(() => {
  vi.restoreAllMocks();
});

describe('onAbort / offAbort', () => {
  it('many subscribers share one real listener, and each is called once on abort', () => {
    const controller = new AbortController();
    const calls: number[] = [];
    for (let i = 0; i < 100; i++) onAbort(controller.signal, () => calls.push(i));
    const object = { handleEvent: vi.fn() };
    onAbort(controller.signal, object);
    expect(listeners(controller.signal)).toBe(1);
    controller.abort();
    expect(calls).toEqual(Array.from({ length: 100 }, (_, i) => i));
    expect(object.handleEvent).toHaveBeenCalledTimes(1);
    expect(listeners(controller.signal)).toBe(0);
  });

  it('unsubscribing removes the real listener when the last subscriber leaves, not before', () => {
    const controller = new AbortController();
    const a = vi.fn();
    const b = { handleEvent: vi.fn() };
    onAbort(controller.signal, a);
    onAbort(controller.signal, b);
    offAbort(controller.signal, a);
    expect(listeners(controller.signal)).toBe(1);
    offAbort(controller.signal, b);
    expect(listeners(controller.signal)).toBe(0);
    controller.abort();
    expect(a).not.toHaveBeenCalled();
    expect(b.handleEvent).not.toHaveBeenCalled();
  });

  it('a signal can be subscribed again after everyone left', () => {
    const controller = new AbortController();
    const first = vi.fn();
    onAbort(controller.signal, first);
    offAbort(controller.signal, first);
    const second = vi.fn();
    onAbort(controller.signal, second);
    expect(listeners(controller.signal)).toBe(1);
    controller.abort();
    expect(first).not.toHaveBeenCalled();
    expect(second).toHaveBeenCalledTimes(1);
  });

  it('offAbort of an unknown or already-called subscription is a no-op', () => {
    const controller = new AbortController();
    const kept = vi.fn();
    onAbort(controller.signal, kept);
    offAbort(controller.signal, () => {});
    offAbort(new AbortController().signal, kept);
    expect(listeners(controller.signal)).toBe(1);
    controller.abort();
    offAbort(controller.signal, kept);
    expect(kept).toHaveBeenCalledTimes(1);
  });

  it('a subscriber that leaves during the fan-out (another one removing it) is still told, once', () => {
    const controller = new AbortController();
    const second = vi.fn();
    onAbort(controller.signal, () => offAbort(controller.signal, second));
    onAbort(controller.signal, second);
    controller.abort();
    expect(second).toHaveBeenCalledTimes(1);
  });

  it('a throwing subscriber does not stop the others; its error is rethrown in a microtask', () => {
    const deferred: (() => void)[] = [];
    vi.spyOn(globalThis, 'queueMicrotask').mockImplementation((callback) => {
      deferred.push(callback);
    });
    const controller = new AbortController();
    const bug = new Error('subscriber bug');
    const before = vi.fn();
    const after = vi.fn();
    onAbort(controller.signal, before);
    onAbort(controller.signal, () => {
      throw bug;
    });
    onAbort(controller.signal, { handleEvent: after });
    controller.abort();
    expect(before).toHaveBeenCalledTimes(1);
    expect(after).toHaveBeenCalledTimes(1);
    expect(deferred).toHaveLength(1);
    expect(() => deferred[0]!()).toThrow(bug);
  });

  it('an already-aborted signal: nothing is subscribed and the listener is never called', () => {
    const signal = AbortSignal.abort('gone');
    const listener = vi.fn();
    onAbort(signal, listener);
    expect(listeners(signal)).toBe(0);
    offAbort(signal, listener);
    expect(listener).not.toHaveBeenCalled();
  });

  it('the shared never-aborting signal gets no listener at all', () => {
    onAbort(neverAborted, () => {});
    expect(listeners(neverAborted)).toBe(0);
  });

  it('subscribing the same listener twice is one subscription', () => {
    const controller = new AbortController();
    const listener = vi.fn();
    onAbort(controller.signal, listener);
    onAbort(controller.signal, listener);
    controller.abort();
    expect(listener).toHaveBeenCalledTimes(1);
  });
});

describe('isAbortSignal / signalTypeError', () => {
  it('accepts real signals only', () => {
    expect(isAbortSignal(new AbortController().signal)).toBe(true);
    expect(isAbortSignal(AbortSignal.abort())).toBe(true);
    expect(isAbortSignal(AbortSignal.timeout(1_000))).toBe(true);
    for (const value of [undefined, null, {}, { aborted: false }, new AbortController(), 'signal', 1]) {
      expect(isAbortSignal(value)).toBe(false);
    }
  });

  it('names the option and shows the value', () => {
    const error = signalTypeError({ aborted: false });
    expect(error).toBeInstanceOf(TypeError);
    expect(error.message).toMatch(/^expected "signal" to be an AbortSignal, got /);
  });
});
