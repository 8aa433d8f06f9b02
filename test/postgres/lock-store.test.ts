/**
 * What the PostgreSQL lock and fence stores add to the conformance suites, on `pg` and on PGlite:
 * fences floored by the database's clock (and still increasing after the lock rows are lost), one
 * statement per operation, a release that notifies only when somebody watches, the reaper, values
 * PostgreSQL text cannot hold, and fenced writes that commit with the fence or not at all.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { describe, expect, it } from 'vitest';
import { isStoreUnavailableError } from '../../src/core/errors.js';
import { isStaleFenceError, type StaleFenceError } from '../../src/lock/errors.js';
import { distributedLock } from '../../src/lock/lock.js';
import { channelName } from '../../src/stores/postgres/identifiers.js';
import {
  type PostgresDatabase,
  type PostgresStores,
  postgresStores,
} from '../../src/stores/postgres/index.js';
import { REAP_FLOOR_MARGIN_US } from '../../src/stores/postgres/lock-sql.js';
import { FakeClock } from '../../src/testing/fake-clock.js';
import { type Counted, countingPGlite, countingPool } from '../support/counting.js';
import { deferred } from '../support/deferred.js';
import { type StoreOverrides, serverStores, useEmbeddedPostgres } from '../support/postgres-stores.js';
import { usePostgres } from '../support/services.js';

const pg = await usePostgres();

interface Backend {
  /** A migrated store set on a fresh schema. */
  stores(overrides?: StoreOverrides): Promise<PostgresStores>;
  /** Runs a statement outside the stores (for setup and checks). */
  sql<R>(text: string, params?: unknown[]): Promise<R[]>;
  /** The database wrapped so that statements are counted (migrate the schema first). */
  counting(): Counted<PostgresDatabase>;
  /** Statements the driver sends around a transaction's own (pg: BEGIN and COMMIT; PGlite: none counted). */
  readonly transactionStatements: number;
  /** Listens on `channel` outside the stores; resolves once listening, with the way to stop. */
  listen(channel: string, onPayload: (payload: string) => void): Promise<() => Promise<void>>;
}

/** The database's clock in µs, as a number (exact: about 2^51 today). */
async function clockMicros(b: Backend): Promise<number> {
  const [row] = await b.sql<{ us: string }>(
    'SELECT floor(extract(epoch FROM clock_timestamp()) * 1000000)::bigint::text AS us',
  );
  return Number(row!.us);
}

async function rejection(promise: Promise<unknown>): Promise<unknown> {
  try {
    await promise;
  } catch (error) {
    return error;
  }
  throw new Error('expected a rejection');
}

function sharedScenarios(name: string, backend: () => Backend): void {
  describe(`${name}: fences from the database's clock`, () => {
    it('a fence is the clock in µs at the acquisition (and +1 over a fence ahead of the clock)', async () => {
      const b = backend();
      const stores = await b.stores();
      const before = await clockMicros(b);
      const lease = await stores.lock.acquire('k', 'a', 10_000);
      const after = await clockMicros(b);
      expect(lease!.fence).toBeGreaterThanOrEqual(before);
      expect(lease!.fence).toBeLessThanOrEqual(after);
      expect(lease!.expiresAt).toBeGreaterThanOrEqual(before / 1_000 + 10_000 - 1);
      expect(lease!.expiresAt).toBeLessThanOrEqual(after / 1_000 + 10_000 + 1);
      expect(await stores.lock.release('k', 'a')).toBe(true);
      // A fence ahead of the clock (the rows of a host whose clock ran ahead): the next is +1.
      const ahead = after + 3_600_000_000;
      await b.sql(`UPDATE "${stores.schema}".locks SET fence = $1 WHERE key = 'k'`, [ahead]);
      expect((await stores.lock.acquire('k', 'b', 10_000))!.fence).toBe(ahead + 1);
      await stores.close();
    });

    it('fences keep increasing after the lock rows are lost (deleted while free or while held)', async () => {
      const b = backend();
      const stores = await b.stores();
      const t = `"${stores.schema}".locks`;
      const first = (await stores.lock.acquire('k', 'a', 10_000))!.fence;
      await stores.lock.release('k', 'a');
      await b.sql(`DELETE FROM ${t}`);
      const second = (await stores.lock.acquire('k', 'b', 10_000))!.fence;
      expect(second).toBeGreaterThan(first);
      await b.sql(`TRUNCATE ${t}`); // lost while held: the holder's lease is gone with it
      const third = (await stores.lock.acquire('k', 'c', 10_000))!.fence;
      expect(third).toBeGreaterThan(second);
      expect(await stores.lock.renew('k', 'b', 10_000)).toBe(false);
      await stores.close();
    });

    it('a fence the client cannot hold exactly is a store failure, never rounded', async () => {
      const b = backend();
      const stores = await b.stores();
      await b.sql(
        `INSERT INTO "${stores.schema}".locks (key, owner, fence, expires_at) VALUES ('k', NULL, $1, clock_timestamp())`,
        [String(2 ** 53)],
      );
      const error = await rejection(stores.lock.acquire('k', 'a', 10_000));
      expect(isStoreUnavailableError(error)).toBe(true);
      expect((error as Error).message).toMatch(/^(PostgreSQL|PGlite): the fence: expected a safe integer/);
      // The same for a resource's highest fence, read alone or to name the fence that refused one.
      await b.sql(`INSERT INTO "${stores.schema}".fences (resource, fence) VALUES ('r', $1)`, [
        String(2 ** 53),
      ]);
      const highest = await rejection(stores.fence.highest('r'));
      expect(isStoreUnavailableError(highest)).toBe(true);
      expect((highest as Error).message).toMatch(
        /^(PostgreSQL|PGlite): the highest fence: expected a safe integer/,
      );
      const refused = await rejection(stores.fence.write('r', 1, () => 1));
      expect((refused as Error).message).toMatch(
        /^(PostgreSQL|PGlite): the highest fence: expected a safe integer/,
      );
      await stores.close();
    });
  });

  describe(`${name}: one statement per operation`, () => {
    it('acquire, a refused acquire, renew, release, highest: one each; a fenced write: one plus its own', async () => {
      const b = backend();
      const migrated = await b.stores({ listen: false });
      const schema = migrated.schema;
      await migrated.close();
      const { db, statements } = b.counting();
      const stores = postgresStores(db, { schema, listen: false });
      await b.sql(`CREATE TABLE "${schema}"."values" (resource text PRIMARY KEY, value text)`);
      const lease = await stores.lock.acquire('k', 'a', 10_000);
      expect(statements).toHaveLength(1);
      expect(await stores.lock.acquire('k', 'b', 10_000)).toBeUndefined();
      expect(await stores.lock.renew('k', 'a', 10_000)).toBe(true);
      expect(await stores.lock.release('k', 'a')).toBe(true);
      expect(statements).toHaveLength(4);
      const before = statements.length;
      await stores.fence.write('r', lease!.fence, (tx) =>
        tx.query(`INSERT INTO "${schema}"."values" VALUES ('r', 'v')`),
      );
      expect(statements.length - before).toBe(2 + b.transactionStatements);
      expect(await stores.fence.highest('r')).toBe(lease!.fence);
      expect(statements.length - before).toBe(3 + b.transactionStatements);
      await stores.close();
    });

    it('bad input is refused before anything is sent: U+0000 (text cannot hold it), empty, ill-formed', async () => {
      const b = backend();
      const migrated = await b.stores();
      const schema = migrated.schema;
      await migrated.close();
      const { db, statements } = b.counting();
      const stores = postgresStores(db, { schema });
      // Each refusal names the argument it refuses.
      const refusals: [Promise<unknown>, string][] = [
        [stores.lock.acquire('a\u0000b', 'a', 1_000), 'key'],
        [stores.lock.acquire('k', 'o\u0000', 1_000), 'owner'],
        [stores.lock.acquire('k', 'a', 0), 'ttlMs'],
        [stores.lock.renew('k\u0000', 'a', 1_000), 'key'],
        [stores.lock.renew('k', '', 1_000), 'owner'],
        [stores.lock.renew('k', 'a', 0.5), 'ttlMs'],
        [stores.lock.release('\u0000', 'a'), 'key'],
        [stores.lock.release('k', '\uDC00'), 'owner'],
        [stores.fence.write('r\u0000', 1, () => 1), 'resource'],
        [stores.fence.write('r', Number.NaN, () => 1), 'fence'],
        [stores.fence.write('r', 1, 'apply' as never), 'apply'],
        [stores.fence.highest('\u0000'), 'resource'],
      ];
      for (const [refusal, name] of refusals) {
        const error = await rejection(refusal);
        expect(error).toBeInstanceOf(TypeError);
        expect((error as Error).message).toMatch(new RegExp(`^expected "${name}" `));
      }
      expect(await rejection(stores.fence.write('r', 1, 'apply' as never))).toHaveProperty(
        'message',
        'expected "apply" to be a function, got "apply"',
      );
      expect(await rejection(stores.lock.acquire('k\u0000', 'a', 1_000))).toHaveProperty(
        'message',
        expect.stringMatching(/"key" to contain no U\+0000/),
      );
      expect(statements).toEqual([]);
      await stores.close();
    });
  });

  describe(`${name}: wake-ups`, () => {
    it('a release notifies only when somebody watches the key; a refused acquire of a watched key marks it again', async () => {
      const b = backend();
      const stores = await b.stores();
      const t = `"${stores.schema}".locks`;
      const waiters = async (key: string) =>
        (await b.sql<{ waiters: boolean }>(`SELECT waiters FROM ${t} WHERE key = $1`, [key]))[0]?.waiters;
      const heard: string[] = [];
      const stop = await b.listen(channelName(stores.schema, 'lock'), (payload) => heard.push(payload));
      const lock = stores.lock;

      await lock.acquire('alone', 'a', 10_000);
      expect(await lock.acquire('alone', 'b', 10_000)).toBeUndefined(); // a try-once caller: no mark
      expect(await waiters('alone')).toBe(false);
      await lock.release('alone', 'a');

      await lock.acquire('awaited', 'a', 10_000);
      let woken = 0;
      const unwatch = lock.watch!('awaited', () => (woken += 1));
      await expect.poll(() => waiters('awaited')).toBe(true);
      // Once the store listens, its watchers are woken to look again (a release before was not heard).
      await expect.poll(() => woken).toBe(1);
      await lock.release('awaited', 'a');
      await expect.poll(() => heard).toEqual(['awaited']);
      await expect.poll(() => woken).toBe(2);

      // Taken by someone else: the mark is cleared; the watcher's refused acquire marks it again.
      await lock.acquire('awaited', 'c', 10_000);
      expect(await waiters('awaited')).toBe(false);
      expect(await lock.acquire('awaited', 'b', 10_000)).toBeUndefined();
      expect(await waiters('awaited')).toBe(true);
      unwatch();
      expect(await lock.acquire('awaited', 'd', 10_000)).toBeUndefined();
      await lock.release('awaited', 'c');
      await expect.poll(() => heard).toEqual(['awaited', 'awaited']);
      await sleep(50);
      expect(woken).toBe(2); // unwatched
      expect(heard).toEqual(['awaited', 'awaited']); // 'alone' never notified
      // A watched key that has no row yet is acquired as usual.
      const unwatchFresh = lock.watch!('fresh', () => {});
      expect(await lock.acquire('fresh', 'a', 10_000)).toBeDefined();
      unwatchFresh();
      await stop();
      await stores.close();
    });

    it('listen: false has no watch and never marks a key', async () => {
      const b = backend();
      const stores = await b.stores({ listen: false });
      expect(stores.lock.watch).toBeUndefined();
      await stores.lock.acquire('k', 'a', 10_000);
      expect(await stores.lock.acquire('k', 'b', 10_000)).toBeUndefined();
      const [row] = await b.sql<{ waiters: boolean }>(`SELECT waiters FROM "${stores.schema}".locks`);
      expect(row!.waiters).toBe(false);
      await stores.close();
    });
  });

  describe(`${name}: the reaper`, () => {
    it('deletes only free rows (released or expired) whose fence the clock passed by the margin, in batches', async () => {
      const b = backend();
      const stores = await b.stores();
      const t = `"${stores.schema}".locks`;
      const now = await clockMicros(b);
      const old = now - REAP_FLOOR_MARGIN_US - 1_000_000;
      const insert = (key: string, owner: string | null, fence: number, expires: string) =>
        b.sql(
          `INSERT INTO ${t} (key, owner, fence, expires_at) VALUES ($1, $2, $3, clock_timestamp() + interval '${expires}')`,
          [key, owner, fence],
        );
      await b.sql(
        `INSERT INTO ${t} (key, owner, fence, expires_at)
         SELECT 'bulk-' || i, NULL, $1, clock_timestamp() - interval '2 minutes' FROM generate_series(1, 2500) AS i`,
        [old],
      );
      await insert('released', null, old, '-61 seconds');
      await insert('expired', 'x', old, '-1 second');
      await insert('held', 'x', old, '1 minute');
      await insert('released-recently', null, now - 1_000_000, '-1 second'); // within the margin
      const ahead = now + 3_600_000_000;
      await insert('fence-ahead', null, ahead, '-1 second'); // a fence above the clock: kept
      expect(await stores.lock.reap()).toBe(2502);
      const rows = await b.sql<{ key: string }>(`SELECT key FROM ${t} ORDER BY key`);
      expect(rows.map((r) => r.key)).toEqual(['fence-ahead', 'held', 'released-recently']);
      expect(await stores.lock.reap()).toBe(0);
      // The clock floors the next fence of a deleted key; a kept row's fence still counts.
      expect((await stores.lock.acquire('released', 'a', 10_000))!.fence).toBeGreaterThanOrEqual(now);
      expect((await stores.lock.acquire('fence-ahead', 'a', 10_000))!.fence).toBe(ahead + 1);
      expect(await stores.lock.acquire('held', 'a', 10_000)).toBeUndefined();
      await stores.close();
    });

    it('runs every minute from the first acquisition, on the store set clock; close() stops it', async () => {
      const b = backend();
      const clock = new FakeClock(1_000);
      const stores = await b.stores({ clock });
      const t = `"${stores.schema}".locks`;
      const old = (await clockMicros(b)) - REAP_FLOOR_MARGIN_US - 1_000_000;
      await b.sql(`INSERT INTO ${t} VALUES ('old', NULL, $1, clock_timestamp() - interval '1 hour')`, [old]);
      await clock.advance(60_000);
      expect(await b.sql(`SELECT key FROM ${t}`)).toHaveLength(1); // not started yet
      await stores.lock.acquire('k', 'a', 10_000);
      await clock.advance(60_000);
      await expect.poll(() => b.sql<{ key: string }>(`SELECT key FROM ${t}`)).toEqual([{ key: 'k' }]);
      await stores.close();
      expect(clock.pendingTimers).toBe(0);
    });
  });

  describe(`${name}: distributedLock on the stores`, () => {
    it('withLock: a waiter is admitted after the holder, with a higher fence; both write through the fence store', async () => {
      const b = backend();
      const stores = await b.stores();
      const table = `"${stores.schema}"."values"`;
      await b.sql(`CREATE TABLE ${table} (resource text PRIMARY KEY, value text NOT NULL)`);
      const locks = distributedLock({ store: stores.lock });
      const order: string[] = [];
      const critical = (who: string) =>
        locks.withLock(
          'account:1',
          async ({ fence }) => {
            order.push(`${who} in`);
            await stores.fence.write('account:1', fence, (tx) =>
              tx.query(
                `INSERT INTO ${table} VALUES ('account:1', $1) ON CONFLICT (resource) DO UPDATE SET value = excluded.value`,
                [who],
              ),
            );
            await sleep(100);
            order.push(`${who} out`);
            return fence;
          },
          { ttlMs: 3_000, waitMs: 5_000 },
        );
      const [first, second] = await Promise.all([critical('first'), critical('second')]);
      expect(order).toEqual(['first in', 'first out', 'second in', 'second out']);
      expect(second).toBeGreaterThan(first);
      expect(await stores.fence.highest('account:1')).toBe(second);
      expect(await b.sql(`SELECT value FROM ${table}`)).toEqual([{ value: 'second' }]);
      await stores.close();
    });
  });

  describe(`${name}: fenced writes`, () => {
    /** A store set and a table of values written inside `apply`. */
    async function fenced(b: Backend) {
      const stores = await b.stores();
      const table = `"${stores.schema}"."values"`;
      await b.sql(`CREATE TABLE ${table} (resource text PRIMARY KEY, value text NOT NULL)`);
      const upsert = `INSERT INTO ${table} VALUES ($1, $2) ON CONFLICT (resource) DO UPDATE SET value = excluded.value`;
      const values = async () =>
        (await b.sql<{ resource: string; value: string }>(`SELECT resource, value FROM ${table}`)).map(
          (r) => `${r.resource}=${r.value}`,
        );
      return { stores, upsert, values };
    }

    it("an apply that rejects rolls back its writes and the fence; apply's value is the result", async () => {
      const b = backend();
      const { stores, upsert, values } = await fenced(b);
      const boom = new Error('boom');
      const failed = stores.fence.write('r', 5, async (tx) => {
        await tx.query(upsert, ['r', 'five']);
        throw boom;
      });
      expect(await rejection(failed)).toBe(boom);
      expect(await stores.fence.highest('r')).toBeUndefined();
      expect(await values()).toEqual([]);
      // 5 was never recorded, so a lower fence still writes.
      const value = await stores.fence.write('r', 3, async (tx) => {
        await tx.query(upsert, ['r', 'three']);
        return 'written';
      });
      expect(value).toBe('written');
      expect(await values()).toEqual(['r=three']);
      expect(await stores.fence.highest('r')).toBe(3);
      await stores.close();
    });

    it('a stale fence never runs apply; the error names the fences; bigints come back exact', async () => {
      const b = backend();
      const { stores, upsert, values } = await fenced(b);
      const top = Number.MAX_SAFE_INTEGER;
      await stores.fence.write('r', top, (tx) => tx.query(upsert, ['r', 'top']));
      let ran = false;
      const error = await rejection(
        stores.fence.write('r', top - 1, () => {
          ran = true;
        }),
      );
      expect(isStaleFenceError(error)).toBe(true);
      expect(error).toMatchObject({
        resource: 'r',
        fence: top - 1,
        highest: top,
      } satisfies Partial<StaleFenceError>);
      expect(ran).toBe(false);
      expect(await stores.fence.highest('r')).toBe(top);
      expect(await values()).toEqual(['r=top']);
      await stores.close();
    });

    it('the check holds until the commit: a lower fence arriving during a higher one’s apply is refused', async () => {
      const b = backend();
      const { stores, upsert, values } = await fenced(b);
      const inApply = deferred<void>();
      const finish = deferred<void>();
      const high = stores.fence.write('r', 7, async (tx) => {
        await tx.query(upsert, ['r', 'seven']);
        inApply.resolve();
        await finish.promise;
      });
      await inApply.promise;
      let lowRan = false;
      const low = stores.fence.write('r', 6, async (tx) => {
        lowRan = true;
        await tx.query(upsert, ['r', 'six']);
      });
      await sleep(100); // the low writer waits for the fence row (pg) or the session (PGlite)
      expect(lowRan).toBe(false);
      finish.resolve();
      await high;
      const error = await rejection(low);
      expect(error).toMatchObject({ fence: 6, highest: 7 });
      expect(lowRan).toBe(false);
      expect(await values()).toEqual(['r=seven']);
      await stores.close();
    });
  });
}

pg.describe('lock and fence stores on PostgreSQL (pg)', () => {
  sharedScenarios('pg', () => ({
    stores: (overrides) => serverStores(pg, overrides),
    sql: async (text, params) => (await pg.admin().query(text, params)).rows,
    counting: () => countingPool(pg.pool()),
    transactionStatements: 2,
    async listen(channel, onPayload) {
      const client = pg.client();
      await client.connect();
      client.on('notification', (message) => onPayload(message.payload ?? ''));
      await client.query(`LISTEN "${channel}"`);
      return () => client.end();
    },
  }));

  it('a waiter on another pool is woken by the release of a holder whose store set does not listen', async () => {
    const holder = await serverStores(pg, { listen: false });
    const waiter = postgresStores(pg.pool(), { schema: pg.schema });
    await holder.lock.acquire('k', 'a', 10_000);
    let woken = 0;
    const unwatch = waiter.lock.watch!('k', () => (woken += 1));
    await expect.poll(() => woken).toBe(1); // listening: the watcher looks once
    const marked = async () =>
      (await pg.admin().query(`SELECT waiters FROM "${pg.schema}".locks WHERE key = 'k'`)).rows[0]?.waiters;
    await expect.poll(marked).toBe(true); // so the release notifies
    await holder.lock.release('k', 'a');
    await expect.poll(() => woken).toBe(2); // nothing else would wake it: this waiter never polls
    unwatch();
    await Promise.all([holder.close(), waiter.close()]);
  });
});

describe('lock and fence stores on PGlite', () => {
  const embedded = useEmbeddedPostgres();
  sharedScenarios('PGlite', () => ({
    stores: (overrides) => embedded.stores(overrides),
    sql: async (text, params) => (await embedded.db().query<never>(text, params)).rows,
    counting: () => countingPGlite(embedded.db()),
    transactionStatements: 0,
    listen: (channel, onPayload) => embedded.db().listen(channel, onPayload),
  }));
});
