/**
 * Crash recovery across processes, on the PostgreSQL saga log: a worker starts eight order sagas
 * and is SIGKILLed between steps (each run's `charge` recorded done, `ship` not started). Then two
 * new processes call recover() at the same moment. Counted: each completed step's compensation
 * effect (made idempotent by its key) exactly once, each compensation called exactly once (no run
 * claimed by both), every run recovered, nothing shipped. Workers run the built dist/ under
 * plain node.
 */
import { type ChildProcess, fork } from 'node:child_process';
import { once } from 'node:events';
import { setTimeout as sleep } from 'node:timers/promises';
import { expect, it } from 'vitest';
import { postgresStores } from '../../src/stores/postgres/index.js';
import { runWorkers } from '../support/multi-process.js';
import { usePostgres } from '../support/services.js';

const pg = await usePostgres();
const crashWorker = new URL('./scenarios/crash.mjs', import.meta.url);
const recoverWorker = new URL('./scenarios/recover.mjs', import.meta.url);

const runs = 8;
const leaseMs = 3_000;

interface Recovered {
  readonly recovered: readonly string[];
  readonly compensated: readonly string[];
  readonly completed: readonly string[];
  readonly needsAttention: number;
}

/** Starts the crash worker and resolves once every run stopped between its steps. */
async function crashingWorker(input: object): Promise<ChildProcess> {
  const child = fork(crashWorker, [JSON.stringify(input)], { stdio: ['ignore', 'pipe', 'pipe', 'ipc'] });
  let output = '';
  child.stderr?.on('data', (chunk: Buffer) => {
    output += chunk.toString();
  });
  await new Promise<void>((resolve, reject) => {
    child.stdout?.on('data', (chunk: Buffer) => {
      if (chunk.toString().includes('between-steps')) resolve();
    });
    child.once('exit', (code) => reject(new Error(`the crash worker exited (${code}) early\n${output}`)));
  });
  return child;
}

pg.describe('a saga worker killed between steps, recovered by two processes at once (PostgreSQL log)', () => {
  it(`${runs} runs: each completed step compensated exactly once, no run recovered twice`, async () => {
    const pool = pg.pool();
    await pool.query('CREATE TABLE effects (key text PRIMARY KEY)');
    await pool.query('CREATE TABLE undo_calls (key text NOT NULL, worker text NOT NULL)');
    await pool.query('CREATE TABLE refunds (key text PRIMARY KEY, step text NOT NULL)');
    const stores = postgresStores(pool, { schema: pg.schema });
    await stores.migrate();
    await stores.close();
    const input = { db: pg.config(), schema: pg.schema, runs, leaseMs };

    const child = await crashingWorker(input);
    child.kill('SIGKILL');
    await once(child, 'exit');
    await sleep(leaseMs + 200); // the dead worker's leases lapse

    const results = await runWorkers<Recovered>({
      entry: recoverWorker,
      workers: 2,
      input,
      timeoutMs: 60_000,
    });
    const count = async (text: string) => Number((await pool.query<{ n: string }>(text)).rows[0]?.n);
    const effects = await count('SELECT count(*) AS n FROM effects');
    const shipped = await count("SELECT count(*) AS n FROM effects WHERE key LIKE '%:ship'");
    const refunds = await count('SELECT count(*) AS n FROM refunds');
    const calls = await count('SELECT count(*) AS n FROM undo_calls');
    const duplicateCalls = await count(
      'SELECT count(*) AS n FROM (SELECT key FROM undo_calls GROUP BY key HAVING count(*) > 1) d',
    );
    const recovered = results.flatMap((r) => r.recovered);
    const compensated = results.flatMap((r) => r.compensated);
    console.log(
      `saga crash between steps: ${runs} runs × 2 completed steps (${effects} effects, ${shipped} shipped); ` +
        `recover() in 2 processes at once → recovered ${results.map((r) => r.recovered.length).join(' + ')}, ` +
        `compensated ${compensated.length}, refunds ${refunds} (expected ${2 * runs}), compensation calls ${calls}, ` +
        `steps compensated twice ${duplicateCalls}`,
    );
    expect([effects, shipped]).toEqual([2 * runs, 0]);
    expect(new Set(recovered).size).toBe(recovered.length);
    expect(recovered.sort()).toEqual(Array.from({ length: runs }, (_, i) => `o${i}`).sort());
    expect(compensated.sort()).toEqual(recovered);
    expect(results.map((r) => r.needsAttention + r.completed.length)).toEqual([0, 0]);
    expect(refunds).toBe(2 * runs);
    expect(calls).toBe(2 * runs);
    expect(duplicateCalls).toBe(0);
    const { rows } = await pool.query<{ status: string; n: string }>(
      `SELECT status, count(*) AS n FROM "${pg.schema}".saga_runs GROUP BY status`,
    );
    expect(rows.map((r) => [r.status, Number(r.n)])).toEqual([['compensated', runs]]);
  });
});
