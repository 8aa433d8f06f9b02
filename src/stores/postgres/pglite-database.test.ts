/**
 * PGliteDatabase against a scripted fake instance: which errors reach the caller (a store failure,
 * or the driver's own inside a transaction), which deadline bounds which wait, where a joined
 * statement runs, and the notifications over `listen()`. The real PGlite is in
 * test/postgres/deadline.test.ts and the stores' conformance suites.
 */
import { describe, expect, it } from 'vitest';
import { deferred } from '../../../test/support/deferred.js';
import { isStoreUnavailableError, isTimeoutError, type StoreUnavailableError } from '../../core/errors.js';
import { FakeClock } from '../../testing/fake-clock.js';
import type { PGliteLike, PostgresTransaction } from './database.js';
import { QueryDeadline } from './deadline.js';
import { PGliteDatabase } from './pglite-database.js';

type Rows = { rows: unknown[] };
type Answer = (text: string, params: unknown[] | undefined) => Promise<Rows>;

/** A PGlite: statements answered by `answer`, recorded with where they ran (`db` or `tx`). */
function fakePGlite(answer: Answer = (text) => Promise.resolve({ rows: [{ text }] })) {
  const ran: string[] = [];
  const listeners = new Map<string, Set<(payload: string) => void>>();
  const listens: string[] = [];
  const unlistens: string[] = [];
  let failListen: Error | undefined;
  let failUnlisten: Error | undefined;
  let failTransaction: Error | undefined;
  const pglite: PGliteLike = {
    query<T>(text: string, params?: unknown[]) {
      ran.push(`db: ${text}`);
      return answer(text, params) as Promise<{ rows: T[] }>;
    },
    transaction<T>(callback: Parameters<PGliteLike['transaction']>[0]): Promise<T> {
      if (failTransaction !== undefined) return Promise.reject(failTransaction);
      return callback({
        query<R>(text: string, params?: unknown[]) {
          ran.push(`tx: ${text}`);
          return answer(text, params) as Promise<{ rows: R[] }>;
        },
      }) as Promise<T>;
    },
    listen(channel, callback) {
      listens.push(channel);
      if (failListen !== undefined) {
        const failure = failListen;
        failListen = undefined;
        return Promise.reject(failure);
      }
      const set = listeners.get(channel) ?? new Set();
      listeners.set(channel, set);
      set.add(callback);
      return Promise.resolve(async () => {
        unlistens.push(channel);
        set.delete(callback);
        if (failUnlisten !== undefined) throw failUnlisten;
      });
    },
  };
  return {
    pglite,
    ran,
    listens,
    unlistens,
    /** Delivers `payload` to what listens on `channel`, as PGlite does for a NOTIFY. */
    notify(channel: string, payload: string) {
      for (const callback of listeners.get(channel) ?? []) callback(payload);
    },
    failNextListen(error: Error) {
      failListen = error;
    },
    failUnlisten(error: Error) {
      failUnlisten = error;
    },
    failTransactions(error: Error) {
      failTransaction = error;
    },
  };
}

function setup(answer?: Answer) {
  const clock = new FakeClock();
  const fake = fakePGlite(answer);
  const db = new PGliteDatabase(fake.pglite, new QueryDeadline(clock, 100, 'PGlite'));
  return { clock, db, ...fake };
}

async function rejection(promise: Promise<unknown>): Promise<StoreUnavailableError> {
  try {
    await promise;
  } catch (error) {
    return error as StoreUnavailableError;
  }
  throw new Error('expected a rejection');
}

const settle = () => new Promise<void>((resolve) => setImmediate(resolve));

function expectFailure(error: unknown, cause: unknown): void {
  expect(isStoreUnavailableError(error), String(error)).toBe(true);
  expect((error as Error).message).toBe(`PGlite failed: ${(cause as Error).message}`);
  expect((error as Error).cause).toBe(cause);
}

function expectTimeout(error: unknown, ms = 100): void {
  expect(isStoreUnavailableError(error), String(error)).toBe(true);
  expect((error as Error).message).toBe(`PGlite did not answer within ${ms} ms`);
  expect(isTimeoutError((error as Error).cause)).toBe(true);
}

/** Answers `bad` statements with `error`, the rest with `[{ text }]`. */
const failing =
  (bad: string, error: Error): Answer =>
  (text) =>
    text === bad ? Promise.reject(error) : Promise.resolve({ rows: [{ text }] });

describe('PGliteDatabase.query', () => {
  it('is named PGlite in messages', () => {
    expect(setup().db.what).toBe('PGlite');
  });

  it('resolves with the rows, and its deadline ends with the answer', async () => {
    const { db, clock, ran } = setup();
    expect(await db.query('SELECT 1', [1])).toEqual([{ text: 'SELECT 1' }]);
    expect(ran).toEqual(['db: SELECT 1']);
    expect(clock.aliveTimers).toBe(0);
  });

  it('a rejection is a StoreUnavailableError with the driver error as cause; its deadline is over', async () => {
    const driver = new Error('relation "nope" does not exist');
    const { db, clock } = setup(failing('SELECT * FROM nope', driver));
    expectFailure(await rejection(db.query('SELECT * FROM nope')), driver);
    expect(clock.aliveTimers).toBe(0);
  });

  it('a synchronous throw (a closed instance) is a StoreUnavailableError too, at once', async () => {
    const closed = new Error('PGlite is closed');
    const { db, clock } = setup(() => {
      throw closed;
    });
    expectFailure(await rejection(db.query('SELECT 1')), closed);
    expect(clock.aliveTimers).toBe(0);
  });

  it('a late answer: rejects at the deadline, the answer is dropped', async () => {
    const late = deferred<Rows>();
    const { db, clock } = setup(() => late.promise);
    const pending = rejection(db.query('SELECT 1'));
    await clock.advance(100);
    expectTimeout(await pending);
    late.resolve({ rows: [] });
  });
});

describe('PGliteDatabase.transaction', () => {
  it("tx.query resolves with { rows } and rejects with the driver's own error; work's error is the answer", async () => {
    const duplicate = new Error('duplicate key value violates unique constraint');
    const { db, ran } = setup(failing('INSERT dup', duplicate));
    let rows: unknown;
    let seen: unknown;
    const error = await rejection(
      db.transaction(async (tx) => {
        rows = await tx.query('SELECT 2');
        seen = await tx.query('INSERT dup').catch((e: unknown) => e);
        throw seen;
      }),
    );
    expect(rows).toEqual({ rows: [{ text: 'SELECT 2' }] });
    expect(seen).toBe(duplicate);
    expect(error).toBe(duplicate);
    expect(ran).toEqual(['tx: SELECT 2', 'tx: INSERT dup']);
  });

  it('a synchronous throw of tx.query rejects with that error', async () => {
    const thrown = new Error('PGlite is closed');
    const { db } = setup(() => {
      throw thrown;
    });
    let seen: unknown;
    await db.transaction(async (tx) => {
      seen = await tx.query('SELECT 1').catch((e: unknown) => e);
    });
    expect(seen).toBe(thrown);
  });

  it('a transaction PGlite could not start (BEGIN failed) is a StoreUnavailableError; the work never runs', async () => {
    const { db, failTransactions } = setup();
    const broken = new Error('PGlite is closed');
    failTransactions(broken);
    let ran = false;
    const error = await rejection(
      db.transaction(async () => {
        ran = true;
      }),
    );
    expectFailure(error, broken);
    expect(ran).toBe(false);
  });

  it('a statement joined to the open transaction runs inside it; otherwise it runs on the instance', async () => {
    const driver = new Error('deadlock detected');
    const { db, ran } = setup(failing('UPDATE bad', driver));
    let joined: unknown;
    let failure: unknown;
    const outside = db.query('SELECT outside');
    await db.transaction(async () => {
      joined = await db.query('SELECT joined', [], undefined, true);
      failure = await db.query('UPDATE bad', [], undefined, true).catch((e: unknown) => e);
    });
    await outside;
    // Once the transaction is over there is nothing to join.
    await db.query('SELECT after', [], undefined, true);
    expect(joined).toEqual([{ text: 'SELECT joined' }]);
    expectFailure(failure, driver);
    expect(ran).toEqual(['db: SELECT outside', 'tx: SELECT joined', 'tx: UPDATE bad', 'db: SELECT after']);
  });

  it('without join, a statement issued while a transaction is open does not run inside it', async () => {
    const { db, ran } = setup();
    await db.transaction(async () => {
      await db.query('SELECT alone');
    });
    expect(ran).toEqual(['db: SELECT alone']);
  });
});

describe('PGliteDatabase.queryIn', () => {
  it("on one of our transactions: the transaction's deadline, and a failure is a StoreUnavailableError", async () => {
    const slow = deferred<Rows>();
    const driver = new Error('deadlock detected');
    const { db, clock, ran } = setup((text) => {
      if (text === 'SELECT slow') return slow.promise;
      return text === 'SELECT bad' ? Promise.reject(driver) : Promise.resolve({ rows: [] });
    });
    let rows: unknown;
    let failure: unknown;
    const done = db.transaction(async (tx) => {
      rows = await db.queryIn(tx, 'SELECT slow');
      failure = await db.queryIn(tx, 'SELECT bad').catch((e: unknown) => e);
    }, 5_000);
    // Past the store's 100 ms, within the transaction's 5 s.
    await clock.advance(1_000);
    slow.resolve({ rows: [{ n: 1 }] });
    await done;
    expect(rows).toEqual([{ n: 1 }]);
    expectFailure(failure, driver);
    expect(ran).toEqual(['tx: SELECT slow', 'tx: SELECT bad']);
  });

  it("on a transaction handle of the caller's own: its rows, or a StoreUnavailableError", async () => {
    const { db, clock } = setup();
    const driver = new Error('current transaction is aborted');
    const own = (answer: Answer): PostgresTransaction => ({
      query: <R>(text: string, params?: unknown[]) => answer(text, params) as Promise<{ rows: R[] }>,
    });
    expect(
      await db.queryIn(
        own(() => Promise.resolve({ rows: [{ id: 7 }] })),
        'SELECT 7',
      ),
    ).toEqual([{ id: 7 }]);
    expectFailure(
      await rejection(
        db.queryIn(
          own(() => Promise.reject(driver)),
          'SELECT 1',
        ),
      ),
      driver,
    );
    const late = deferred<Rows>();
    const pending = rejection(
      db.queryIn(
        own(() => late.promise),
        'SELECT 1',
      ),
    );
    await clock.advance(100);
    expectTimeout(await pending);
  });
});

describe('PGliteDatabase.notifications', () => {
  it("listens once per channel with PGlite's listen(), whoever subscribes; each listener hears each payload", async () => {
    const { db, listens, notify } = setup();
    const notifications = db.notifications();
    expect(db.notifications()).toBe(notifications);
    const a: string[] = [];
    const b: string[] = [];
    notifications.subscribe('done:k', (p) => a.push(p));
    notifications.subscribe('done:k', () => {
      throw new Error('a listener bug');
    });
    const stopB = notifications.subscribe('done:k', (p) => b.push(p));
    await settle();
    expect(listens).toEqual(['done:k']);
    notify('done:k', 'one');
    stopB();
    notify('done:k', 'two');
    expect(a).toEqual(['one', 'two']);
    expect(b).toEqual(['one']);
    await notifications.close();
  });

  it("tells the subscribers that asked once the channel's listen() took hold; not after they left, nor on a failed listen()", async () => {
    const { db, failNextListen } = setup();
    const notifications = db.notifications();
    const told: string[] = [];
    notifications.subscribe(
      'ch',
      () => {},
      () => told.push('first'),
    );
    notifications.subscribe('ch', () => {}); // did not ask
    notifications.subscribe(
      'ch',
      () => {},
      () => {
        throw new Error('a listener bug');
      },
    );
    const stopLeaving = notifications.subscribe(
      'ch',
      () => {},
      () => told.push('left'),
    );
    expect(told).toEqual([]); // never synchronously
    stopLeaving();
    await settle();
    expect(told).toEqual(['first']);
    failNextListen(new Error('listen failed'));
    notifications.subscribe(
      'other',
      () => {},
      () => told.push('failed'),
    );
    await settle();
    expect(told).toEqual(['first']);
    await notifications.close();
  });

  it('a listen() that failed is tried again by the next subscription', async () => {
    const { db, listens, notify, failNextListen } = setup();
    const notifications = db.notifications();
    failNextListen(new Error('listen failed'));
    const seen: string[] = [];
    notifications.subscribe('ch', (p) => seen.push(p));
    await settle();
    notifications.subscribe('ch', (p) => seen.push(p));
    await settle();
    expect(listens).toEqual(['ch', 'ch']);
    notify('ch', 'p');
    expect(seen).toEqual(['p']);
    // The failed listen() does not make close() fail.
    await expect(db.close()).resolves.toBeUndefined();
  });

  it('close() stops every listen(), waits for them, and survives one that fails; later subscriptions listen to nothing', async () => {
    const { db, listens, unlistens, notify, failUnlisten } = setup();
    const notifications = db.notifications();
    const seen: string[] = [];
    notifications.subscribe('a', (p) => seen.push(p));
    notifications.subscribe('b', (p) => seen.push(p));
    failUnlisten(new Error('already closed'));
    await notifications.close();
    expect(unlistens.sort()).toEqual(['a', 'b']);
    notify('a', 'late');
    const unsubscribe = notifications.subscribe('c', (p) => seen.push(p));
    unsubscribe();
    await settle();
    expect(listens).toEqual(['a', 'b']);
    expect(seen).toEqual([]);
    // Nothing left to stop.
    await db.close();
    expect(unlistens).toHaveLength(2);
  });
});
