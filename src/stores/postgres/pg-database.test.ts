/**
 * PgDatabase against a scripted fake pool: which client each statement runs on, how it goes back
 * to the pool (reused, or destroyed with an error), what a missed deadline does to it (destroyed,
 * its backend cancelled on a connection of its own), and which errors reach the caller. The same
 * paths on a real server are in test/postgres/deadline.test.ts.
 */
import { EventEmitter } from 'node:events';
import { describe, expect, it } from 'vitest';
import { deferred } from '../../../test/support/deferred.js';
import { isStoreUnavailableError, isTimeoutError, type StoreUnavailableError } from '../../core/errors.js';
import { FakeClock } from '../../testing/fake-clock.js';
import type { PgPoolClientLike, PgPoolLike, PostgresTransaction } from './database.js';
import { QueryDeadline } from './deadline.js';
import { PgDatabase } from './pg-database.js';

type Rows = { rows: unknown[] };
/** How a fake client answers one statement: rows, a promise of them, or a synchronous throw. */
type Answer = (text: string, params: unknown[] | undefined) => Promise<Rows>;

const ok =
  (...rows: unknown[]): Answer =>
  () =>
    Promise.resolve({ rows });

/** A pooled client: records its statements and releases, and, like pg-pool's, refuses a second release. */
class FakeClient implements PgPoolClientLike {
  readonly statements: string[] = [];
  readonly params: (unknown[] | undefined)[] = [];
  readonly releases: (Error | boolean | undefined)[] = [];

  constructor(
    private readonly answer: Answer,
    /** pg's backend process id (not in its types); `null` until connected. */
    public processID: unknown = 4242,
  ) {}

  query(text: string, params?: unknown[]): Promise<Rows> {
    this.statements.push(text);
    this.params.push(params);
    return this.answer(text, params);
  }

  release(error?: Error | boolean): void {
    this.releases.push(error);
    if (this.releases.length > 1) {
      throw new Error('Release called on client which has already been released to the pool.');
    }
  }
}

/** A standalone client the adapter opens (to cancel a backend, or to LISTEN). */
interface CancelClient extends EventEmitter {
  readonly options: Record<string, unknown>;
  readonly queries: { text: string; values: unknown[] | undefined }[];
  ended: boolean;
}

/** A pool handing out `clients` in turn (or what `connect` says), with pg-pool's `Client` and `options`. */
interface PoolBehaviour {
  /** Replaces the queue of lent clients. */
  readonly connect?: () => Promise<FakeClient>;
  /** Whether the pool has pg-pool's `Client` class (default true). */
  readonly withClient?: boolean;
  /** Whether building a `Client` throws. */
  readonly throwingClient?: boolean;
}

function fakePool(behaviour: PoolBehaviour = {}) {
  const cancels: CancelClient[] = [];
  const checkouts: FakeClient[] = [];
  const next: FakeClient[] = [];
  class Client extends EventEmitter {
    readonly queries: CancelClient['queries'] = [];
    ended = false;
    constructor(readonly options: Record<string, unknown>) {
      super();
      if (behaviour.throwingClient === true) throw new Error('cannot build a client');
      cancels.push(this);
    }
    connect(): Promise<void> {
      return Promise.resolve();
    }
    query(text: string, values?: unknown[]): Promise<Rows> {
      this.queries.push({ text, values });
      return Promise.resolve({ rows: [] });
    }
    end(): Promise<void> {
      this.ended = true;
      return Promise.resolve();
    }
  }
  const pool: PgPoolLike & { Client?: unknown; options: Record<string, unknown> } = {
    options: { host: 'db.example', port: 5432 },
    totalCount: 0,
    connect: () => {
      if (behaviour.connect !== undefined) return behaviour.connect();
      const client = next.shift();
      if (client === undefined) throw new Error('the test gave the pool no client');
      checkouts.push(client);
      return Promise.resolve(client);
    },
    query: () => Promise.reject(new Error('pool.query is not used')),
  };
  if (behaviour.withClient !== false) pool.Client = Client;
  return {
    pool,
    cancels,
    checkouts,
    /** Queues a client for the next `pool.connect()`. */
    lend(client: FakeClient): FakeClient {
      next.push(client);
      return client;
    },
  };
}

function setup(behaviour: PoolBehaviour = {}) {
  const clock = new FakeClock();
  const deadline = new QueryDeadline(clock, 100, 'PostgreSQL');
  const fake = fakePool(behaviour);
  const db = new PgDatabase(fake.pool, deadline);
  return { clock, db, ...fake };
}

/** What `promise` rejected with (fails the test if it resolved). */
async function rejection(promise: Promise<unknown>): Promise<StoreUnavailableError> {
  try {
    await promise;
  } catch (error) {
    return error as StoreUnavailableError;
  }
  throw new Error('expected a rejection');
}

/** Lets the promise callbacks queued so far run. */
const settle = () => new Promise<void>((resolve) => setImmediate(resolve));

function expectTimeout(error: unknown, ms = 100): void {
  expect(isStoreUnavailableError(error), String(error)).toBe(true);
  expect((error as Error).message).toBe(`PostgreSQL did not answer within ${ms} ms`);
  expect(isTimeoutError((error as Error).cause)).toBe(true);
}

function expectFailure(error: unknown, cause: unknown): void {
  expect(isStoreUnavailableError(error), String(error)).toBe(true);
  expect((error as Error).message).toBe(`PostgreSQL failed: ${(cause as Error).message}`);
  expect((error as Error).cause).toBe(cause);
}

/** Whether the statement was destroyed at its deadline: released with our error, once. */
function expectDestroyed(client: FakeClient): void {
  expect(client.releases).toHaveLength(1);
  expect(client.releases[0]).toBeInstanceOf(Error);
  expect((client.releases[0] as Error).message).toBe('bulwark: the statement missed its deadline');
}

describe('PgDatabase.query', () => {
  it('is named PostgreSQL in messages', () => {
    expect(setup().db.what).toBe('PostgreSQL');
  });

  it('runs one statement on a checked-out client and returns that client for reuse', async () => {
    const { db, clock, lend } = setup();
    const client = lend(new FakeClient(ok({ n: 1 })));
    expect(await db.query('SELECT $1::int AS n', [1])).toEqual([{ n: 1 }]);
    expect(client.statements).toEqual(['SELECT $1::int AS n']);
    expect(client.params).toEqual([[1]]);
    expect(client.releases).toEqual([undefined]);
    // The deadline ended with the answer: nothing keeps the process alive.
    expect(clock.aliveTimers).toBe(0);
  });

  it('a failed statement is a StoreUnavailableError, and its client is released with the error (never reused)', async () => {
    const { db, clock, lend, cancels } = setup();
    const driver = new Error('relation "nope" does not exist');
    const client = lend(new FakeClient(() => Promise.reject(driver)));
    expectFailure(await rejection(db.query('SELECT * FROM nope')), driver);
    expect(client.releases).toEqual([driver]);
    expect(clock.aliveTimers).toBe(0);
    await clock.advance(1_000);
    expect(cancels).toEqual([]);
  });

  it('a client whose query() throws at once fails the same way, once, and its deadline is over', async () => {
    const { db, clock, lend, cancels } = setup();
    const driver = new Error('Client was closed and is not queryable');
    const client = lend(
      new FakeClient(() => {
        throw driver;
      }),
    );
    expectFailure(await rejection(db.query('SELECT 1')), driver);
    expect(client.releases).toEqual([driver]);
    expect(clock.aliveTimers).toBe(0);
    // Past the deadline nothing more happens to it: no second release, no cancel.
    await clock.advance(1_000);
    expect(client.releases).toEqual([driver]);
    expect(cancels).toEqual([]);
  });

  it('a pool that cannot connect is a StoreUnavailableError with its error as the cause', async () => {
    const refused = new Error('connect ECONNREFUSED 127.0.0.1:5432');
    const { db, clock } = setup({ connect: () => Promise.reject(refused) });
    expectFailure(await rejection(db.query('SELECT 1')), refused);
    expect(clock.aliveTimers).toBe(0);
  });

  it('at the deadline: rejects, destroys the client, cancels its backend on a connection of its own', async () => {
    const { db, clock, lend, cancels } = setup();
    const late = deferred<Rows>();
    const client = lend(new FakeClient(() => late.promise, 777));
    const text = `SELECT pg_sleep(10) /* ${'x'.repeat(200)} */`;
    const pending = rejection(db.query(text));
    await clock.advance(100);
    expectTimeout(await pending);
    expectDestroyed(client);
    expect(cancels).toHaveLength(1);
    const cancel = cancels[0]!;
    expect(cancel.options).toEqual({
      host: 'db.example',
      port: 5432,
      connectionTimeoutMillis: 100,
      query_timeout: 100,
      statement_timeout: 100,
    });
    await settle();
    expect(cancel.queries).toHaveLength(1);
    expect(cancel.queries[0]!.text).toMatch(
      /^SELECT pg_cancel_backend\(pid\) FROM pg_stat_activity WHERE pid = \$1/,
    );
    // Only what that backend runs now, recognised by the start of its text.
    expect(cancel.queries[0]!.values).toEqual([777, text.slice(0, 120)]);
    expect(cancel.ended).toBe(true);
    // An error on that connection (the server went away meanwhile) is swallowed, not an uncaught 'error' event.
    expect(() => cancel.emit('error', new Error('Connection terminated unexpectedly'))).not.toThrow();
    // The late answer changes nothing.
    late.resolve({ rows: [{ late: true }] });
    await settle();
    expect(client.releases).toHaveLength(1);
  });

  it.each([
    ['no process id', undefined],
    ['a process id pg has not set yet (null)', null],
    ['a process id that is not a number', '777'],
  ])('a client with %s is destroyed at the deadline but cancels nothing', async (_, processID) => {
    const { db, clock, lend, cancels } = setup();
    const client = lend(new FakeClient(() => new Promise(() => {})));
    client.processID = processID;
    const pending = rejection(db.query('SELECT pg_sleep(10)'));
    await clock.advance(100);
    expectTimeout(await pending);
    expectDestroyed(client);
    expect(cancels).toEqual([]);
  });

  it('a pool whose Client cannot be built still fails the call at its deadline, and destroys the client', async () => {
    const { db, clock, lend, cancels } = setup({ throwingClient: true });
    const client = lend(new FakeClient(() => new Promise(() => {})));
    const pending = rejection(db.query('SELECT pg_sleep(10)'));
    await clock.advance(100);
    expectTimeout(await pending);
    expectDestroyed(client);
    expect(cancels).toEqual([]);
  });

  it('a pool without a Client class: the client is destroyed, no cancel is attempted', async () => {
    const { db, clock, lend, cancels } = setup({ withClient: false });
    const client = lend(new FakeClient(() => new Promise(() => {})));
    const pending = rejection(db.query('SELECT pg_sleep(10)'));
    await clock.advance(100);
    expectTimeout(await pending);
    expectDestroyed(client);
    expect(cancels).toEqual([]);
  });

  it('a client checked out after the deadline goes back to the pool unused', async () => {
    const checkout = deferred<FakeClient>();
    const { db, clock } = setup({ connect: () => checkout.promise });
    const pending = rejection(db.query('SELECT 1'));
    await clock.advance(100);
    expectTimeout(await pending);
    const client = new FakeClient(ok());
    checkout.resolve(client);
    await settle();
    expect(client.statements).toEqual([]);
    expect(client.releases).toEqual([undefined]);
  });
});

describe('PgDatabase.transaction', () => {
  it('runs BEGIN, the work and COMMIT on one client, then returns it for reuse; tx.query resolves with rows', async () => {
    const { db, clock, lend, checkouts } = setup();
    const client = lend(
      new FakeClient((text) => Promise.resolve({ rows: text === 'SELECT 2' ? [{ n: 2 }] : [] })),
    );
    const value = await db.transaction(async (tx) => {
      const result = await tx.query('SELECT 2');
      expect(result).toEqual({ rows: [{ n: 2 }] });
      return 'done';
    });
    expect(value).toBe('done');
    expect(checkouts).toHaveLength(1);
    expect(client.statements).toEqual(['BEGIN', 'SELECT 2', 'COMMIT']);
    expect(client.releases).toEqual([undefined]);
    expect(clock.aliveTimers).toBe(0);
  });

  it("tx.query rejects with the driver's own error; the work's error rolls back and is the answer", async () => {
    const { db, lend } = setup();
    const duplicate = new Error('duplicate key value violates unique constraint "payments_pkey"');
    const client = lend(
      new FakeClient((text) =>
        text.startsWith('INSERT') ? Promise.reject(duplicate) : Promise.resolve({ rows: [] }),
      ),
    );
    let seen: unknown;
    const error = await rejection(
      db.transaction(async (tx) => {
        seen = await tx.query('INSERT INTO payments VALUES (1)').catch((e: unknown) => e);
        throw seen;
      }),
    );
    expect(seen).toBe(duplicate);
    expect(error).toBe(duplicate);
    expect(client.statements).toEqual(['BEGIN', 'INSERT INTO payments VALUES (1)', 'ROLLBACK']);
    expect(client.releases).toEqual([undefined]);
  });

  it.each(['BEGIN', 'COMMIT'])('a failed %s is a StoreUnavailableError', async (failing) => {
    const { db, lend } = setup();
    const driver = new Error(`${failing} failed on the server`);
    const client = lend(
      new FakeClient((text) => (text === failing ? Promise.reject(driver) : Promise.resolve({ rows: [] }))),
    );
    expectFailure(await rejection(db.transaction(async () => 'value')), driver);
    expect(client.statements.at(-1)).toBe('ROLLBACK');
    expect(client.releases).toEqual([undefined]);
  });

  it('a ROLLBACK that fails too: the work error is the answer, the client is released with the ROLLBACK failure', async () => {
    const { db, lend } = setup();
    const broken = new Error('server closed the connection unexpectedly');
    const client = lend(
      new FakeClient((text) =>
        text === 'ROLLBACK' ? Promise.reject(broken) : Promise.resolve({ rows: [] }),
      ),
    );
    const mine = new Error('the handler failed');
    expect(
      await rejection(
        db.transaction(async () => {
          throw mine;
        }),
      ),
    ).toBe(mine);
    expect(client.releases).toHaveLength(1);
    // Released with an error, so pg-pool ends it: a client whose ROLLBACK failed is never reused.
    expectFailure(client.releases[0], broken);
  });

  it('a statement past its deadline: the client is destroyed, no ROLLBACK is tried, every later statement fails at once', async () => {
    const { db, clock, lend, cancels } = setup();
    const client = lend(
      new FakeClient(
        (text) => (text === 'SELECT slow' ? new Promise(() => {}) : Promise.resolve({ rows: [] })),
        31,
      ),
    );
    let timedOut: unknown;
    let after: unknown;
    const work = rejection(
      db.transaction(async (tx) => {
        timedOut = await tx.query('SELECT slow').catch((e: unknown) => e);
        after = await tx.query('SELECT next').catch((e: unknown) => e);
        throw after;
      }),
    );
    await clock.advance(100);
    const error = await work;
    expectTimeout(timedOut);
    expect(isStoreUnavailableError(after)).toBe(true);
    expect((after as Error).message).toBe('PostgreSQL failed: the transaction was lost at a deadline');
    expect(error).toBe(after);
    // The next statement never reached the client, nor did a ROLLBACK: the server rolls back as the connection ends.
    expect(client.statements).toEqual(['BEGIN', 'SELECT slow']);
    expectDestroyed(client);
    expect(cancels).toHaveLength(1);
    await settle();
    expect(cancels[0]!.queries[0]!.values).toEqual([31, 'SELECT slow']);
  });

  it('a pool that cannot connect is a StoreUnavailableError; the work never runs', async () => {
    const refused = new Error('too many clients already');
    const { db, clock } = setup({ connect: () => Promise.reject(refused) });
    let ran = false;
    const error = await rejection(
      db.transaction(async () => {
        ran = true;
      }),
    );
    expectFailure(error, refused);
    expect(ran).toBe(false);
    expect(clock.aliveTimers).toBe(0);
  });

  it('a client checked out after the deadline goes back unused; the work never runs', async () => {
    const checkout = deferred<FakeClient>();
    const { db, clock } = setup({ connect: () => checkout.promise });
    let ran = false;
    const pending = rejection(
      db.transaction(async () => {
        ran = true;
      }, 250),
    );
    await clock.advance(250);
    expectTimeout(await pending, 250);
    const client = new FakeClient(ok());
    checkout.resolve(client);
    await settle();
    expect(ran).toBe(false);
    expect(client.statements).toEqual([]);
    expect(client.releases).toEqual([undefined]);
  });
});

describe('PgDatabase.queryIn', () => {
  it("on one of our transactions: the transaction's deadline, and a failure is a StoreUnavailableError", async () => {
    const { db, clock, lend } = setup();
    const slow = deferred<Rows>();
    const driver = new Error('deadlock detected');
    const client = lend(
      new FakeClient((text) => {
        if (text === 'SELECT slow') return slow.promise;
        if (text === 'SELECT bad') return Promise.reject(driver);
        return Promise.resolve({ rows: [] });
      }),
    );
    let rows: unknown;
    let failure: unknown;
    const done = db.transaction(async (tx) => {
      rows = await db.queryIn(tx, 'SELECT slow');
      failure = await db.queryIn(tx, 'SELECT bad').catch((e: unknown) => e);
    }, 5_000);
    // Past the store's 100 ms but within the transaction's 5 s: still waiting, then answered.
    await clock.advance(1_000);
    slow.resolve({ rows: [{ n: 1 }] });
    await done;
    expect(rows).toEqual([{ n: 1 }]);
    expectFailure(failure, driver);
    expect(client.statements).toEqual(['BEGIN', 'SELECT slow', 'SELECT bad', 'COMMIT']);
  });

  describe("on a caller's own client (a PoolClient inside their BEGIN)", () => {
    function own(answer: Answer) {
      const statements: string[] = [];
      const tx: PostgresTransaction & { release: () => void; releases: number } = {
        releases: 0,
        release() {
          this.releases++;
        },
        query<R>(text: string, params?: unknown[]) {
          statements.push(text);
          return answer(text, params) as Promise<{ rows: R[] }>;
        },
      };
      return { tx, statements };
    }

    it('runs the statement there and resolves with its rows', async () => {
      const { db, clock, checkouts } = setup();
      const { tx, statements } = own(ok({ id: 7 }));
      expect(await db.queryIn(tx, 'SELECT 7 AS id', [])).toEqual([{ id: 7 }]);
      expect(statements).toEqual(['SELECT 7 AS id']);
      expect(checkouts).toEqual([]);
      expect(clock.aliveTimers).toBe(0);
    });

    it('a rejection, or a synchronous throw, is a StoreUnavailableError with the driver error as cause', async () => {
      const { db, clock } = setup();
      const driver = new Error('current transaction is aborted');
      expectFailure(await rejection(db.queryIn(own(() => Promise.reject(driver)).tx, 'SELECT 1')), driver);
      expect(clock.aliveTimers).toBe(0);
      const thrown = new TypeError('Client has already been released');
      const throwing = own(() => {
        throw thrown;
      });
      expectFailure(await rejection(db.queryIn(throwing.tx, 'SELECT 1')), thrown);
      expect(clock.aliveTimers).toBe(0);
    });

    it('past the deadline it rejects, and leaves the client alone (it is not ours to destroy)', async () => {
      const { db, clock, cancels } = setup();
      const late = deferred<Rows>();
      const { tx } = own(() => late.promise);
      const pending = rejection(db.queryIn(tx, 'SELECT pg_sleep(10)'));
      await clock.advance(100);
      expectTimeout(await pending);
      late.resolve({ rows: [] });
      await settle();
      expect(tx.releases).toBe(0);
      expect(cancels).toEqual([]);
    });
  });
});

describe('PgDatabase.notifications', () => {
  it('is one LISTEN connection per database, ended by close(); the pool stays open', async () => {
    const { db, cancels: opened } = setup();
    const notifications = db.notifications();
    expect(db.notifications()).toBe(notifications);
    notifications.subscribe('c', () => {});
    await settle();
    expect(opened).toHaveLength(1);
    expect(opened[0]!.queries.map((q) => q.text)).toEqual(['LISTEN "c"']);
    await db.close();
    expect(opened[0]!.ended).toBe(true);
    // Closed: a subscription afterwards opens nothing.
    notifications.subscribe('d', () => {})();
    await settle();
    expect(opened).toHaveLength(1);
  });

  it('close() without notifications has nothing to close', async () => {
    await expect(setup().db.close()).resolves.toBeUndefined();
  });
});
