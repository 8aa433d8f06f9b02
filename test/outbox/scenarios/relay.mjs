// Worker of the outbox end-to-end test, run under plain node on the built dist/: one of several
// relay processes sharing the test's outbox, each publishing to JetStream with
// natsJetStreamPublisher. It says it is ready (a row in relays_ready) once its relay runs, and stops
// when the test has marked production finished and no event is left pending. Counts what its relay
// delivered, in how many batches, and what failed.
import { setTimeout as sleep } from 'node:timers/promises';
import { jetstream } from '@nats-io/jetstream';
import { connect } from '@nats-io/transport-node';
import pg from 'pg';
import { outboxRelay } from '../../../dist/index.js';
import { natsJetStreamPublisher } from '../../../dist/stores/nats/index.js';
import { postgresStores } from '../../../dist/stores/postgres/index.js';
import { runScenario } from '../../support/scenario-worker.mjs';

runScenario(async (input, { workerIndex }) => {
  const pool = new pg.Pool({ ...input.db, max: 4 });
  pool.on('error', () => {});
  const stores = postgresStores(pool, { schema: input.schema });
  const nc = await connect({ servers: input.natsUrl });
  const counts = { delivered: 0, batches: 0, publishFailures: 0, storeErrors: 0, deadLettered: 0 };
  const relay = outboxRelay({
    outbox: stores.outbox,
    publish: natsJetStreamPublisher(jetstream(nc)),
    name: `relay-${workerIndex}`,
    pollMs: 200,
    backoff: (n) => 50 * n,
    onDelivered: (e) => {
      counts.delivered += e.ids.length;
      counts.batches += 1;
    },
    onPublishFailed: () => {
      counts.publishFailures += 1;
    },
    onDeadLettered: () => {
      counts.deadLettered += 1;
    },
    onStoreError: (e) => {
      counts.storeErrors += 1;
      if (counts.storeErrors === 1) console.error(e.operation, e.error);
    },
  });
  try {
    relay.start();
    await pool.query('INSERT INTO relays_ready (worker) VALUES ($1)', [workerIndex]);
    for (;;) {
      const { rows } = await pool.query(
        `SELECT (SELECT produced FROM control WHERE id = 1) AS produced,
           (SELECT count(*)::int FROM outbox WHERE status = 'pending') AS pending`,
      );
      if (rows[0].produced && rows[0].pending === 0) break;
      await sleep(50);
    }
    await relay.stop();
    return counts;
  } finally {
    await stores.close();
    await nc.close();
    await pool.end();
  }
});
