// Worker of the crash test, run under plain node on the built dist/: claims one key on the shared
// PostgreSQL store, writes the handler's effect (in the claim's transaction, or outside the
// database's transaction with `transactional: false`), says "in-handler" on stdout and hangs until
// the parent SIGKILLs it.
import pg from 'pg';
import { idempotency } from '../../../dist/index.js';
import { postgresStores } from '../../../dist/stores/postgres/index.js';

const input = JSON.parse(process.argv[2]);
const pool = new pg.Pool(input.db);
pool.on('error', () => {});
const stores = postgresStores(pool, { schema: input.schema });
const options = { store: stores.idempotency, leaseMs: input.leaseMs };
const hang = () => new Promise(() => setInterval(() => {}, 1_000));
if (input.transactional) {
  await idempotency({ ...options, transactional: true }).execute(input.key, input.request, async ({ tx }) => {
    await tx.query('INSERT INTO effects (key, worker) VALUES ($1, $2)', [input.key, 'crashed']);
    process.stdout.write('in-handler\n');
    return hang();
  });
} else {
  await idempotency(options).execute(input.key, input.request, async () => {
    await pool.query('INSERT INTO effects (key, worker) VALUES ($1, $2)', [input.key, 'crashed']);
    process.stdout.write('in-handler\n');
    return hang();
  });
}
