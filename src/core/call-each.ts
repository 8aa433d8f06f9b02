/**
 * Calling every listener of something (wake-ups, notifications, resets) so that one listener's
 * failure never stops the others, nor the connection or store that calls them.
 */

/**
 * Calls `call` on each of `items`, from a copy taken first (a listener may unsubscribe, or
 * subscribe again, while it is called: it is called once either way); a throw is ignored.
 */
export function callEach<T>(items: ReadonlySet<T>, call: (item: T) => void): void {
  for (const item of [...items]) {
    try {
      call(item);
    } catch {
      // A listener's failure is its own.
    }
  }
}
