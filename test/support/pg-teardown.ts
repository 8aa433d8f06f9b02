/**
 * Closing `pg` connections that may hang (a client still checked out, a paused fault proxy):
 * wait a grace period, then destroy the socket.
 */
import type { Client, PoolClient } from 'pg';

/** Whether `promise` settles within `ms` (its outcome is ignored); the timer is always cleared. */
export async function settlesWithin(promise: Promise<unknown>, ms: number): Promise<boolean> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<false>((resolve) => {
    timer = setTimeout(resolve, ms, false);
  });
  const settled = promise.then(
    () => true,
    () => true,
  );
  try {
    return await Promise.race([settled, late]);
  } finally {
    clearTimeout(timer);
  }
}

/** Ends a pg client, destroying its socket if it does not close within `graceMs`. */
export async function forceEndClient(client: Client | PoolClient, graceMs: number): Promise<void> {
  if (!(await settlesWithin(client.end(), graceMs))) destroySocket(client);
}

/** Destroys a pg client's socket at once. */
export function destroySocket(client: Client | PoolClient): void {
  const internal = client as unknown as { connection?: { stream?: { destroy(): void } } };
  internal.connection?.stream?.destroy();
}
