/**
 * A child process: opens the stores' LISTEN connection (by watching a key), reports the listener is
 * in place, and then simply ends its work. It must exit by itself: the LISTEN socket and the
 * stores' timers are unref'd (the pool lets the process exit when idle).
 */
import pg from 'pg';
import { postgresStores } from '../../../src/stores/postgres/index.js';

const [url, schema] = process.argv.slice(2) as [string, string];
const pool = new pg.Pool({ connectionString: url, allowExitOnIdle: true });
const stores = postgresStores(pool, { schema });
await stores.migrate();
const claim = await stores.idempotency.claim('k', 'fp', 60_000);
stores.idempotency.watch!('k', () => {});
for (let i = 0; i < 100; i++) {
  const { rows } = await pool.query<{ n: number }>(
    "SELECT count(*)::int AS n FROM pg_stat_activity WHERE query LIKE 'LISTEN %' AND pid <> pg_backend_pid()",
  );
  if (rows[0]!.n > 0) break;
  await new Promise((resolve) => setTimeout(resolve, 20));
}
process.stdout.write(`${claim.status}\n`);
