// Worker of the saga crash test, run under plain node on the built dist/: starts `runs` order
// sagas on the PostgreSQL log; each stops between its steps, right after the log recorded `charge`
// as done and before `ship` is recorded as running (the log write never returns). Once every run
// is there it says "between-steps" on stdout and waits for the parent's SIGKILL.
import pg from 'pg';
import { postgresStores } from '../../../dist/stores/postgres/index.js';
import { orderSaga } from './order-saga.mjs';

const input = JSON.parse(process.argv[2]);
const pool = new pg.Pool(input.db);
pool.on('error', () => {});
const { sagaLog } = postgresStores(pool, { schema: input.schema });
let stopped = 0;
const log = {
  timeoutMs: sagaLog.timeoutMs,
  start: (lease, json) => sagaLog.start(lease, json),
  renew: (lease) => sagaLog.renew(lease),
  claim: (name, owner, leaseMs) => sagaLog.claim(name, owner, leaseMs),
  async write(lease, change) {
    const written = await sagaLog.write(lease, change);
    if (change.step === 'charge' && change.state === 'done') {
      stopped += 1;
      if (stopped === input.runs) process.stdout.write('between-steps\n');
      return new Promise(() => {});
    }
    return written;
  },
};
const order = orderSaga(pool, log, 'crashed', input.leaseMs);
for (let i = 0; i < input.runs; i++) order.run({ order: `o${i}` }, { id: `o${i}` }).catch(() => {});
setInterval(() => {}, 1_000);
