/**
 * The outbox relay against a broker that goes away, on PostgreSQL and a nats-server of the test's
 * own (a free port, its own store directory; the shared NATS on 4222 is never touched).
 *
 * - The server is stopped while events are being enqueued: every publish fails, each event's
 *   attempts grow with its backoff, nothing is lost; restarted on the same store directory (the
 *   stream persists), delivery resumes and every event reaches the inbox once, each key in order.
 * - A poison event (a subject no stream captures) is dead-lettered after maxAttempts with its last
 *   error, the rest of its key proceeds, and once a stream captures the subject, redrive() delivers it.
 */
import { jetstream, jetstreamManager } from '@nats-io/jetstream';
import { expect, it, onTestFinished } from 'vitest';
import { outboxRelay } from '../../src/outbox/outbox-relay.js';
import { natsJetStreamPublisher } from '../../src/stores/nats/index.js';
import { postgresStores } from '../../src/stores/postgres/index.js';
import { useNatsServer } from '../support/private-nats.js';
import { usePostgres } from '../support/services.js';
import {
  type Applied,
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
const natsServer = useNatsServer();

const backoff = (attempts: number): number => 50 * attempts;

/** Each key's applied seqs, in the order they were applied. */
function seqsByKey(applied: readonly Applied[]): Record<string, number[]> {
  const byKey: Record<string, number[]> = {};
  for (const a of applied) byKey[a.key] = [...(byKey[a.key] ?? []), a.seq];
  return byKey;
}

pg.describe('the outbox relay when the broker goes away', () => {
  natsServer.describe('on a nats-server of its own', () => {
    it('stopped while events are enqueued: attempts grow with backoff, nothing is lost; restarted: each event once', async () => {
      const events = 200;
      const stopAt = 80;
      const keys = keysOf(10);
      const server = await natsServer.start();
      const pool = pg.pool();
      const stores = postgresStores(pool, { schema: pg.schema });
      await stores.migrate();
      await createTables(pool, pg.schema, keys);
      const nc = await server.connect({ maxReconnectAttempts: -1, reconnectTimeWait: 100 });
      const jsm = await jetstreamManager(nc);
      await jsm.streams.add({ name: 'events', subjects: ['events.>'] });

      const failures = new Map<string, Array<[attempts: number, retryInMs: number]>>();
      let deadLettered = 0;
      const relay = outboxRelay({
        outbox: stores.outbox,
        publish: natsJetStreamPublisher(jetstream(nc), { timeoutMs: 300 }),
        backoff,
        maxAttempts: 50,
        pollMs: 100,
        onPublishFailed: (e) => {
          const list = failures.get(e.id) ?? [];
          list.push([e.attempts, e.retryInMs]);
          failures.set(e.id, list);
        },
        onDeadLettered: () => {
          deadLettered += 1;
        },
      });
      relay.start();
      onTestFinished(() => relay.stop()); // on failure; a no-op once stopped

      const ids: string[] = [];
      for (let i = 0; i < events; i++) {
        if (i === stopAt) await server.stop();
        ids.push(
          await inTransaction(pool, (tx) =>
            changeAccount(tx, stores, keys[i % keys.length]!, 'events.accounts'),
          ),
        );
      }
      const mostAttempts = () => Math.max(0, ...[...failures.values()].map((list) => list.length));
      await eventually(() => mostAttempts() >= 3, 'an event failing 3 times while the broker is down');
      const whileDown = await outboxState(pool, pg.schema);
      await server.restart();
      await eventually(
        async () => (await outboxState(pool, pg.schema)).pending === 0,
        'every event delivered',
      );
      await relay.stop();
      const outbox = await outboxState(pool, pg.schema);
      const inStream = (await jsm.streams.info('events')).state.messages;

      const consumerNc = await server.connect();
      const consumer = await startInboxConsumer({
        nc: consumerNc,
        js: jetstream(consumerNc),
        stream: 'events',
        pool,
        stores,
        deadLetterSubject: 'dead.events',
      });
      await eventually(
        async () => consumer.stats.applied === events && (await consumer.idle()),
        `the consumer applied ${events} events and has nothing unacked`,
      );
      await consumer.run.stop();
      const { applied, effects } = await readEffects(pool, pg.schema);
      const order = orderReport(applied, keys, events / keys.length);
      const { stats } = consumer;

      // Each failed event's tries: 1, 2, 3, … in order, each retried after backoff(attempts).
      const irregular = [...failures.values()].filter((list) =>
        list.some(([attempts, retryInMs], i) => attempts !== i + 1 || retryInMs !== backoff(attempts)),
      ).length;
      const example = [...failures.values()].find((list) => list.length === mostAttempts()) ?? [];
      console.log(
        `outbox with the broker down: ${events} events of ${keys.length} keys, nats-server stopped at event ${stopAt} ` +
          `and restarted once an event had failed 3 times (then ${whileDown.delivered} delivered, ${whileDown.pending} pending); ` +
          `${failures.size} events failed ${[...failures.values()].reduce((n, l) => n + l.length, 0)} publishes in all, ` +
          `at most ${mostAttempts()} times (attempts→retryInMs ${example.map(([a, r]) => `${a}→${r}`).join(', ')}), ` +
          `${irregular} with irregular attempts; ${deadLettered} dead letters; ` +
          `delivered ${outbox.delivered}, stream holds ${inStream}; consumer: ${stats.deliveries} deliveries, ` +
          `${stats.duplicates} duplicates dropped by the inbox; effect count ${effects} (expected ${events}); ` +
          `out of order ${order.outOfOrder}, keys incomplete ${order.incompleteKeys}`,
      );

      expect(whileDown.pending).toBeGreaterThanOrEqual(events - stopAt); // none enqueued while down went out
      expect(mostAttempts()).toBeGreaterThanOrEqual(3);
      expect(irregular).toBe(0);
      expect(deadLettered).toBe(0);
      expect(outbox).toMatchObject({ pending: 0, delivered: events, dead: 0 });
      expect(inStream).toBe(events);
      expect(stats.ids.size).toBe(events);
      expect(ids.every((id) => stats.ids.has(id))).toBe(true);
      expect([stats.deliveries, stats.duplicates]).toEqual([events, 0]);
      expect(effects).toBe(events);
      expect(order).toMatchObject({ outOfOrder: 0, incompleteKeys: 0, streamOrderBreaks: 0 });
      await stores.close();
    }, 45_000);

    it('a poison event is dead-lettered after maxAttempts, its key moves on, and redrive() delivers it once fixed', async () => {
      const maxAttempts = 3;
      const keys = keysOf(5);
      const server = await natsServer.start();
      const pool = pg.pool();
      const stores = postgresStores(pool, { schema: pg.schema });
      await stores.migrate();
      await createTables(pool, pg.schema, keys);
      const nc = await server.connect();
      const jsm = await jetstreamManager(nc);
      await jsm.streams.add({ name: 'events', subjects: ['events.>'] });

      const attempts: number[] = [];
      const dead: Array<{ id: string; attempts: number; error: string }> = [];
      const relay = outboxRelay({
        outbox: stores.outbox,
        publish: natsJetStreamPublisher(jetstream(nc), { timeoutMs: 1_000 }),
        backoff,
        maxAttempts,
        pollMs: 100,
        onPublishFailed: (e) => attempts.push(e.attempts),
        onDeadLettered: (e) => {
          const error = e.error instanceof Error ? `${e.error.name}: ${e.error.message}` : String(e.error);
          dead.push({ id: e.id, attempts: e.attempts, error });
        },
      });
      // k0's second change goes to a subject no stream captures; every other event is fine.
      let poison = '';
      for (let round = 0; round < 3; round++) {
        for (const key of keys) {
          const topic = key === 'k0' && round === 1 ? 'nowhere.accounts' : 'events.accounts';
          const id = await inTransaction(pool, (tx) => changeAccount(tx, stores, key, topic));
          if (topic.startsWith('nowhere')) poison = id;
        }
      }
      await inTransaction(pool, (tx) => changeAccount(tx, stores, 'k0', 'events.accounts'));
      relay.start();
      onTestFinished(() => relay.stop()); // on failure; a no-op once stopped
      await eventually(async () => (await outboxState(pool, pg.schema)).pending === 0, 'nothing pending');
      const beforeRedrive = await outboxState(pool, pg.schema);
      const letters = await stores.outbox.deadLetters();

      await jsm.streams.add({ name: 'nowhere', subjects: ['nowhere.>'] }); // the fix
      const redriven = await stores.outbox.redrive({ ids: [poison] });
      await eventually(
        async () => (await outboxState(pool, pg.schema)).delivered === 16,
        'the poison delivered',
      );
      await relay.stop();
      const afterRedrive = await outboxState(pool, pg.schema);
      const fixed = await jetstream(nc).consumers.get('nowhere');
      const delivered = await fixed.next({ expires: 2_000 });

      const consumer = await startInboxConsumer({
        nc,
        js: jetstream(nc),
        stream: 'events',
        pool,
        stores,
        deadLetterSubject: 'dead.events',
      });
      await eventually(
        async () => consumer.stats.applied === 15 && (await consumer.idle()),
        'the rest applied',
      );
      await consumer.run.stop();
      const { applied } = await readEffects(pool, pg.schema);
      console.log(
        `outbox poison event: 16 events of 5 keys, k0's 2nd on a subject no stream captures → failed attempts ` +
          `[${attempts.join(', ')}], dead-lettered at attempt ${dead[0]?.attempts} (lastError "${letters[0]?.lastError}"); ` +
          `before redrive ${beforeRedrive.delivered} delivered, ${beforeRedrive.dead} dead; k0 applied ` +
          `[${seqsByKey(applied).k0?.join(', ')}]; stream added, redrive() → ${redriven}, then ${afterRedrive.delivered} ` +
          `delivered, ${afterRedrive.dead} dead; the fixed stream holds it once: ${delivered?.headers?.get('Nats-Msg-Id') === poison}`,
      );

      expect(attempts).toEqual([1, 2]);
      expect(dead).toEqual([{ id: poison, attempts: maxAttempts, error: expect.any(String) }]);
      expect(letters.map((l) => [l.id, l.attempts, l.lastError, l.payload])).toEqual([
        [poison, maxAttempts, dead[0]!.error, { key: 'k0', seq: 2 }],
      ]);
      expect(beforeRedrive).toMatchObject({ pending: 0, delivered: 15, dead: 1 });
      expect(seqsByKey(applied)).toEqual({
        k0: [1, 3, 4],
        k1: [1, 2, 3],
        k2: [1, 2, 3],
        k3: [1, 2, 3],
        k4: [1, 2, 3],
      });
      expect(redriven).toBe(1);
      expect(afterRedrive).toMatchObject({ pending: 0, delivered: 16, dead: 0 });
      expect(await stores.outbox.deadLetters()).toEqual([]);
      expect(delivered?.headers?.get('Nats-Msg-Id')).toBe(poison);
      expect(delivered?.json()).toEqual({ key: 'k0', seq: 2 });
      expect((await jsm.streams.info('nowhere')).state.messages).toBe(1);
      await stores.close();
    });
  });
});
