/** Waiting on real time for a condition, for the runner's drains. */
import { systemClock } from '../src/index.js';

/**
 * Resolves once `done()` is true (checked every `everyMs`) or `timeoutMs` has passed, with whether
 * it became true.
 *
 * @example
 * await waitFor(() => broker.pending === 0, 5_000);
 */
export async function waitFor(
  done: () => boolean | Promise<boolean>,
  timeoutMs: number,
  everyMs = 50,
): Promise<boolean> {
  const until = systemClock.now() + timeoutMs;
  while (!(await done())) {
    if (systemClock.now() >= until) return false;
    await systemClock.sleep(everyMs);
  }
  return true;
}
