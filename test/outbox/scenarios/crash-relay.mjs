// Worker of the outbox crash test, run under plain node on the built dist/: a relay whose
// publisher, once JetStream confirmed its first batch, says "published <n>" on stdout and never
// returns, so the relay never marks the batch delivered. The parent SIGKILLs it there: the batch
// stays leased to a dead relay until the lease lapses.
import { jetstream } from '@nats-io/jetstream';
import { connect } from '@nats-io/transport-node';
import pg from 'pg';
import { outboxRelay } from '../../../dist/index.js';
import { natsJetStreamPublisher } from '../../../dist/stores/nats/index.js';
import { postgresStores } from '../../../dist/stores/postgres/index.js';

const input = JSON.parse(process.argv[2]);
const pool = new pg.Pool({ ...input.db, max: 4 });
pool.on('error', () => {});
const stores = postgresStores(pool, { schema: input.schema, timeoutMs: input.timeoutMs });
const nc = await connect({ servers: input.natsUrl });
const confirmed = natsJetStreamPublisher(jetstream(nc));
const relay = outboxRelay({
  outbox: stores.outbox,
  leaseMs: input.leaseMs,
  async publish(messages, options) {
    await confirmed(messages, options);
    process.stdout.write(`published ${messages.length}\n`);
    return new Promise(() => {});
  },
});
relay.start();
setInterval(() => {}, 1_000);
