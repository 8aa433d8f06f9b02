/** Shared helpers for AbortSignal handling. */

/**
 * A signal that never aborts, shared by every call made without a caller signal so that no
 * AbortController is created for them.
 */
export const neverAborted: AbortSignal = new AbortController().signal;

/** True when the signal can abort at all (not the shared {@link neverAborted}). */
export function canAbort(signal: AbortSignal): boolean {
  return signal !== neverAborted;
}
