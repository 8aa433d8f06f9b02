/** Shared helpers for AbortSignal handling. */
import { show } from './validate.js';

/**
 * A signal that never aborts, shared by every call made without a caller signal so that no
 * AbortController is created for them.
 */
export const neverAborted: AbortSignal = new AbortController().signal;

/** True when the signal can abort at all (not the shared {@link neverAborted}). */
export function canAbort(signal: AbortSignal): boolean {
  return signal !== neverAborted;
}

/** True for a real `AbortSignal` (what every `signal` option must be). */
export function isAbortSignal(value: unknown): value is AbortSignal {
  return value instanceof AbortSignal;
}

/** The `TypeError` for a `signal` option that is not an `AbortSignal`. */
export function signalTypeError(value: unknown): TypeError {
  return new TypeError(`expected "signal" to be an AbortSignal, got ${show(value)}`);
}

/** What {@link onAbort} calls: an EventListener-style object (no closure per call) or a function. */
export type AbortListener = { handleEvent(): void } | (() => void);

/**
 * Everyone waiting on one signal. The signal carries a single real `abort` listener (this object)
 * however many calls share it, so a request signal shared by a wide fan-out never trips Node's
 * `MaxListenersExceededWarning` and each subscription is an O(1) set operation.
 */
class AbortFanOut {
  readonly listeners = new Set<AbortListener>();

  constructor(private readonly signal: AbortSignal) {}

  handleEvent(): void {
    fanOuts.delete(this.signal);
    const listeners = [...this.listeners];
    this.listeners.clear();
    for (const listener of listeners) callListener(listener);
  }
}

/**
 * Calls one abort subscriber. A subscriber's bug must not keep the abort from the others: its
 * error is rethrown in a microtask, surfacing like an event listener's.
 */
export function callListener(listener: AbortListener): void {
  try {
    if (typeof listener === 'function') listener();
    else listener.handleEvent();
  } catch (error) {
    queueMicrotask(() => {
      throw error;
    });
  }
}

const fanOuts = new WeakMap<AbortSignal, AbortFanOut>();

/**
 * Calls `listener` once when `signal` aborts (never if it already has: check `signal.aborted`
 * first). All subscribers of one signal share one real listener on it; remove a subscription
 * with {@link offAbort} once the call it guards is over.
 */
export function onAbort(signal: AbortSignal, listener: AbortListener): void {
  if (!canAbort(signal) || signal.aborted) return;
  let fanOut = fanOuts.get(signal);
  if (fanOut === undefined) {
    fanOut = new AbortFanOut(signal);
    fanOuts.set(signal, fanOut);
    signal.addEventListener('abort', fanOut, { once: true });
  }
  fanOut.listeners.add(listener);
}

/**
 * Removes a subscription made with {@link onAbort}; unknown or already-called subscriptions are
 * ignored. The last subscriber to leave removes the real listener from the signal, so a
 * long-lived signal keeps nothing of finished calls.
 */
export function offAbort(signal: AbortSignal, listener: AbortListener): void {
  const fanOut = fanOuts.get(signal);
  if (fanOut === undefined || !fanOut.listeners.delete(listener)) return;
  if (fanOut.listeners.size === 0) {
    fanOuts.delete(signal);
    signal.removeEventListener('abort', fanOut);
  }
}
