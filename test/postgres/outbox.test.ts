/**
 * The PostgreSQL outbox on `pg` and on PGlite: events exist exactly when the transaction commits;
 * a key's events go in commit order, one at a time; an event from a transaction that commits late
 * is never skipped; a stuck key holds back only itself; leases, dead letters, redrive, bad input;
 * and a relay delivering everything through it. On `pg` also: two transactions on one key
 * serialise, and concurrent claims never share an event.
 */
import type { PGlite } from '@electric-sql/pglite';
import { describe, expect, it } from 'vitest';
import { OutboxPublishError } from '../../src/outbox/errors.js';
import { outboxRelay } from '../../src/outbox/outbox-relay.js';
import type { OutboxMessage, Publish } from '../../src/outbox/store.js';
import type { PostgresStores, PostgresTransaction } from '../../src/stores/postgres/index.js';
import { FakeClock } from '../../src/testing/index.js';
import { deferred } from '../support/deferred.js';
import {
  pgTransaction,
  type StoreOverrides,
  serverStores,
  useEmbeddedPostgres,
} from '../support/postgres-stores.js';
import { usePostgres } from '../support/services.js';

/** Waits until `condition()` holds, trying every 20 ms; fails after `timeoutMs`. */
async function eventually(condition: () => boolean | Promise<boolean>, timeoutMs = 5_000): Promise<void> {
  const start = Date.now();
  while (!(await condition())) {
    if (Date.now() - start > timeoutMs) throw new Error('the condition never held');
    await new Promise((r) => setTimeout(r, 20));
  }
}

const pg = await usePostgres();

interface Backend {
  stores(overrides?: StoreOverrides): Promise<PostgresStores>;
  /** Runs `work` in a transaction; rolls back when it throws. */
  transaction<T>(work: (tx: PostgresTransaction) => Promise<T>): Promise<T>;
}

const event = (n: number | string, key?: string) => ({ topic: 'orders', key, payload: { n } });
const numbers = (messages: readonly OutboxMessage[]) => messages.map((m) => (m.payload as { n: unknown }).n);

/** A publisher recording what it published, in order; `fail(m)` names the events to fail. */
function recorder(fail: (m: OutboxMessage) => boolean = () => false) {
  const published: unknown[] = [];
  const publish: Publish = async (messages) => {
    const failures = new Map<string, unknown>();
    for (const m of messages) {
      if (fail(m)) failures.set(m.id, new Error('refused'));
      else published.push((m.payload as { n: unknown }).n);
    }
    if (failures.size > 0) throw new OutboxPublishError(failures);
  };
  return { publish, published };
}

function scenarios(name: string, backend: () => Backend): void {
  describe(name, () => {
    it('an event exists exactly when its transaction commits, with its payload and headers', async () => {
      const b = backend();
      const stores = await b.stores();
      await expect(
        b.transaction(async (tx) => {
          await stores.outbox.enqueue(tx, [event(1)]);
          throw new Error('rolled back');
        }),
      ).rejects.toThrow('rolled back');
      expect(await stores.outbox.claim('r', 10, 10_000)).toEqual([]);
      const payload = { n: 2, nested: { list: [1, 'two', null], emoji: '😀', quote: '\'"' } };
      const ids = await b.transaction((tx) =>
        stores.outbox.enqueue(tx, [{ topic: 't', key: 'k', payload, headers: { traceparent: '00-abc' } }]),
      );
      const [claimed] = await stores.outbox.claim('r', 10, 10_000);
      expect(claimed).toMatchObject({
        id: ids[0],
        topic: 't',
        key: 'k',
        payload,
        headers: { traceparent: '00-abc' },
        attempts: 0,
      });
      expect(typeof claimed?.createdAt).toBe('number');
      await stores.close();
    });

    it("takes only a key's oldest pending event; unkeyed events and other keys go together", async () => {
      const b = backend();
      const stores = await b.stores();
      await b.transaction((tx) =>
        stores.outbox.enqueue(tx, [event(1, 'a'), event(2, 'a'), event(3, 'b'), event(4)]),
      );
      await b.transaction((tx) => stores.outbox.enqueue(tx, [event(5, 'a'), event(6)]));
      const first = await stores.outbox.claim('r', 10, 10_000);
      expect(numbers(first)).toEqual([1, 3, 4, 6]);
      expect(await stores.outbox.claim('other', 10, 10_000)).toEqual([]); // leased, and heads held
      expect(
        await stores.outbox.delivered(
          'r',
          first.map((m) => m.id),
        ),
      ).toBe(4);
      expect(numbers(await stores.outbox.claim('r', 10, 10_000))).toEqual([2]);
      await stores.close();
    });

    it('with more keys queued than the claim remembers (100 > 64), each claim takes heads only, whoever holds the rest', async () => {
      const b = backend();
      const stores = await b.stores();
      const keys = Array.from({ length: 100 }, (_, k) => k);
      const rounds = [0, 1, 2].flatMap((r) => keys.map((k) => event(`${k}.${r}`, `k${k}`)));
      await b.transaction((tx) =>
        stores.outbox.enqueue(tx, [...rounds, ...[0, 1, 2, 3, 4].map((n) => event(`u${n}`))]),
      );
      const round = (r: number, from: number, to: number) => keys.slice(from, to).map((k) => `${k}.${r}`);
      const a = await stores.outbox.claim('a', 50, 10_000);
      expect(numbers(a)).toEqual(round(0, 0, 50));
      const bHeads = await stores.outbox.claim('b', 1_000, 10_000);
      expect(numbers(bHeads)).toEqual([...round(0, 50, 100), 'u0', 'u1', 'u2', 'u3', 'u4']);
      expect(await stores.outbox.claim('x', 1_000, 10_000)).toEqual([]); // every head leased
      await stores.outbox.delivered(
        'a',
        a.map((m) => m.id),
      );
      const c = await stores.outbox.claim('c', 1_000, 10_000);
      expect(numbers(c)).toEqual(round(1, 0, 50));
      const keyed = bHeads.filter((m) => m.key !== undefined);
      const retryLater = keyed.map((m) => ({ id: m.id, error: 'Error: no', retryInMs: 60_000, dead: false }));
      expect(await stores.outbox.failed('b', retryLater)).toBe(50);
      await stores.outbox.delivered(
        'b',
        bHeads.filter((m) => m.key === undefined).map((m) => m.id),
      );
      expect(await stores.outbox.claim('d', 1_000, 10_000)).toEqual([]); // heads leased or waiting to retry
      await stores.outbox.delivered(
        'c',
        c.map((m) => m.id),
      );
      expect(numbers(await stores.outbox.claim('e', 1_000, 10_000))).toEqual(round(2, 0, 50));
      await stores.close();
    });

    it("a head due after its key's queue is still taken first, for more keys than the claim remembers", async () => {
      const b = backend();
      const stores = await b.stores();
      const keys = Array.from({ length: 100 }, (_, k) => k);
      await b.transaction((tx) =>
        stores.outbox.enqueue(tx, [
          ...[0, 1].flatMap((r) => keys.map((k) => event(`${k}.${r}`, `k${k}`))),
          event('u0'),
        ]),
      );
      const heads = await stores.outbox.claim('a', 1_000, 10_000);
      expect(numbers(heads)).toEqual([...keys.map((k) => `${k}.0`), 'u0']);
      // Retried by a relay of a version before migration 6 (which leaves the queues as they are):
      // each head is now due after the rest of its key's queue.
      await b.transaction(async (tx) => {
        await tx.query(
          `UPDATE "${stores.schema}".outbox SET attempts = 1, available_at = clock_timestamp(), owner = NULL, lease_until = NULL WHERE owner = 'a'`,
        );
      });
      const again = await stores.outbox.claim('b', 1_000, 10_000);
      expect(numbers(again)).toEqual([...keys.map((k) => `${k}.0`), 'u0']);
      expect(again.every((m) => m.attempts === 1)).toBe(true);
      await stores.close();
    });

    it("a key's queue falls due no sooner than its head: after the head's failure, and when enqueued behind it", async () => {
      const b = backend();
      const stores = await b.stores();
      const table = `"${stores.schema}".outbox`;
      await b.transaction((tx) =>
        stores.outbox.enqueue(tx, [event('a1', 'a'), event('a2', 'a'), event('b1', 'b'), event('b2', 'b')]),
      );
      const [a1, b1] = await stores.outbox.claim('r', 10, 10_000);
      await stores.outbox.failed('r', [
        { id: a1!.id, error: 'Error: no', retryInMs: 60_000, dead: false },
        { id: b1!.id, error: 'Error: poison', retryInMs: 0, dead: true },
      ]);
      await b.transaction((tx) => stores.outbox.enqueue(tx, [event('a3', 'a'), event('c1', 'c')]));
      const due = await b.transaction(async (tx) => {
        const { rows } = await tx.query<{ n: string; late: boolean }>(
          `SELECT payload->>'n' AS n, available_at > clock_timestamp() + interval '50 seconds' AS late
           FROM ${table} WHERE status = 'pending' ORDER BY seq`,
        );
        return rows.map((r) => [r.n, r.late]);
      });
      // a's queue waits for a1's retry; b2 goes (b1 is dead); c1 has no head to wait for.
      expect(due).toEqual([
        ['a1', true],
        ['a2', true],
        ['b2', false],
        ['a3', true],
        ['c1', false],
      ]);
      expect(numbers(await stores.outbox.claim('s', 10, 10_000))).toEqual(['b2', 'c1']);
      await stores.close();
    });

    it('a batch comes oldest first, whatever order the events fell due in', async () => {
      const b = backend();
      const stores = await b.stores();
      await b.transaction((tx) => stores.outbox.enqueue(tx, [event('u1'), event('u2')]));
      const [u1] = await stores.outbox.claim('a', 1, 10_000);
      expect(numbers([u1!])).toEqual(['u1']);
      // u1 falls due again after u2 did.
      await stores.outbox.failed('a', [{ id: u1!.id, error: 'Error: no', retryInMs: 0, dead: false }]);
      expect(numbers(await stores.outbox.claim('b', 10, 10_000))).toEqual(['u1', 'u2']);
      await stores.close();
    });

    it('a failing head holds back its key only; after maxAttempts it is a dead letter and the key moves on; redrive', async () => {
      const b = backend();
      const stores = await b.stores();
      await b.transaction((tx) =>
        stores.outbox.enqueue(tx, [event('a1', 'a'), event('a2', 'a'), event('b1', 'b')]),
      );
      const [a1, b1] = await stores.outbox.claim('r', 10, 10_000);
      const failure = { id: a1!.id, error: 'Error: refused', retryInMs: 60_000, dead: false };
      expect(await stores.outbox.failed('r', [failure])).toBe(1);
      await stores.outbox.delivered('r', [b1!.id]);
      expect(await stores.outbox.claim('r', 10, 10_000)).toEqual([]); // a1 waits for its retry; a2 behind it
      expect(await stores.outbox.failed('r', [failure])).toBe(0); // no longer held
      // a1's retry time comes, and with it its queue's.
      await b.transaction(async (tx) => {
        await tx.query(
          `UPDATE "${stores.schema}".outbox SET available_at = clock_timestamp() WHERE key = 'a' AND status = 'pending'`,
        );
      });
      const [again] = await stores.outbox.claim('r', 10, 10_000);
      expect([again?.id, again?.attempts]).toEqual([a1!.id, 1]);
      await stores.outbox.failed('r', [{ ...failure, dead: true, error: 'Error: poison' }]);
      const letters = await stores.outbox.deadLetters();
      expect(letters.map((l) => [l.id, l.attempts, l.lastError])).toEqual([[a1!.id, 2, 'Error: poison']]);
      expect(numbers(await stores.outbox.claim('r', 10, 10_000))).toEqual(['a2']);
      expect(await stores.outbox.redrive({ topic: 'other' })).toBe(0);
      expect(await stores.outbox.redrive({ ids: [a1!.id] })).toBe(1);
      expect(await stores.outbox.deadLetters()).toEqual([]);
      // Redriven, a1 is its key's head again (a2, still leased to r, went out of order: it was dead).
      expect(numbers(await stores.outbox.claim('s', 10, 10_000))).toEqual(['a1']);
      await stores.close();
    });

    it('a lease that ended lets another relay claim; the former owner can then mark nothing', async () => {
      const b = backend();
      const stores = await b.stores();
      await b.transaction((tx) => stores.outbox.enqueue(tx, [event(1)]));
      const [m] = await stores.outbox.claim('old', 10, 300);
      expect(await stores.outbox.claim('new', 10, 10_000)).toEqual([]);
      await eventually(async () => (await stores.outbox.claim('new', 10, 10_000)).length === 1);
      expect(await stores.outbox.delivered('old', [m!.id])).toBe(0);
      expect(await stores.outbox.delivered('new', [m!.id])).toBe(1);
      await stores.close();
    });

    it('refuses bad input with a TypeError before sending anything', async () => {
      const b = backend();
      const stores = await b.stores();
      await b.transaction(async (tx) => {
        await expect(stores.outbox.enqueue(tx, [{ topic: '', payload: 1 }])).rejects.toThrow(/"topic"/);
        await expect(
          stores.outbox.enqueue(tx, [{ topic: 't', payload: { at: new Date() } }]),
        ).rejects.toThrow(/Date/);
        await expect(stores.outbox.enqueue(tx, [{ topic: 't', payload: 'a\u0000b' }])).rejects.toThrow(
          /U\+0000/,
        );
        await expect(stores.outbox.enqueue(tx, [{ topic: 't', key: 'k\u0000', payload: 1 }])).rejects.toThrow(
          /"key"/,
        );
        await expect(stores.outbox.enqueue({} as never, [event(1)])).rejects.toThrow(/"tx"/);
      });
      await expect(stores.outbox.delivered('r', ['not-a-uuid'])).rejects.toThrow(/UUIDs/);
      await expect(stores.outbox.claim('', 10, 1_000)).rejects.toThrow(/"owner"/);
      await expect(stores.outbox.claim('r', 0, 1_000)).rejects.toThrow(/"limit"/);
      await expect(stores.outbox.claim('r', 10, 0.5)).rejects.toThrow(/"leaseMs"/);
      expect(await stores.outbox.claim('r', 10, 10_000)).toEqual([]);
      await stores.close();
    });

    it('release hands the claimed events back at once; failed keeps the error readable; dead letters and redrive filter by topic; reap deletes what was delivered over an hour ago', async () => {
      const b = backend();
      const stores = await b.stores();
      const { outbox } = stores;
      await b.transaction((tx) =>
        outbox.enqueue(tx, [event(1), { topic: 'payments', payload: { n: 2 } }, event(3)]),
      );
      expect(await outbox.claim('r', 1, 60_000)).toHaveLength(1);
      await outbox.release('r');
      const claimed = await outbox.claim('s', 10, 60_000);
      expect(numbers(claimed)).toEqual([1, 2, 3]);
      const [one, two, three] = claimed;
      const dead = (id: string, error: string) => ({ id, error, retryInMs: 0, dead: true });
      expect(
        await outbox.failed('s', [dead(one!.id, 'Error: a\u0000b'), dead(two!.id, 'Error: declined')]),
      ).toBe(2);
      expect((await outbox.deadLetters({ topic: 'payments' })).map((l) => l.id)).toEqual([two!.id]);
      expect((await outbox.deadLetters({ limit: 1 })).map((l) => l.lastError)).toEqual(['Error: a\uFFFDb']);
      expect(await outbox.redrive({ ids: [one!.id] })).toBe(1);
      expect((await outbox.deadLetters()).map((l) => l.id)).toEqual([two!.id]);
      expect(await outbox.redrive({ topic: 'payments' })).toBe(1);
      expect(await outbox.deadLetters()).toEqual([]);

      expect(await outbox.delivered('s', [three!.id])).toBe(1);
      expect(await outbox.reap()).toBe(0); // delivered just now: kept for an hour
      await b.transaction(async (tx) => {
        await tx.query(
          `UPDATE "${stores.schema}".outbox SET delivered_at = clock_timestamp() - interval '61 minutes' WHERE id = $1`,
          [three!.id],
        );
      });
      expect(await outbox.reap()).toBe(1);
      await stores.close();
    });

    it('the reaper runs every minute once a relay claimed, on the store set clock; close() stops it', async () => {
      const b = backend();
      const clock = new FakeClock(1_000);
      const stores = await b.stores({ clock });
      await b.transaction((tx) => stores.outbox.enqueue(tx, [event(1)]));
      const [one] = await stores.outbox.claim('r', 10, 60_000);
      await stores.outbox.delivered('r', [one!.id]);
      await b.transaction(async (tx) => {
        await tx.query(
          `UPDATE "${stores.schema}".outbox SET delivered_at = clock_timestamp() - interval '2 hours'`,
        );
      });
      const count = async () => {
        let n = 0;
        await b.transaction(async (tx) => {
          const { rows } = await tx.query<{ n: number }>(
            `SELECT count(*)::int AS n FROM "${stores.schema}".outbox`,
          );
          n = rows[0]!.n;
        });
        return n;
      };
      expect(await count()).toBe(1);
      await clock.advance(60_000);
      await expect.poll(count).toBe(0);
      await stores.close();
      expect(clock.pendingTimers).toBe(0);
    });

    it('refuses a bad owner, ids, topic or transaction client with a TypeError naming it', async () => {
      const b = backend();
      const stores = await b.stores();
      const { outbox } = stores;
      const id = '00000000-0000-4000-8000-000000000000';
      await expect(outbox.enqueue(null as never, [event(1)])).rejects.toThrow(
        /"tx" to be a transaction client/,
      );
      const callable = Object.assign(() => undefined, { query: () => Promise.resolve({ rows: [] }) });
      await expect(outbox.enqueue(callable as never, [event(1)])).rejects.toThrow(
        /"tx" to be a transaction client/,
      );
      await expect(outbox.delivered('', [id])).rejects.toThrow(/"owner"/);
      await expect(outbox.failed('', [])).rejects.toThrow(/"owner"/);
      await expect(outbox.release('')).rejects.toThrow(/"owner"/);
      await expect(outbox.delivered('r', id as never)).rejects.toThrow(/"ids" to be an array of event ids/);
      await expect(outbox.delivered('r', [id, 'nope'])).rejects.toThrow(/"ids" to be an array of event ids/);
      await expect(outbox.delivered('r', [Object(id)])).rejects.toThrow(/"ids" to be an array of event ids/);
      // Nothing to write: not a statement sent on the caller's transaction.
      const statements: string[] = [];
      await b.transaction(async (tx) => {
        const recording: PostgresTransaction = {
          query: (text, params) => {
            statements.push(text);
            return tx.query(text, params);
          },
        };
        expect(await outbox.enqueue(recording, [])).toEqual([]);
      });
      expect(statements).toEqual([]);
      await expect(outbox.deadLetters({ topic: '' })).rejects.toThrow(/"topic"/);
      await expect(outbox.redrive({ topic: '' })).rejects.toThrow(/"topic"/);
      await expect(outbox.deadLetters({ limit: 0 })).rejects.toThrow(/"limit"/);
      expect(await outbox.deadLetters({ limit: 1 })).toEqual([]);
      await stores.close();
    });

    it('a relay delivers 200 events of 10 keys, each key in order, and wakes on commit', async () => {
      const b = backend();
      const stores = await b.stores();
      let flaky = 0;
      const { publish, published } = recorder(() => ++flaky % 7 === 0);
      const relay = outboxRelay({ outbox: stores.outbox, publish, backoff: () => 20, pollMs: 60_000 });
      relay.start();
      for (let t = 0; t < 20; t++) {
        await b.transaction((tx) =>
          stores.outbox.enqueue(
            tx,
            Array.from({ length: 10 }, (_, k) => event(`${k}:${t}`, `key-${k}`)),
          ),
        );
      }
      await eventually(() => published.length === 200, 15_000);
      await relay.stop();
      for (let k = 0; k < 10; k++) {
        const ofKey = published.filter((n) => String(n).startsWith(`${k}:`));
        expect(ofKey).toEqual(Array.from({ length: 20 }, (_, t) => `${k}:${t}`));
      }
      await stores.close();
    });
  });
}

scenarios('the PostgreSQL outbox (pg)', () => ({
  stores: (overrides) => serverStores(pg, overrides),
  transaction: (work) => pgTransaction(pg.pool(), work),
}));

describe('the PostgreSQL outbox (PGlite)', () => {
  const embedded = useEmbeddedPostgres();
  scenarios('PGlite', () => ({
    stores: (overrides) => embedded.stores(overrides),
    transaction: (work) => (embedded.db() as PGlite).transaction((tx) => work(tx)),
  }));
});

pg.describe('the PostgreSQL outbox (pg): across connections', () => {
  it('two transactions on one key serialise: the later one waits, and its event goes second', async () => {
    const stores = await serverStores(pg);
    const pool = pg.pool();
    const first = await pool.connect();
    const second = await pool.connect();
    await first.query('BEGIN');
    await stores.outbox.enqueue(first, [event('first', 'k')]);
    await second.query('BEGIN');
    let secondEnqueued = false;
    const waiting = stores.outbox.enqueue(second, [event('second', 'k')]).then(() => (secondEnqueued = true));
    await new Promise((r) => setTimeout(r, 200));
    expect(secondEnqueued).toBe(false);
    await first.query('COMMIT');
    await waiting;
    await second.query('COMMIT');
    first.release();
    second.release();
    const [head] = await stores.outbox.claim('r', 10, 10_000);
    expect(numbers([head!])).toEqual(['first']);
    await stores.outbox.delivered('r', [head!.id]);
    expect(numbers(await stores.outbox.claim('r', 10, 10_000))).toEqual(['second']);
    await stores.close();
  });

  it('an event whose transaction commits late is delivered, not skipped', async () => {
    const stores = await serverStores(pg);
    const pool = pg.pool();
    const { publish, published } = recorder();
    const relay = outboxRelay({ outbox: stores.outbox, publish, pollMs: 100 });
    relay.start();
    const late = await pool.connect();
    await late.query('BEGIN');
    await stores.outbox.enqueue(late, [event('late')]); // the lower seq, still uncommitted
    const early = await pool.connect();
    await early.query('BEGIN');
    await stores.outbox.enqueue(early, [event('early')]);
    await early.query('COMMIT');
    await eventually(() => published.includes('early'));
    await late.query('COMMIT');
    await eventually(() => published.includes('late'));
    expect(published).toEqual(['early', 'late']);
    late.release();
    early.release();
    await relay.stop();
    await stores.close();
  });

  it('failed leaves a queued event another transaction has locked as it is, without waiting', async () => {
    const stores = await serverStores(pg);
    const table = `"${stores.schema}".outbox`;
    await pgTransaction(pg.pool(), (tx) => stores.outbox.enqueue(tx, [event('a1', 'a'), event('a2', 'a')]));
    const [a1] = await stores.outbox.claim('r', 10, 10_000);
    const holder = await pg.pool().connect();
    try {
      await holder.query('BEGIN');
      await holder.query(`SELECT 1 FROM ${table} WHERE payload->>'n' = 'a2' FOR UPDATE`);
      const failure = { id: a1!.id, error: 'Error: no', retryInMs: 60_000, dead: false };
      expect(await stores.outbox.failed('r', [failure])).toBe(1); // within the store's 1 s deadline
      await holder.query('COMMIT');
    } finally {
      holder.release();
    }
    const { rows } = await pg
      .admin()
      .query<{ n: string; late: boolean }>(
        `SELECT payload->>'n' AS n, available_at > clock_timestamp() + interval '50 seconds' AS late FROM ${table} ORDER BY seq`,
      );
    expect(rows.map((r) => [r.n, r.late])).toEqual([
      ['a1', true],
      ['a2', false],
    ]);
    await stores.close();
  });

  it('concurrent claims from 8 relays never share an event', async () => {
    const stores = await serverStores(pg);
    const client = await pg.pool().connect();
    await client.query('BEGIN');
    await stores.outbox.enqueue(
      client,
      Array.from({ length: 300 }, (_, i) => event(i, i % 3 === 0 ? undefined : `k${i % 50}`)),
    );
    await client.query('COMMIT');
    client.release();
    const claimants = await Promise.all(Array.from({ length: 8 }, () => serverStores(pg)));
    const gate = deferred<void>();
    const claims = claimants.map(async (s, i) => {
      await gate.promise;
      return s.outbox.claim(`r${i}`, 40, 10_000);
    });
    gate.resolve();
    const ids = (await Promise.all(claims)).flat().map((m) => m.id);
    expect(ids.length).toBeGreaterThan(0);
    expect(new Set(ids).size).toBe(ids.length);
    for (const s of claimants) await s.close();
    await stores.close();
  });
});
