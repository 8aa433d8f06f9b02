/**
 * The settled state of a promise, readable at any moment without awaiting it: for tests that
 * advance a `FakeClock` and check what has settled so far.
 */
export interface Tracked<T> {
  settled: boolean;
  value?: T;
  error?: unknown;
}

/** Tracks `promise` (its rejection counts as handled). */
export function track<T>(promise: Promise<T>): Tracked<T> {
  const state: Tracked<T> = { settled: false };
  promise.then(
    (value) => {
      state.settled = true;
      state.value = value;
    },
    (error: unknown) => {
      state.settled = true;
      state.error = error;
    },
  );
  return state;
}
