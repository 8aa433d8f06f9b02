/**
 * The outbox, the relay and the inbox on PGlite, in one process: 300 state changes of 20 accounts
 * (each a transaction that bumps the account and enqueues its event), a relay publishing to a fake
 * in-memory broker (an array) whose every 5th publish stores the batch and then fails (an ack lost:
 * the relay publishes the batch again), and a consumer applying the broker's messages through the
 * inbox, each in a `db.transaction`. At the end the broker redelivers its first 50 messages. Counted:
 * every event applied once, each key in order, every duplicate dropped by the inbox.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { describe, expect, it, onTestFinished } from 'vitest';
import { outboxRelay } from '../../src/outbox/outbox-relay.js';
import type { Publish } from '../../src/outbox/store.js';
import { useEmbeddedPostgres } from '../support/postgres-stores.js';
import {
  applyEvent,
  type Change,
  changeAccount,
  createTables,
  eventually,
  keysOf,
  orderReport,
  outboxState,
  readEffects,
} from './harness.js';

const events = 300;
const keyCount = 20;
const redeliver = 50;

describe('the outbox, relay and inbox on PGlite, with an in-memory broker', () => {
  const embedded = useEmbeddedPostgres();

  it(`${events} events of ${keyCount} keys: each applied once, in order per key; redeliveries dropped`, async () => {
    const db = embedded.db();
    const stores = await embedded.stores();
    const keys = keysOf(keyCount);
    await createTables(db, stores.schema, keys);

    // The broker: what it stored, in order; every 5th publish stores the batch, then fails.
    const broker: Array<{ readonly id: string; readonly change: Change }> = [];
    let publishes = 0;
    let lostAcks = 0;
    const publish: Publish = async (messages) => {
      publishes += 1;
      for (const m of messages) broker.push({ id: m.id, change: m.payload as Change });
      if (publishes % 5 === 0) {
        lostAcks += messages.length;
        throw new Error('the ack was lost');
      }
    };
    const relay = outboxRelay({ outbox: stores.outbox, publish, backoff: () => 10, pollMs: 50 });

    // The consumer: applies the broker's messages in order, each through the inbox in a transaction.
    let cursor = 0;
    let duplicates = 0;
    let consuming = true;
    onTestFinished(() => {
      consuming = false;
    });
    const consumer = (async () => {
      while (consuming) {
        const message = broker[cursor];
        if (message === undefined) {
          await sleep(5);
          continue;
        }
        if (await db.transaction((tx) => applyEvent(tx, stores, message.id, message.change))) duplicates += 1;
        cursor += 1;
      }
    })();

    relay.start();

    onTestFinished(() => relay.stop()); // on failure; a no-op once stopped
    const ids: string[] = [];
    for (let i = 0; i < events; i++) {
      ids.push(await db.transaction((tx) => changeAccount(tx, stores, keys[i % keyCount]!, 'accounts')));
    }
    await eventually(
      async () => (await outboxState(db, stores.schema)).pending === 0,
      'every event delivered',
    );
    await relay.stop();
    await eventually(() => cursor === broker.length, 'the consumer caught up');
    const fromRelay = broker.length - events;
    broker.push(...broker.slice(0, redeliver)); // the broker redelivers its first messages
    await eventually(() => cursor === broker.length, 'the consumer caught up with the redelivery');
    consuming = false;
    await consumer;

    const outbox = await outboxState(db, stores.schema);
    const { applied, effects } = await readEffects(db, stores.schema);
    const order = orderReport(applied, keys, events / keyCount);
    const distinctInBroker = new Set(broker.map((m) => m.id)).size;
    console.log(
      `outbox on PGlite: ${events} events of ${keyCount} keys → ${publishes} publishes, ${lostAcks} events in batches whose ack ` +
        `was lost (published again: ${fromRelay} extra copies); then ${redeliver} redelivered by the broker; ` +
        `the consumer handled ${broker.length} messages (${distinctInBroker} distinct), dropped ${duplicates} duplicates; ` +
        `effect count ${effects} (expected ${events}); out of order ${order.outOfOrder}, keys incomplete ${order.incompleteKeys}`,
    );

    expect(outbox).toMatchObject({ pending: 0, delivered: events, dead: 0 });
    expect(new Set(ids).size).toBe(events);
    expect(distinctInBroker).toBe(events);
    expect(fromRelay).toBe(lostAcks);
    expect(lostAcks).toBeGreaterThan(0);
    expect(duplicates).toBe(fromRelay + redeliver);
    expect(effects).toBe(events);
    expect(applied.map((a) => a.eventId).sort()).toEqual(ids.slice().sort());
    expect(order).toMatchObject({ outOfOrder: 0, incompleteKeys: 0 });
    await stores.close();
  });
});
