/**
 * The transactional outbox end to end, on PostgreSQL and NATS JetStream: 1,000 state changes (each
 * a transaction that bumps an account of 50 and enqueues its event) made by the test while three
 * relay processes deliver them with natsJetStreamPublisher; a consumer reads the stream with
 * jetStreamConsumer and applies each message through the inbox in its own transaction, "losing" the
 * ack of every 50th one after its commit (so JetStream redelivers it). Counted: events in the
 * stream, events consumed, effects applied, each key's order, duplicates the inbox dropped. Workers
 * run the built dist/ under plain node.
 */
import { jetstream } from '@nats-io/jetstream';
import { expect, it } from 'vitest';
import { postgresStores } from '../../src/stores/postgres/index.js';
import { runWorkers } from '../support/multi-process.js';
import { useNats, usePostgres } from '../support/services.js';
import {
  changeAccount,
  createTables,
  eventually,
  inTransaction,
  keysOf,
  orderReport,
  outboxState,
  readEffects,
  startInboxConsumer,
} from './harness.js';

const pg = await usePostgres();
const nats = await useNats();
const relayWorker = new URL('./scenarios/relay.mjs', import.meta.url);

const changes = 1_000;
const keyCount = 50;
const relays = 3;
const loseAckEvery = 50;
const concurrency = 8;

interface RelayCounts {
  readonly delivered: number;
  readonly batches: number;
  readonly publishFailures: number;
  readonly storeErrors: number;
  readonly deadLettered: number;
}

pg.describe('the outbox end to end: PostgreSQL → 3 relay processes → JetStream → inbox', () => {
  nats.describe('on NATS', () => {
    it(`${changes} changes of ${keyCount} accounts: every event once, each key in order`, async () => {
      const pool = pg.pool({ max: concurrency + 2 });
      const stores = postgresStores(pool, { schema: pg.schema });
      await stores.migrate();
      const keys = keysOf(keyCount);
      await createTables(pool, pg.schema, keys);
      await pool.query('CREATE TABLE control (id int PRIMARY KEY, produced boolean NOT NULL)');
      await pool.query('INSERT INTO control VALUES (1, false)');
      await pool.query('CREATE TABLE relays_ready (worker int PRIMARY KEY)');

      const nc = await nats.connect();
      const js = jetstream(nc);
      const { config } = await nats.addStream('events');
      await nats.addStream('dead');
      const consumer = await startInboxConsumer({
        nc,
        js,
        stream: config.name,
        pool,
        stores,
        deadLetterSubject: nats.subject('dead', 'events'),
        loseAckEvery,
      });

      const relaysDone = runWorkers<RelayCounts>({
        entry: relayWorker,
        workers: relays,
        input: { db: pg.config(), schema: pg.schema, natsUrl: nats.url },
        timeoutMs: 60_000,
      });
      relaysDone.catch(() => {}); // awaited below; a failure is reported there
      await eventually(
        async () => Number((await pool.query('SELECT count(*) AS n FROM relays_ready')).rows[0].n) === relays,
        'every relay process running',
      );

      // The state changes, `concurrency` at a time, while the relays deliver.
      const topic = nats.subject('events', 'accounts');
      const ids: string[] = [];
      let next = 0;
      await Promise.all(
        Array.from({ length: concurrency }, async () => {
          while (next < changes) {
            const key = keys[next++ % keyCount]!;
            ids.push(await inTransaction(pool, (tx) => changeAccount(tx, stores, key, topic)));
          }
        }),
      );
      await pool.query('UPDATE control SET produced = true');
      const counts = await relaysDone;

      await eventually(
        async () => consumer.stats.applied === changes && (await consumer.idle()),
        `the consumer applied ${changes} events and has nothing unacked`,
      );
      await consumer.run.stop();

      const jsm = await js.jetstreamManager();
      const inStream = (await jsm.streams.info(config.name)).state.messages;
      const outbox = await outboxState(pool, pg.schema);
      const { applied, effects } = await readEffects(pool, pg.schema);
      const order = orderReport(applied, keys, changes / keyCount);
      const distinctApplied = new Set(applied.map((a) => a.eventId)).size;
      const lost = ids.filter((id) => !consumer.stats.ids.has(id)).length;
      const balances = await pool.query<{ total: string; max: number; min: number }>(
        'SELECT sum(balance) AS total, max(seq) AS max, min(seq) AS min FROM accounts',
      );
      const { stats } = consumer;
      console.log(
        `outbox end to end: ${changes} changes of ${keyCount} accounts, ${relays} relay processes → ` +
          `delivered ${counts.map((c) => c.delivered).join(' + ')} in ${counts.map((c) => c.batches).join(' + ')} batches ` +
          `(${counts.reduce((n, c) => n + c.publishFailures, 0)} publish failures, ` +
          `${counts.reduce((n, c) => n + c.storeErrors, 0)} store errors); stream holds ${inStream} messages; ` +
          `consumer: ${stats.deliveries} deliveries, ${stats.ids.size} distinct ids, ${lost} lost, ` +
          `${stats.applied} applied, ${stats.lostAcks} acks lost after commit, ${stats.duplicates} duplicates dropped by the inbox; ` +
          `effect count ${effects} (expected ${changes}); out of order ${order.outOfOrder}, ` +
          `keys incomplete ${order.incompleteKeys}, stream-order breaks ${order.streamOrderBreaks}`,
      );

      expect(new Set(ids).size).toBe(changes);
      expect(outbox).toMatchObject({ pending: 0, delivered: changes, dead: 0 });
      expect(counts.reduce((n, c) => n + c.delivered, 0)).toBe(changes);
      expect(counts.reduce((n, c) => n + c.deadLettered + c.storeErrors, 0)).toBe(0);
      expect(inStream).toBe(changes);
      expect(stats.ids.size).toBe(changes);
      expect(lost).toBe(0);
      expect(effects).toBe(changes);
      expect(applied).toHaveLength(changes);
      expect(distinctApplied).toBe(changes);
      expect(order).toEqual({ outOfOrder: 0, incompleteKeys: 0, streamOrderBreaks: 0 });
      expect(stats.lostAcks).toBe(changes / loseAckEvery);
      expect(stats.duplicates).toBe(stats.lostAcks);
      expect(stats.deliveries).toBe(changes + stats.duplicates);
      expect(balances.rows[0]).toEqual({
        total: String(changes),
        max: changes / keyCount,
        min: changes / keyCount,
      });
      await stores.close();
    }, 45_000);
  });
});
