/**
 * The claims that decide again when they lose a race (the idempotency key's and the saga run's):
 * a real database loses it only when a concurrent commit lands between the statement's snapshot
 * and its write, which no test can make happen on purpose five times in a row. So the claim
 * statement is answered, as many times as a test says, with what a lost race returns ("no row" for
 * the idempotency claim, a row whose id is NULL for the saga claim) instead of reaching PGlite;
 * every other statement runs. A claim decides again after each, and gives up after five with a
 * `StoreUnavailableError`.
 */
import { describe, expect, it } from 'vitest';
import { isStoreUnavailableError } from '../../src/core/errors.js';
import { type PGliteLike, postgresStores } from '../../src/stores/postgres/index.js';
import { useEmbeddedPostgres } from '../support/postgres-stores.js';

/**
 * `db`, except that the first `times` statements that start with `prefix` are answered `lost`
 * without running; `sent` counts those statements.
 */
function losing(db: PGliteLike, prefix: string, lost: unknown[], times: number) {
  const counted = { sent: 0 };
  const wrapped: PGliteLike = {
    query: <T>(text: string, params?: unknown[]) => {
      if (text.trimStart().startsWith(prefix) && ++counted.sent <= times) {
        return Promise.resolve({ rows: lost as T[] });
      }
      return db.query<T>(text, params);
    },
    transaction: (callback) => db.transaction(callback),
    listen: (channel, callback) => db.listen(channel, callback),
  };
  return { db: wrapped, counted };
}

describe('claims that lose a race decide again, five times at most (PGlite)', () => {
  const embedded = useEmbeddedPostgres();

  async function storesLosing(prefix: string, lost: unknown[], times: number) {
    const schema = (await embedded.stores()).schema; // migrated
    const { db, counted } = losing(embedded.db(), prefix, lost, times);
    return { stores: postgresStores(db, { schema, listen: false }), counted };
  }

  // The idempotency claim begins `WITH live AS`, the saga claim `WITH picked AS`.
  it('an idempotency claim: four lost races, then claimed; five, then a StoreUnavailableError', async () => {
    const won = await storesLosing('WITH live AS', [], 4);
    expect(await won.stores.idempotency.claim('k', 'fp', 60_000)).toMatchObject({ status: 'claimed' });
    expect(won.counted.sent).toBe(5);
    await won.stores.close();

    const lost = await storesLosing('WITH live AS', [], Number.POSITIVE_INFINITY);
    const error = await lost.stores.idempotency.claim('k', 'fp', 60_000).catch((e: unknown) => e);
    expect(isStoreUnavailableError(error)).toBe(true);
    expect((error as Error).message).toBe(
      'PGlite: the claim of an idempotency key kept losing races (5 attempts)',
    );
    expect(lost.counted.sent).toBe(5);
    await lost.stores.close();
  });

  it('a saga claim: four lost races, then decided; five, then a StoreUnavailableError', async () => {
    const changed = [{ id: null, input: null, status: null, steps: null }];
    const won = await storesLosing('WITH picked AS', changed, 4);
    expect(await won.stores.sagaLog.claim('order', 'relay-1', 60_000)).toBeUndefined(); // no run to claim
    expect(won.counted.sent).toBe(5);
    await won.stores.close();

    const lost = await storesLosing('WITH picked AS', changed, Number.POSITIVE_INFINITY);
    const error = await lost.stores.sagaLog.claim('order', 'relay-1', 60_000).catch((e: unknown) => e);
    expect(isStoreUnavailableError(error)).toBe(true);
    expect((error as Error).message).toBe('PGlite: the claim of a saga run kept losing races (5 attempts)');
    expect(lost.counted.sent).toBe(5);
    await lost.stores.close();
  });
});
