/**
 * A worker claims a key and is SIGKILLed mid-handler, after its effect was written. When the lease
 * ends the next request takes the key over and completes it. With the PostgreSQL store's
 * transactional mode the crashed effect rolled back with its transaction, so the effect count is
 * exactly one; without it (the effect outside the claim's transaction) a crash means at-least-once:
 * two. Both counts are printed and asserted. The worker runs the built dist/ under plain node.
 */
import { type ChildProcess, fork } from 'node:child_process';
import { once } from 'node:events';
import { expect, it } from 'vitest';
import { idempotency } from '../../src/idempotency/idempotency.js';
import { postgresStores } from '../../src/stores/postgres/index.js';
import { usePostgres } from '../support/services.js';

const pg = await usePostgres();
const worker = new URL('./scenarios/crash.mjs', import.meta.url);

/** Starts the crash worker and resolves once its handler wrote the effect. */
async function crashingWorker(input: object): Promise<ChildProcess> {
  const child = fork(worker, [JSON.stringify(input)], { stdio: ['ignore', 'pipe', 'pipe', 'ipc'] });
  let output = '';
  child.stderr?.on('data', (chunk: Buffer) => {
    output += chunk.toString();
  });
  await new Promise<void>((resolve, reject) => {
    child.stdout?.on('data', (chunk: Buffer) => {
      if (chunk.toString().includes('in-handler')) resolve();
    });
    child.once('exit', (code) =>
      reject(new Error(`the crash worker exited (${code}) before its handler ran\n${output}`)),
    );
  });
  return child;
}

pg.describe('a claimant killed mid-handler (PostgreSQL store)', () => {
  it.each([
    [true, 1],
    [false, 2],
  ] as const)(
    'transactional %s: after the lease the key is taken over; the effect ran %i time(s)',
    async (transactional, expected) => {
      const pool = pg.pool();
      await pool.query('CREATE TABLE effects (key text NOT NULL, worker text NOT NULL)');
      const stores = postgresStores(pool, { schema: pg.schema });
      await stores.migrate();
      const leaseMs = 1_000;
      const request = { cents: 100 };
      const child = await crashingWorker({
        db: pg.config(),
        schema: pg.schema,
        key: 'order-1',
        request,
        leaseMs,
        transactional,
      });
      child.kill('SIGKILL');
      await once(child, 'exit');

      const started = performance.now();
      const payments = idempotency({ store: stores.idempotency, leaseMs });
      const insert = 'INSERT INTO effects (key, worker) VALUES ($1, $2)';
      const result = transactional
        ? await idempotency({ store: stores.idempotency, leaseMs, transactional: true }).execute(
            'order-1',
            request,
            async ({ tx }) => {
              await tx.query(insert, ['order-1', 'successor']);
              return 'charged by the successor';
            },
          )
        : await payments.execute('order-1', request, async () => {
            await pool.query(insert, ['order-1', 'successor']);
            return 'charged by the successor';
          });
      const tookOverAfter = performance.now() - started;
      expect(result).toBe('charged by the successor');
      expect(await payments.execute('order-1', request, () => 'never')).toBe('charged by the successor');
      const { rows } = await pool.query<{ worker: string }>('SELECT worker FROM effects ORDER BY worker');
      console.log(
        `crash mid-handler, transactional ${transactional}: taken over after ${tookOverAfter.toFixed(0)} ms; ` +
          `effect executed ${rows.length} time(s) (${rows.map((r) => r.worker).join(', ')})`,
      );
      expect(rows.length).toBe(expected);
      await stores.close?.();
    },
  );
});
