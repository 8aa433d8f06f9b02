/**
 * The PostgreSQL inbox on `pg` and on PGlite: a message's row commits with the handler's writes on
 * the consumer's own transaction or not at all, a duplicate returns the recorded result without
 * running the handler, a fingerprint that differs is refused, bad input sends nothing, and the
 * reaper deletes only rows past the retention. On `pg`, two transactions processing one message at
 * once run the handler once.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { describe, expect, it } from 'vitest';
import { isIdempotencyConflictError } from '../../src/idempotency/errors.js';
import {
  INBOX_RETENTION_MS,
  type PostgresStores,
  type PostgresTransaction,
} from '../../src/stores/postgres/index.js';
import { FakeClock } from '../../src/testing/fake-clock.js';
import {
  pgTransaction,
  type StoreOverrides,
  serverStores,
  useEmbeddedPostgres,
} from '../support/postgres-stores.js';
import { usePostgres } from '../support/services.js';

const pg = await usePostgres();

interface Backend {
  /** A migrated store set on a fresh schema. */
  stores(overrides?: StoreOverrides): Promise<PostgresStores>;
  /** Runs a statement outside the stores (for setup and checks). */
  sql<R>(text: string, params?: unknown[]): Promise<R[]>;
  /** Runs `work` in a transaction of the consumer's own: commits when it resolves, else rolls back. */
  transaction<T>(work: (tx: PostgresTransaction) => Promise<T>): Promise<T>;
}

interface InboxRow {
  readonly consumer: string;
  readonly message_id: string;
  readonly fingerprint: string | null;
  readonly result: string | null;
}

async function rejection(promise: Promise<unknown>): Promise<unknown> {
  try {
    await promise;
  } catch (error) {
    return error;
  }
  throw new Error('expected a rejection');
}

/** `tx`, with the text of every statement sent through it recorded in `sent`. */
function recording(tx: PostgresTransaction, sent: string[]): PostgresTransaction {
  return {
    query<R>(text: string, params?: unknown[]) {
      sent.push(text);
      return tx.query<R>(text, params);
    },
  };
}

/** A migrated store set with an `effects` table the handlers write to, and a test's helpers. */
async function setup(b: Backend, overrides?: StoreOverrides) {
  const stores = await b.stores(overrides);
  const s = `"${stores.schema}"`;
  await b.sql(`CREATE TABLE ${s}.effects (id serial PRIMARY KEY, message text NOT NULL)`);
  const effect = (tx: PostgresTransaction, message: string) =>
    tx.query(`INSERT INTO ${s}.effects (message) VALUES ($1)`, [message]);
  return {
    stores,
    effect,
    effects: async () => {
      const rows = await b.sql<{ message: string }>(`SELECT message FROM ${s}.effects ORDER BY id`);
      return rows.map((r) => r.message);
    },
    rows: () => b.sql<InboxRow>(`SELECT * FROM ${s}.inbox ORDER BY consumer, message_id`),
    /** Delivers `messageId` to consumer `c` in a transaction of its own; the handler writes one effect. */
    async deliver(messageId: string, fingerprint?: string, sent: string[] = []) {
      let ran = false;
      const message = { consumer: 'c', messageId, fingerprint };
      const outcome = await b.transaction((tx) =>
        stores.inbox.process(recording(tx, sent), message, async (own) => {
          ran = true;
          await effect(own, messageId);
          return { charged: 5, message: messageId };
        }),
      );
      return { ...outcome, ran };
    },
  };
}

function sharedScenarios(name: string, backend: () => Backend): void {
  describe(`${name}: once per message, on the consumer's transaction`, () => {
    it('the first delivery runs the handler; its effect commits with the inbox row (two statements)', async () => {
      const t = await setup(backend());
      const sent: string[] = [];
      const result = { charged: 5, message: 'm1' };
      expect(await t.deliver('m1', 'f', sent)).toEqual({ duplicate: false, result, ran: true });
      expect(sent.filter((text) => !text.includes('effects'))).toHaveLength(2);
      expect(await t.effects()).toEqual(['m1']);
      const row = { consumer: 'c', message_id: 'm1', fingerprint: 'f', result: JSON.stringify(result) };
      expect(await t.rows()).toMatchObject([row]);
      await t.stores.close();
    });

    it('a handler that throws (or returns what JSON would not give back): no inbox row, its effect rolled back; the next delivery runs it', async () => {
      const b = backend();
      const t = await setup(b);
      const boom = new Error('boom');
      const failed = b.transaction((tx) =>
        t.stores.inbox.process(tx, { consumer: 'c', messageId: 'm1' }, async (own) => {
          await t.effect(own, 'm1');
          throw boom;
        }),
      );
      expect(await rejection(failed)).toBe(boom);
      // A result JSON would not give back: a TypeError after the handler ran, rolled back as well.
      const dated = b.transaction((tx) =>
        t.stores.inbox.process(tx, { consumer: 'c', messageId: 'm1' }, () => new Date()),
      );
      expect(await rejection(dated)).toHaveProperty(
        'message',
        expect.stringMatching(/inbox handler to be JSON-serialisable/),
      );
      expect(await t.rows()).toEqual([]);
      expect(await t.effects()).toEqual([]);
      expect(await t.deliver('m1')).toMatchObject({ duplicate: false, ran: true });
      expect(await t.effects()).toEqual(['m1']);
      await t.stores.close();
    });

    it('duplicates return the recorded result without running the handler (one effect after 5 deliveries)', async () => {
      const b = backend();
      const t = await setup(b);
      const outcomes = [];
      for (let i = 0; i < 5; i++) outcomes.push(await t.deliver('m1', undefined));
      const result = { charged: 5, message: 'm1' };
      expect(outcomes[0]).toEqual({ duplicate: false, result, ran: true });
      for (const later of outcomes.slice(1)) expect(later).toEqual({ duplicate: true, result, ran: false });
      expect(await t.effects()).toEqual(['m1']);
      // An undefined result is recorded as NULL and replayed as undefined; other consumers are apart.
      const none = () =>
        b.transaction((tx) =>
          t.stores.inbox.process(tx, { consumer: 'd', messageId: 'm1' }, () => undefined),
        );
      expect(await none()).toEqual({ duplicate: false, result: undefined });
      expect(await none()).toEqual({ duplicate: true, result: undefined });
      expect((await t.rows()).map((r) => r.result)).toEqual([JSON.stringify(result), null]);
      await t.stores.close();
    });

    it('a fingerprint that differs is refused and the handler not run; compared only when both are given', async () => {
      const t = await setup(backend());
      await t.deliver('m1', 'f1');
      const error = await rejection(t.deliver('m1', 'f2'));
      expect(isIdempotencyConflictError(error)).toBe(true);
      expect(error).toMatchObject({ key: 'm1', kind: 'conflict' });
      expect(await t.deliver('m1', 'f1')).toMatchObject({ duplicate: true, ran: false });
      expect(await t.deliver('m1')).toMatchObject({ duplicate: true, ran: false });
      await t.deliver('m2');
      expect(await t.deliver('m2', 'f')).toMatchObject({ duplicate: true, ran: false });
      expect(await t.effects()).toEqual(['m1', 'm2']);
      await t.stores.close();
    });

    it('hostile consumer and message ids round-trip', async () => {
      const b = backend();
      const t = await setup(b);
      const ids = [`'; DROP TABLE inbox; --`, '"quoted"', 'ü 🚀 \uFFFF', ' ', 'x'.repeat(1_000), '\\', '%_'];
      const process = (id: string, result: string) =>
        b.transaction((tx) =>
          t.stores.inbox.process(tx, { consumer: id, messageId: id, fingerprint: id }, () => ({ result })),
        );
      for (const id of ids)
        expect(await process(id, id)).toEqual({ duplicate: false, result: { result: id } });
      for (const id of ids)
        expect(await process(id, 'ran')).toEqual({ duplicate: true, result: { result: id } });
      const rows = await t.rows();
      expect(rows.map((r) => [r.consumer, r.message_id, r.fingerprint]).sort()).toEqual(
        ids.map((id) => [id, id, id]).sort(),
      );
      await t.stores.close();
    });
  });

  describe(`${name}: retention`, () => {
    const past = `clock_timestamp() - ${INBOX_RETENTION_MS + 60_000} * interval '1 millisecond'`;

    it('reap() deletes only rows past the retention, in batches; a reaped message is processed again', async () => {
      const b = backend();
      const t = await setup(b);
      const table = `"${t.stores.schema}".inbox`;
      await b.sql(
        `INSERT INTO ${table} (consumer, message_id, processed_at)
         SELECT 'bulk', 'm' || i, ${past} FROM generate_series(1, 2500) AS i`,
      );
      await t.deliver('old');
      await t.deliver('recent');
      await b.sql(`UPDATE ${table} SET processed_at = ${past} WHERE message_id = 'old'`);
      await b.sql(`UPDATE ${table} SET processed_at = now() - interval '6 days' WHERE message_id = 'recent'`);
      expect(await t.stores.inbox.reap()).toBe(2501);
      expect((await t.rows()).map((r) => r.message_id)).toEqual(['recent']);
      expect(await t.stores.inbox.reap()).toBe(0);
      expect(await t.deliver('old')).toMatchObject({ duplicate: false, ran: true });
      expect(await t.deliver('recent')).toMatchObject({ duplicate: true, ran: false });
      await t.stores.close();
    });

    it('the reaper runs every minute from the first process, on the store set clock; close() stops it', async () => {
      const b = backend();
      const clock = new FakeClock(1_000);
      const t = await setup(b, { clock });
      await b.sql(`INSERT INTO "${t.stores.schema}".inbox VALUES ('c', 'old', NULL, NULL, ${past})`);
      await clock.advance(60_000);
      expect(await t.rows()).toHaveLength(1); // not started yet
      await t.deliver('new');
      await clock.advance(60_000);
      await expect.poll(async () => (await t.rows()).map((r) => r.message_id)).toEqual(['new']);
      await t.stores.close();
      expect(clock.pendingTimers).toBe(0);
    });
  });
}

pg.describe('inbox on PostgreSQL (pg)', () => {
  const backend = (): Backend => {
    const pool = pg.pool();
    return {
      stores: (overrides) => serverStores(pg, overrides),
      sql: async (text, params) => (await pg.admin().query(text, params)).rows,
      transaction: (work) => pgTransaction(pool, work),
    };
  };
  sharedScenarios('pg', backend);

  it.each([
    ['commits', 'a duplicate', true],
    ['rolls back', 'runs the handler', false],
  ])(
    'two transactions, one message: the second waits for the first; it %s, the second %s',
    async (_, __, commit) => {
      const t = await setup(backend());
      const pool = pg.pool();
      const [first, second] = [await pool.connect(), await pool.connect()];
      await first.query('BEGIN');
      await second.query('BEGIN');
      const message = { consumer: 'c', messageId: 'm1' };
      const handler = (who: string) => async (tx: PostgresTransaction) => {
        await t.effect(tx, who);
        return who;
      };
      expect(await t.stores.inbox.process(first, message, handler('first'))).toEqual({
        duplicate: false,
        result: 'first',
      });
      let settled = false;
      const waiting = t.stores.inbox
        .process(second, message, handler('second'))
        .finally(() => (settled = true));
      await sleep(200);
      expect(settled).toBe(false);
      await first.query(commit ? 'COMMIT' : 'ROLLBACK');
      expect(await waiting).toEqual(
        commit ? { duplicate: true, result: 'first' } : { duplicate: false, result: 'second' },
      );
      await second.query('COMMIT');
      first.release();
      second.release();
      expect(await t.effects()).toEqual([commit ? 'first' : 'second']);
      await t.stores.close();
    },
  );
});

describe('inbox on PGlite', () => {
  const embedded = useEmbeddedPostgres();
  sharedScenarios('PGlite', () => ({
    stores: (overrides) => embedded.stores(overrides),
    sql: async (text, params) => (await embedded.db().query<never>(text, params)).rows,
    transaction: (work) => embedded.db().transaction(work),
  }));
});
