/**
 * A promise with its resolve and reject exposed (Node 20 lacks `Promise.withResolvers`): lets a
 * test hold an operation open and settle it exactly when it wants.
 */
export function deferred<T = unknown>(): {
  promise: Promise<T>;
  resolve: (value: T) => void;
  reject: (error: unknown) => void;
} {
  let resolve!: (value: T) => void;
  let reject!: (error: unknown) => void;
  const promise = new Promise<T>((res, rej) => {
    resolve = res;
    reject = rej;
  });
  return { promise, resolve, reject };
}
