/**
 * What the PostgreSQL saga log adds to the saga log conformance suite, on `pg` and on PGlite: one
 * statement per call and bad input refused before any, values PostgreSQL text holds round-tripping
 * byte for byte (hostile names, JSON escapes), concurrent claims from several pools, the reaper and
 * its retention, and migration 3.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import type { Pool, PoolClient } from 'pg';
import { describe, expect, it } from 'vitest';
import type { SagaChange, SagaLease } from '../../src/saga/store.js';
import {
  type PostgresDatabase,
  type PostgresStores,
  postgresStores,
} from '../../src/stores/postgres/index.js';
import { FakeClock } from '../../src/testing/fake-clock.js';
import { type Counted, countingPGlite, countingPool } from '../support/counting.js';
import { type StoreOverrides, serverStores, useEmbeddedPostgres } from '../support/postgres-stores.js';
import { usePostgres } from '../support/services.js';

const pg = await usePostgres();

interface Backend {
  /** A migrated store set on a fresh schema. */
  stores(overrides?: StoreOverrides): Promise<PostgresStores>;
  /** A store set on a schema not migrated yet. */
  unmigrated(): PostgresStores;
  /** Runs a statement outside the stores (for setup and checks). */
  sql<R>(text: string, params?: unknown[]): Promise<R[]>;
  /** The database wrapped so that statements are counted (migrate the schema first). */
  counting(): Counted<PostgresDatabase>;
}

const lease = (id: string, owner = 'a', more: Partial<SagaLease> = {}): SagaLease => ({
  name: 'order',
  id,
  owner,
  leaseMs: 60_000,
  ...more,
});

async function rejection(promise: Promise<unknown>): Promise<unknown> {
  try {
    await promise;
  } catch (error) {
    return error;
  }
  throw new Error('expected a rejection');
}

/** Ends the lease of every unfinished run in `stores`' schema, so that they can be claimed. */
const expireAll = (b: Backend, stores: PostgresStores) =>
  b.sql(`UPDATE "${stores.schema}".saga_runs SET expires_at = clock_timestamp() - interval '1 second'`);

function sharedScenarios(name: string, backend: () => Backend): void {
  describe(`${name}: statements`, () => {
    it('start, write (a step, a status), renew and claim send one statement each', async () => {
      const b = backend();
      const migrated = await b.stores();
      const schema = migrated.schema;
      await migrated.close();
      const { db, statements } = b.counting();
      const stores = postgresStores(db, { schema });
      const log = stores.sagaLog;
      const calls: [string, () => Promise<unknown>][] = [
        ['start', () => log.start(lease('r1'), '{}')],
        ['write a step', () => log.write(lease('r1'), { step: 's', position: 0, state: 'running' })],
        ['write a status', () => log.write(lease('r1'), { status: 'compensating' })],
        ['renew', () => log.renew(lease('r1'))],
        ['claim nothing', () => log.claim('order', 'b', 1_000)],
        ['refused start', () => log.start(lease('r1'), '{}')],
        ['refused write', () => log.write(lease('r1', 'x'), { status: 'completed' })],
      ];
      for (const [what, call] of calls) {
        const before = statements.length;
        await call();
        expect(statements.length - before, what).toBe(1);
      }
      await b.sql(`UPDATE "${schema}".saga_runs SET expires_at = clock_timestamp() - interval '1 second'`);
      const before = statements.length;
      expect(await log.claim('order', 'b', 1_000)).toMatchObject({ id: 'r1', status: 'compensating' });
      expect(statements.length - before).toBe(1);
      await stores.close();
    });

    it('bad input is refused with a TypeError before anything is sent', async () => {
      const b = backend();
      const migrated = await b.stores();
      const schema = migrated.schema;
      await migrated.close();
      const { db, statements } = b.counting();
      const stores = postgresStores(db, { schema });
      const log = stores.sagaLog;
      const step = (change: Record<string, unknown>) =>
        log.write(lease('r'), { step: 's', position: 0, state: 'done', ...change } as SagaChange);
      const refusals: [Promise<unknown>, RegExp][] = [
        [log.start(null as never, '{}'), /"lease" to be an object/],
        [log.start(lease('r', 'a', { name: 'o\u0000' }), '{}'), /"name" to contain no U\+0000/],
        [log.start(lease(''), '{}'), /"id" to be a non-empty string/],
        [log.start(lease('r', '\uDC00'), '{}'), /"owner" to be well-formed/],
        [log.start(lease('r', 'a', { leaseMs: 0.5 }), '{}'), /"leaseMs"/],
        [log.start(lease('r'), 5 as never), /"input" to be JSON text/],
        [log.start(lease('r'), '"\u0000"'), /"input" to be JSON text/],
        [log.start(lease('r'), '"\uD800"'), /"input" to be JSON text/],
        [log.write(lease('r'), null as never), /"change" to be an object/],
        [log.write(lease('r'), { status: 'running' } as never), /"status" to be a status a run can move to/],
        [step({ step: '' }), /"step" to be a non-empty string/],
        [step({ position: -1 }), /"position" to be an integer from 0 to 2\^31 - 1/],
        [step({ position: 2 ** 31 }), /"position"/],
        [step({ position: 1.5 }), /"position"/],
        [step({ state: 'lost' }), /"state" to be a step state/],
        [step({ output: 5 }), /"output" to be JSON text/],
        [step({ output: 'a\u0000' }), /"output" to be JSON text/],
        [log.renew(lease('r\u0000')), /"id"/],
        [log.renew(lease('r', 'a', { leaseMs: 0 })), /"leaseMs"/],
        [log.claim('', 'a', 1_000), /"name"/],
        [log.claim('order', 'a\u0000', 1_000), /"owner"/],
        [log.claim('order', 'a', Number.NaN), /"leaseMs"/],
      ];
      for (const [refusal, message] of refusals) {
        const error = await rejection(refusal);
        expect(error).toBeInstanceOf(TypeError);
        expect((error as Error).message).toMatch(message);
      }
      expect(statements).toEqual([]);
      await stores.close();
    });
  });

  describe(`${name}: values`, () => {
    it('hostile names, ids, owners and step names round-trip as parameters', async () => {
      const b = backend();
      const stores = await b.stores();
      const log = stores.sagaLog;
      const hostile = [
        "o'brien",
        "'; DROP TABLE saga_runs; --",
        '"quoted" \\ back\\slash',
        '😀 ﷽ e\u0301',
        'x'.repeat(1_000),
      ];
      for (const [i, text] of hostile.entries()) {
        const l: SagaLease = { name: text, id: text, owner: text, leaseMs: 60_000 };
        expect(await log.start(l, `{"n":${i}}`)).toBe(true);
        expect(await log.write(l, { step: text, position: i, state: 'done', output: '1' })).toBe(true);
        expect(await log.start(l, '{}')).toBe(false);
      }
      await expireAll(b, stores);
      for (const [i, text] of hostile.entries()) {
        expect(await log.claim(text, `${text}!`, 60_000)).toEqual({
          id: text,
          input: `{"n":${i}}`,
          status: 'running',
          steps: [{ step: text, position: i, state: 'done', output: '1' }],
        });
        expect(await log.renew({ name: text, id: text, owner: `${text}!`, leaseMs: 1_000 })).toBe(true);
      }
      const [{ n }] = (await b.sql<{ n: number }>(
        `SELECT count(*)::int AS n FROM "${stores.schema}".saga_runs`,
      )) as [{ n: number }];
      expect(n).toBe(hostile.length);
      await stores.close();
    });

    it('inputs and outputs are stored and returned byte for byte (key order, spacing, escapes, unicode)', async () => {
      const b = backend();
      const stores = await b.stores();
      const log = stores.sagaLog;
      const input = '{ "b" : 1, "a" : [2.50, 1e3] }';
      const outputs = [
        JSON.stringify({ text: 'nul \u0000 here', lone: '\uD800', tab: '\t' }), // "\u0000", "\ud800" escapes
        '"\\u0000 written by hand, \\/ and \\u00e9"',
        JSON.stringify('😀 café ﷽ \u202e e\u0301 \u2028'),
        '{"z":0,"a":1,"a":2}',
      ];
      expect(await log.start(lease('r'), input)).toBe(true);
      for (const [i, output] of outputs.entries()) {
        expect(await log.write(lease('r'), { step: `s${i}`, position: i, state: 'done', output })).toBe(true);
      }
      // Without an output, the recorded one is kept.
      expect(await log.write(lease('r'), { step: 's0', position: 0, state: 'compensating' })).toBe(true);
      const stored = await b.sql<{ output: string }>(
        `SELECT output FROM "${stores.schema}".saga_steps ORDER BY position`,
      );
      expect(stored.map((row) => row.output)).toEqual(outputs);
      await expireAll(b, stores);
      const run = await log.claim('order', 'b', 60_000);
      expect(run!.input).toBe(input);
      expect(run!.steps.map((s) => s.output)).toEqual(outputs);
      expect(run!.steps[0]!.state).toBe('compensating');
      await stores.close();
    });
  });

  describe(`${name}: the reaper`, () => {
    it('deletes only completed and compensated runs finished for 24 h, with their steps, in batches', async () => {
      const b = backend();
      const stores = await b.stores();
      const log = stores.sagaLog;
      const runs = `"${stores.schema}".saga_runs`;
      const steps = `"${stores.schema}".saga_steps`;
      const finish = async (id: string, status: 'completed' | 'compensated' | 'attention' | undefined) => {
        expect(await log.start(lease(id), '{}')).toBe(true);
        expect(await log.write(lease(id), { step: 's', position: 0, state: 'done', output: '1' })).toBe(true);
        if (status !== undefined) expect(await log.write(lease(id), { status })).toBe(true);
      };
      await finish('completed-old', 'completed');
      await finish('compensated-old', 'compensated');
      await finish('attention-old', 'attention');
      await finish('completed-recent', 'completed');
      await finish('running', undefined);
      await b.sql(
        `UPDATE ${runs} SET finished_at = clock_timestamp() - interval '24 hours 1 second'
         WHERE id IN ('completed-old', 'compensated-old', 'attention-old')`,
      );
      await b.sql(
        `UPDATE ${runs} SET finished_at = clock_timestamp() - interval '23 hours 59 minutes' WHERE id = 'completed-recent'`,
      );
      await b.sql(
        `INSERT INTO ${runs} (name, id, input, status, expires_at, finished_at)
         SELECT 'bulk', 'b' || i, '{}', 'completed', clock_timestamp(), clock_timestamp() - interval '2 days'
         FROM generate_series(1, 2500) AS i`,
      );
      expect(await log.reap()).toBe(2502);
      const kept = await b.sql<{ id: string }>(`SELECT id FROM ${runs} ORDER BY id`);
      expect(kept.map((r) => r.id)).toEqual(['attention-old', 'completed-recent', 'running']);
      const keptSteps = await b.sql<{ saga_id: string }>(`SELECT saga_id FROM ${steps} ORDER BY saga_id`);
      expect(keptSteps.map((r) => r.saga_id)).toEqual(['attention-old', 'completed-recent', 'running']);
      expect(await log.reap()).toBe(0);
      // A deleted id can be started again; a kept one cannot.
      expect(await log.start(lease('completed-old'), '{}')).toBe(true);
      expect(await log.start(lease('completed-recent'), '{}')).toBe(false);
      await stores.close();
    });

    it('runs every minute from the first start, on the store set clock; close() stops it', async () => {
      const b = backend();
      const clock = new FakeClock(1_000);
      const stores = await b.stores({ clock });
      const runs = `"${stores.schema}".saga_runs`;
      await b.sql(
        `INSERT INTO ${runs} (name, id, input, status, expires_at, finished_at)
         VALUES ('order', 'old', '{}', 'compensated', clock_timestamp(), clock_timestamp() - interval '2 days')`,
      );
      await clock.advance(60_000);
      expect(await b.sql(`SELECT id FROM ${runs}`)).toHaveLength(1); // not started yet
      await stores.sagaLog.start(lease('new'), '{}');
      await clock.advance(60_000);
      await expect.poll(() => b.sql<{ id: string }>(`SELECT id FROM ${runs}`)).toEqual([{ id: 'new' }]);
      await stores.close();
      expect(clock.pendingTimers).toBe(0);
    });
  });

  describe(`${name}: migration 3`, () => {
    it('creates the saga tables; migrating again changes nothing and keeps the runs', async () => {
      const b = backend();
      const stores = b.unmigrated();
      expect((await stores.migrate()).applied).toContain(3);
      const [recorded] = await b.sql<{ name: string }>(
        `SELECT name FROM "${stores.schema}".migrations WHERE version = 3`,
      );
      expect(recorded).toEqual({ name: 'saga log' });
      expect(await stores.sagaLog.start(lease('r'), '{}')).toBe(true);
      expect(await stores.sagaLog.write(lease('r'), { step: 's', position: 0, state: 'running' })).toBe(true);
      expect(await stores.migrate()).toEqual({ applied: [] });
      expect(await stores.sagaLog.start(lease('r'), '{}')).toBe(false);
      expect(await stores.sagaLog.write(lease('r'), { status: 'completed' })).toBe(true);
      await expect(
        b.sql(`UPDATE "${stores.schema}".saga_runs SET status = 'lost' WHERE id = 'r'`),
      ).rejects.toThrow(/check constraint/);
      await expect(
        b.sql(`UPDATE "${stores.schema}".saga_steps SET state = 'lost' WHERE saga_id = 'r'`),
      ).rejects.toThrow(/check constraint/);
      await stores.close();
    });
  });
}

pg.describe('saga log on PostgreSQL (pg)', () => {
  sharedScenarios('pg', () => ({
    stores: (overrides) => serverStores(pg, overrides),
    unmigrated: () => postgresStores(pg.pool(), { schema: pg.schema }),
    sql: async (text, params) => (await pg.admin().query(text, params)).rows,
    counting: () => countingPool(pg.pool()),
  }));

  it('10 concurrent claimants on their own pools take 20 expired runs: each exactly once', async () => {
    const setup = await serverStores(pg);
    for (let i = 0; i < 20; i++)
      expect(await setup.sagaLog.start(lease(`r${i}`, 'crashed'), '{}')).toBe(true);
    await pg
      .admin()
      .query(`UPDATE "${pg.schema}".saga_runs SET expires_at = clock_timestamp() - interval '1 second'`);
    const claimants = Array.from({ length: 10 }, () =>
      postgresStores(pg.pool({ max: 2 }), { schema: pg.schema }),
    );
    const taken = await Promise.all(
      claimants.map(async (stores, c) => {
        const ids: string[] = [];
        for (;;) {
          const run = await stores.sagaLog.claim('order', `claimant-${c}`, 60_000);
          if (run === undefined) return ids;
          ids.push(run.id);
        }
      }),
    );
    const all = taken.flat();
    expect(all).toHaveLength(20);
    expect(new Set(all).size).toBe(20);
    const { rows } = await pg
      .admin()
      .query<{ id: string; owner: string }>(`SELECT id, owner FROM "${pg.schema}".saga_runs`);
    for (const row of rows) expect(taken[Number(row.owner.slice('claimant-'.length))]).toContain(row.id);
    await Promise.all([setup.close(), ...claimants.map((s) => s.close())]);
  });

  it('a write that lands between a claim’s snapshot and its lock: the claim decides again and returns it', async () => {
    const owner = await serverStores(pg);
    const stalled = lease('r', 'stalled', { leaseMs: 1 });
    expect(await owner.sagaLog.start(stalled, '{}')).toBe(true);
    await sleep(5);
    const slowed = slowFirstClaim(pg.pool());
    const claimant = postgresStores(slowed.db, { schema: pg.schema, timeoutMs: 5_000 });
    const claimed = claimant.sagaLog.claim('order', 'b', 60_000);
    // The claim has its snapshot, and sleeps before locking the run.
    const sleeping = async () =>
      (
        await pg
          .admin()
          .query(
            `SELECT 1 FROM pg_stat_activity WHERE wait_event = 'PgSleep' AND position($1 in query) > 0`,
            [`"${pg.schema}".saga_runs`],
          )
      ).rowCount;
    await expect.poll(sleeping, { interval: 10 }).toBe(1);
    // The stalled owner writes (accepted: nobody claimed the run yet); its 1 ms lease ends again at once.
    expect(await owner.sagaLog.write(stalled, { step: 's', position: 0, state: 'running' })).toBe(true);
    expect(await claimed).toEqual({
      id: 'r',
      input: '{}',
      status: 'running',
      steps: [{ step: 's', position: 0, state: 'running', output: undefined }],
    });
    expect(slowed.claims()).toBe(2);
    expect(await owner.sagaLog.write(stalled, { status: 'completed' })).toBe(false);
    await Promise.all([owner.close(), claimant.close()]);
  });
});

/**
 * `pool`, whose first claim statement waits half a second after taking its snapshot and before
 * locking the run it picks (pg_sleep in the scan), so that a write can commit in between.
 */
function slowFirstClaim(pool: Pool): { db: Pool; claims: () => number } {
  let claims = 0;
  const slow = (text: string): string => {
    if (!text.includes('FOR UPDATE SKIP LOCKED') || text.includes('DELETE')) return text;
    claims += 1;
    if (claims > 1) return text;
    const slowed = text.replace(
      'AND expires_at <= clock_timestamp()\n',
      'AND expires_at <= clock_timestamp() AND (SELECT pg_sleep(1)::text) IS NOT NULL\n',
    );
    if (slowed === text) throw new Error('the claim statement changed: update slowFirstClaim');
    return slowed;
  };
  const wrap = (client: PoolClient): PoolClient =>
    new Proxy(client, {
      get(target, property, receiver) {
        const value = Reflect.get(target, property, receiver);
        if (property === 'query')
          return (text: string, params: unknown[]) => target.query(slow(text), params);
        return typeof value === 'function' ? value.bind(target) : value;
      },
    });
  const db = new Proxy(pool, {
    get(target, property, receiver) {
      if (property === 'connect') return () => target.connect().then(wrap);
      const value = Reflect.get(target, property, receiver);
      return typeof value === 'function' ? value.bind(target) : value;
    },
  });
  return { db, claims: () => claims };
}

describe('saga log on PGlite', () => {
  const embedded = useEmbeddedPostgres();
  let fresh = 0;
  sharedScenarios('PGlite', () => ({
    stores: (overrides) => embedded.stores(overrides),
    unmigrated: () => postgresStores(embedded.db(), { schema: `fresh${++fresh}` }),
    sql: async (text, params) => (await embedded.db().query<never>(text, params)).rows,
    counting: () => countingPGlite(embedded.db()),
  }));
});
