/**
 * Lets the event loop turn until `condition()` holds: waits for an event, not an amount of time
 * (a fingerprint's SHA-256 is computed by Web Crypto off the main thread, a socket's bytes arrive a
 * few turns later). Throws, naming `what`, if it still does not hold after `capMs` of real time.
 */
export async function until(condition: () => boolean, what = 'the condition', capMs = 5_000): Promise<void> {
  const start = performance.now();
  while (!condition()) {
    if (performance.now() - start > capMs) throw new Error(`never happened: ${what}`);
    await new Promise((resolve) => setImmediate(resolve));
  }
}
