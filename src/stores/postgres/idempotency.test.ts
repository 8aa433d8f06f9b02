/**
 * PostgresIdempotencyStore against a scripted database: how it reads the claim's answer. The real
 * databases are in test/postgres/. The module is imported inside the tests, so that one failing
 * to load fails a test (a load error is otherwise only the file's).
 */
import { describe, expect, it } from 'vitest';
import { FakeClock } from '../../testing/fake-clock.js';
import type { Database } from './database.js';

/** A store whose every query answers `rows`. */
async function answering(rows: unknown[]) {
  const { PostgresIdempotencyStore } = await import('./idempotency.js');
  const db = { what: 'PostgreSQL', query: () => Promise.resolve(rows) } as unknown as Database;
  const store = new PostgresIdempotencyStore(db, 's', new FakeClock(), undefined);
  return store;
}

describe('PostgresIdempotencyStore reading a claim', () => {
  it('a completed record gives its result as UTF-8, byte for byte', async () => {
    const store = await answering([
      { outcome: 'completed', result: new TextEncoder().encode('€ \u0000 ok'), remaining_ms: null },
    ]);
    expect(await store.claim('k', 'fp', 1_000)).toEqual({ status: 'completed', result: '€ \u0000 ok' });
    store.stop();
  });

  it('a stored result that is not UTF-8 is refused, never read with U+FFFD in it', async () => {
    const store = await answering([
      { outcome: 'completed', result: Uint8Array.of(0x6f, 0xff), remaining_ms: null },
    ]);
    await expect(store.claim('k', 'fp', 1_000)).rejects.toThrow(TypeError);
    store.stop();
  });

  it("in progress: retry after the lease's rest, rounded up, 1 ms at least", async () => {
    for (const [remaining, retryAfterMs] of [
      [1_500.2, 1_501],
      [0.3, 1],
      [0, 1],
      [null, 1],
    ] as const) {
      const store = await answering([{ outcome: 'in_progress', result: null, remaining_ms: remaining }]);
      expect(await store.claim('k', 'fp', 1_000)).toEqual({ status: 'in_progress', retryAfterMs });
      store.stop();
    }
  });
});
