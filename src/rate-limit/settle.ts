/** What `run` returns (a value or a promise) as a promise; what it throws, as a rejected one. */
export function settle<T>(run: () => T | Promise<T>): Promise<T> {
  try {
    return Promise.resolve(run());
  } catch (error) {
    return Promise.reject(error);
  }
}
