// The saga both workers of the crash test define, on the built dist/: reserve and charge record
// their effect in `effects`; each compensation records its call in `undo_calls` and its effect
// in `refunds`, made idempotent by its key (the second call with a key changes nothing).
import { saga } from '../../../dist/index.js';

/** The order saga over `log`, its effects in `pool`, its compensations tagged with `worker`. */
export function orderSaga(pool, log, worker, leaseMs) {
  const effect = (step) => async ({ input }) => {
    await pool.query('INSERT INTO effects (key) VALUES ($1)', [`${input.order}:${step}`]);
    return { step, order: input.order };
  };
  const undo = async ({ idempotencyKey, output }) => {
    await pool.query('INSERT INTO undo_calls (key, worker) VALUES ($1, $2)', [idempotencyKey, worker]);
    await pool.query('INSERT INTO refunds (key, step) VALUES ($1, $2) ON CONFLICT (key) DO NOTHING', [
      idempotencyKey,
      output.step,
    ]);
  };
  return saga({ name: 'order', log, leaseMs })
    .step({ name: 'reserve', run: effect('reserve'), compensate: undo })
    .step({ name: 'charge', run: effect('charge'), compensate: undo })
    .step({ name: 'ship', run: effect('ship'), compensate: undo });
}
