/**
 * A relay process killed between the broker's confirmation and marking the batch delivered, on
 * PostgreSQL and NATS JetStream. The worker's publisher says "published" once JetStream confirmed
 * its first batch and then hangs; the test SIGKILLs it, waits for the batch's lease to lapse, and a
 * new relay publishes the same events again. Within the stream's duplicate_window JetStream drops
 * them (PubAck duplicate); past it they are stored twice and the inbox drops them. Either way every
 * event is applied once, each key in order. The worker runs the built dist/ under plain node.
 */
import { type ChildProcess, fork } from 'node:child_process';
import { once } from 'node:events';
import { setTimeout as sleep } from 'node:timers/promises';
import { type JetStreamClient, jetstream, type PubAck } from '@nats-io/jetstream';
import { expect, it, onTestFinished } from 'vitest';
import { outboxRelay } from '../../src/outbox/outbox-relay.js';
import { natsJetStreamPublisher } from '../../src/stores/nats/index.js';
import { postgresStores } from '../../src/stores/postgres/index.js';
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
const crashWorker = new URL('./scenarios/crash-relay.mjs', import.meta.url);

const keyCount = 10;
const perKey = 3;
const events = keyCount * perKey;
/** Short, so the test waits little for it; the relay needs ≥ 3 × the stores' timeoutMs. */
const leaseMs = 1_000;
const timeoutMs = 300;

/** Starts the crash worker and resolves with it and the size of the batch it published, once it hangs. */
async function crashingRelay(input: object): Promise<{ child: ChildProcess; published: number }> {
  const child = fork(crashWorker, [JSON.stringify(input)], {
    execArgv: [],
    stdio: ['ignore', 'pipe', 'pipe', 'ipc'],
  });
  onTestFinished(async () => {
    if (child.exitCode === null && child.signalCode === null) {
      child.kill('SIGKILL');
      await once(child, 'exit');
    }
  });
  let output = '';
  child.stderr?.on('data', (chunk: Buffer) => {
    output += chunk.toString();
  });
  const published = await new Promise<number>((resolve, reject) => {
    let stdout = '';
    child.stdout?.on('data', (chunk: Buffer) => {
      stdout += chunk.toString();
      const match = /published (\d+)\n/.exec(stdout);
      if (match) resolve(Number(match[1]));
    });
    child.once('exit', (code) => reject(new Error(`the crash worker exited (${code}) early\n${output}`)));
  });
  return { child, published };
}

/** `js` recording every PubAck it gets back. */
function recordingAcks(js: JetStreamClient): { js: Pick<JetStreamClient, 'publish'>; acks: PubAck[] } {
  const acks: PubAck[] = [];
  return {
    acks,
    js: {
      publish: (...args: Parameters<JetStreamClient['publish']>) =>
        js.publish(...args).then((ack) => {
          acks.push(ack);
          return ack;
        }),
    },
  };
}

pg.describe('a relay process killed after the broker confirmed a batch, before marking it delivered', () => {
  nats.describe('on NATS', () => {
    it.each([
      ['within duplicate_window (2 min)', 120_000, true],
      ['past duplicate_window (200 ms)', 200, false],
    ] as const)(
      '%s: republished after the lease lapses, applied once',
      async (window, windowMs, brokerDrops) => {
        const pool = pg.pool();
        const stores = postgresStores(pool, { schema: pg.schema, timeoutMs });
        await stores.migrate();
        const keys = keysOf(keyCount);
        await createTables(pool, pg.schema, keys);
        const nc = await nats.connect();
        const plainJs = jetstream(nc);
        const { config } = await nats.addStream('events', { duplicate_window: windowMs * 1_000_000 });
        await nats.addStream('dead');
        const topic = nats.subject('events', 'accounts');
        const ids: string[] = [];
        for (let round = 0; round < perKey; round++) {
          for (const key of keys)
            ids.push(await inTransaction(pool, (tx) => changeAccount(tx, stores, key, topic)));
        }

        const { child, published } = await crashingRelay({
          db: pg.config(),
          schema: pg.schema,
          natsUrl: nats.url,
          leaseMs,
          timeoutMs,
        });
        child.kill('SIGKILL');
        await once(child, 'exit');
        const jsm = await plainJs.jetstreamManager();
        const streamAfterCrash = (await jsm.streams.info(config.name)).state.messages;
        const leased = await pool.query<{ id: string }>(
          "SELECT id::text FROM outbox WHERE owner IS NOT NULL AND status = 'pending' ORDER BY seq",
        );
        const crashedBatch = leased.rows.map((r) => r.id);
        const afterCrash = await outboxState(pool, pg.schema);
        await sleep(leaseMs + 100); // the dead relay's lease lapses

        const { js, acks } = recordingAcks(plainJs);
        const republished: string[] = [];
        const publish = natsJetStreamPublisher(js);
        const relay = outboxRelay({
          outbox: stores.outbox,
          leaseMs,
          pollMs: 100,
          publish: (messages, options) => {
            republished.push(...messages.map((m) => m.id));
            return publish(messages, options);
          },
        });
        relay.start();
        onTestFinished(() => relay.stop()); // on failure; a no-op once stopped
        await eventually(
          async () => (await outboxState(pool, pg.schema)).pending === 0,
          'every event delivered',
        );
        await relay.stop();
        const streamAfterRecovery = (await jsm.streams.info(config.name)).state.messages;
        const brokerDuplicates = acks.filter((ack) => ack.duplicate).length;

        const consumer = await startInboxConsumer({
          nc,
          js: plainJs,
          stream: config.name,
          pool,
          stores,
          deadLetterSubject: nats.subject('dead', 'events'),
        });
        await eventually(
          async () => consumer.stats.applied === events && (await consumer.idle()),
          `the consumer applied ${events} events and has nothing unacked`,
        );
        await consumer.run.stop();
        const { applied, effects } = await readEffects(pool, pg.schema);
        const order = orderReport(applied, keys, perKey);
        const { stats } = consumer;
        console.log(
          `outbox relay killed after PubAck, ${window}: ${events} events of ${keyCount} keys; the killed relay published ` +
            `${published} (stream ${streamAfterCrash}, ${crashedBatch.length} left leased, ${afterCrash.delivered} marked delivered); ` +
            `after the ${leaseMs} ms lease the new relay published ${republished.length}, ` +
            `${brokerDuplicates} acked as duplicates by JetStream; stream holds ${streamAfterRecovery}; ` +
            `consumer: ${stats.deliveries} deliveries, ${stats.duplicates} duplicates dropped by the inbox, ` +
            `effect count ${effects} (expected ${events}); out of order ${order.outOfOrder}, keys incomplete ${order.incompleteKeys}`,
        );

        // The killed relay published the head of every key (one per key) and marked none delivered.
        expect(published).toBe(keyCount);
        expect(streamAfterCrash).toBe(keyCount);
        expect(afterCrash).toMatchObject({ pending: events, delivered: 0, dead: 0 });
        expect(crashedBatch).toEqual(ids.slice(0, keyCount));
        // The new relay published every event, the crashed batch again among them.
        expect(republished.slice().sort()).toEqual(ids.slice().sort());
        expect(brokerDuplicates).toBe(brokerDrops ? keyCount : 0);
        expect(streamAfterRecovery).toBe(brokerDrops ? events : events + keyCount);
        expect(stats.duplicates).toBe(brokerDrops ? 0 : keyCount);
        expect(stats.deliveries).toBe(streamAfterRecovery);
        expect(stats.ids.size).toBe(events);
        expect(effects).toBe(events);
        expect(new Set(applied.map((a) => a.eventId)).size).toBe(events);
        expect(order).toMatchObject({ outOfOrder: 0, incompleteKeys: 0, streamOrderBreaks: 0 });
        await stores.close();
      },
    );
  });
});
