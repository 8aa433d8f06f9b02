// Worker of the saga crash test, run under plain node on the built dist/: one of two processes
// that call recover() at the same moment on the runs the crashed worker left in the log.
import pg from 'pg';
import { postgresStores } from '../../../dist/stores/postgres/index.js';
import { runScenario } from '../../support/scenario-worker.mjs';
import { orderSaga } from './order-saga.mjs';

runScenario(async (input, { barrier, workerIndex }) => {
  const pool = new pg.Pool({ ...input.db, max: 4 });
  pool.on('error', () => {});
  const stores = postgresStores(pool, { schema: input.schema });
  const order = orderSaga(pool, stores.sagaLog, `recoverer-${workerIndex}`, input.leaseMs);
  await barrier();
  const result = await order.recover();
  await stores.close();
  await pool.end();
  return {
    recovered: result.recovered,
    compensated: result.compensated,
    completed: result.completed,
    needsAttention: result.needsAttention.length,
  };
});
