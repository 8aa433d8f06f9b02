/**
 * What the outbox tests share: an `accounts` table whose every change enqueues one event (payload
 * `{ key, seq }`, `seq` the account's own change counter), an inbox consumer that applies each event
 * once (an effect counter and an `applied` log, in the consumer's transaction), and the checks on
 * what was applied: nothing lost, nothing twice, each key in order.
 */
import { AckPolicy, type JetStreamClient, type JsMsg, jetstreamManager } from '@nats-io/jetstream';
import type { NatsConnection } from '@nats-io/transport-node';
import type { Pool } from 'pg';
import { onTestFinished } from 'vitest';
import { type JetStreamConsumer, jetStreamConsumer } from '../../src/stores/nats/index.js';
import type { PostgresStores, PostgresTransaction } from '../../src/stores/postgres/index.js';

/** Anything that runs a statement: a pg Pool or client, PGlite or its transaction. */
type Queryable = PostgresTransaction;

/** The consumer name the inbox records messages under. */
export const CONSUMER = 'c';

/** An event's payload: which account changed, and its change number (1, 2, …). */
export interface Change {
  readonly key: string;
  readonly seq: number;
}

/** A row of the `applied` log, in the order the consumer applied them. */
export interface Applied extends Change {
  readonly eventId: string;
  /** The JetStream stream sequence the event was consumed at (null off NATS). */
  readonly streamSeq: number | null;
}

/** `count` account keys: `k0`, `k1`, … */
export const keysOf = (count: number): string[] => Array.from({ length: count }, (_, i) => `k${i}`);

/** Creates `accounts` (one row per key), `effect_count` and `applied` in `schema`. */
export async function createTables(db: Queryable, schema: string, keys: readonly string[]): Promise<void> {
  const s = `"${schema}"`;
  await db.query(`CREATE SCHEMA IF NOT EXISTS ${s}`);
  await db.query(
    `CREATE TABLE ${s}.accounts (id text PRIMARY KEY, balance int NOT NULL DEFAULT 0, seq int NOT NULL DEFAULT 0)`,
  );
  await db.query(`CREATE TABLE ${s}.effect_count (id int PRIMARY KEY, n int NOT NULL)`);
  await db.query(`INSERT INTO ${s}.effect_count VALUES (1, 0)`);
  await db.query(
    `CREATE TABLE ${s}.applied (pos bigserial PRIMARY KEY, key text NOT NULL, seq int NOT NULL,
      event_id text NOT NULL, stream_seq bigint)`,
  );
  await db.query(`INSERT INTO ${s}.accounts (id) SELECT jsonb_array_elements_text($1::jsonb)`, [
    JSON.stringify(keys),
  ]);
}

/**
 * One state change, in the transaction `tx`: bumps account `key` (its balance and change counter)
 * and enqueues its event on `topic`. Resolves the event's id.
 */
export async function changeAccount(
  tx: Queryable,
  stores: PostgresStores,
  key: string,
  topic: string,
): Promise<string> {
  const s = `"${stores.schema}"`;
  const { rows } = await tx.query<{ seq: number }>(
    `UPDATE ${s}.accounts SET balance = balance + 1, seq = seq + 1 WHERE id = $1 RETURNING seq`,
    [key],
  );
  const seq = rows[0]?.seq;
  if (seq === undefined) throw new Error(`no account ${key}`);
  const [id] = await stores.outbox.enqueue(tx, [{ topic, key, payload: { key, seq } satisfies Change }]);
  return id!;
}

/**
 * Applies one event through the inbox on `tx` (the consumer's own transaction): the first time,
 * bumps the effect counter and logs (key, seq); a redelivery is a duplicate and changes nothing.
 * Resolves whether it was a duplicate.
 */
export async function applyEvent(
  tx: Queryable,
  stores: PostgresStores,
  eventId: string,
  change: Change,
  streamSeq: number | null = null,
): Promise<boolean> {
  const s = `"${stores.schema}"`;
  const { duplicate } = await stores.inbox.process(
    tx,
    { consumer: CONSUMER, messageId: eventId },
    async (own) => {
      await own.query(`UPDATE ${s}.effect_count SET n = n + 1 WHERE id = 1`);
      await own.query(`INSERT INTO ${s}.applied (key, seq, event_id, stream_seq) VALUES ($1, $2, $3, $4)`, [
        change.key,
        change.seq,
        eventId,
        streamSeq,
      ]);
    },
  );
  return duplicate;
}

/** Runs `work` in a transaction on a client of `pool` (rolled back when it throws). */
export async function inTransaction<T>(pool: Pool, work: (tx: Queryable) => Promise<T>): Promise<T> {
  const client = await pool.connect();
  try {
    await client.query('BEGIN');
    const result = await work(client);
    await client.query('COMMIT');
    return result;
  } catch (error) {
    await client.query('ROLLBACK').catch(() => {});
    throw error;
  } finally {
    client.release();
  }
}

/** What was applied, in the order the consumer applied it, and the effect counter. */
export async function readEffects(
  db: Queryable,
  schema: string,
): Promise<{ applied: Applied[]; effects: number }> {
  const s = `"${schema}"`;
  const { rows } = await db.query<{ key: string; seq: number; event_id: string; stream_seq: string | null }>(
    `SELECT key, seq, event_id, stream_seq::text FROM ${s}.applied ORDER BY pos`,
  );
  const counter = await db.query<{ n: number }>(`SELECT n FROM ${s}.effect_count WHERE id = 1`);
  return {
    applied: rows.map((r) => ({
      key: r.key,
      seq: r.seq,
      eventId: r.event_id,
      streamSeq: r.stream_seq === null ? null : Number(r.stream_seq),
    })),
    effects: counter.rows[0]?.n ?? Number.NaN,
  };
}

/** How the outbox's events stand: by status, and the ids of all of them. */
export async function outboxState(
  db: Queryable,
  schema: string,
): Promise<{ pending: number; delivered: number; dead: number; ids: string[] }> {
  const { rows } = await db.query<{ id: string; status: string }>(
    `SELECT id::text, status FROM "${schema}".outbox ORDER BY seq`,
  );
  const count = (status: string) => rows.filter((r) => r.status === status).length;
  return {
    pending: count('pending'),
    delivered: count('delivered'),
    dead: count('dead'),
    ids: rows.map((r) => r.id),
  };
}

/**
 * The order checks on `applied`: how many entries came at or below their key's previous seq (out
 * of order, or twice), and whether every key got exactly 1 … `perKey`.
 */
export function orderReport(applied: readonly Applied[], keys: readonly string[], perKey: number) {
  const last = new Map<string, number>();
  const seen = new Map<string, number[]>();
  let outOfOrder = 0;
  for (const a of applied) {
    if ((last.get(a.key) ?? 0) >= a.seq) outOfOrder += 1;
    last.set(a.key, a.seq);
    seen.set(a.key, [...(seen.get(a.key) ?? []), a.seq]);
  }
  const expected = Array.from({ length: perKey }, (_, i) => i + 1).join(',');
  const incompleteKeys = keys.filter((k) => (seen.get(k) ?? []).join(',') !== expected).length;
  const streamSeqs = applied.map((a) => a.streamSeq).filter((n): n is number => n !== null);
  const streamOrderBreaks = streamSeqs.filter((n, i) => i > 0 && n <= streamSeqs[i - 1]!).length;
  return { outOfOrder, incompleteKeys, streamOrderBreaks };
}

/** Polls `condition` every 20 ms until it holds; fails naming `what` after `capMs`. */
export async function eventually(
  condition: () => boolean | Promise<boolean>,
  what: string,
  capMs = 15_000,
): Promise<void> {
  const start = Date.now();
  while (!(await condition())) {
    if (Date.now() - start > capMs) throw new Error(`never happened within ${capMs} ms: ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

/** What the inbox consumer saw. */
export interface ConsumerStats {
  /** Messages handed to the handler (redeliveries included). */
  deliveries: number;
  /** Messages the inbox applied (the handler ran). */
  applied: number;
  /** Redeliveries the inbox dropped as duplicates. */
  duplicates: number;
  /** Acks "lost" on purpose after the commit (the message is nak'ed, so JetStream redelivers it). */
  lostAcks: number;
  /** The distinct Nats-Msg-Id values seen. */
  readonly ids: Set<string>;
}

/** Options of {@link startInboxConsumer}. */
export interface InboxConsumerOptions {
  readonly nc: NatsConnection;
  readonly js: JetStreamClient;
  readonly stream: string;
  readonly pool: Pool;
  readonly stores: PostgresStores;
  /** Where a message that failed 5 times goes (none should). */
  readonly deadLetterSubject: string;
  /**
   * Every `loseAckEvery`-th applied message (on its first delivery) is committed and then its ack
   * "lost": the handler throws after the commit, JetStream redelivers it, and the inbox must drop it.
   */
  readonly loseAckEvery?: number;
}

/**
 * A durable pull consumer `c` on `stream`, consumed with `jetStreamConsumer`: each message applied
 * through `stores.inbox.process` in a transaction of its own, its id the `Nats-Msg-Id` header.
 */
export async function startInboxConsumer(
  options: InboxConsumerOptions,
): Promise<{ run: JetStreamConsumer; stats: ConsumerStats; idle: () => Promise<boolean> }> {
  const { nc, js, stream, pool, stores, deadLetterSubject, loseAckEvery } = options;
  const jsm = await jetstreamManager(nc);
  await jsm.consumers.add(stream, {
    durable_name: CONSUMER,
    ack_policy: AckPolicy.Explicit,
    ack_wait: 30_000 * 1_000_000,
  });
  const stats: ConsumerStats = { deliveries: 0, applied: 0, duplicates: 0, lostAcks: 0, ids: new Set() };
  const handle = async (message: JsMsg): Promise<void> => {
    stats.deliveries += 1;
    const id = message.headers?.get('Nats-Msg-Id') ?? '';
    if (id === '') throw new Error(`message ${message.seq} has no Nats-Msg-Id`);
    stats.ids.add(id);
    const change = message.json<Change>();
    const duplicate = await inTransaction(pool, (tx) =>
      applyEvent(tx, stores, id, change, message.info.streamSequence),
    );
    if (duplicate) {
      stats.duplicates += 1;
      return;
    }
    stats.applied += 1;
    if (
      loseAckEvery !== undefined &&
      message.info.deliveryCount === 1 &&
      stats.applied % loseAckEvery === 0
    ) {
      stats.lostAcks += 1;
      throw new Error('the ack was lost after the commit');
    }
  };
  const run = jetStreamConsumer(await js.consumers.get(stream, CONSUMER), handle, {
    js,
    deadLetterSubject,
    maxDeliveries: 5,
    retryDelayMs: 100,
  });
  run.done.catch(() => {});
  onTestFinished(() => run.stop()); // on failure; a no-op once stopped
  /** True when the consumer has nothing left: no message unacked or waiting. */
  const idle = async () => {
    const info = await jsm.consumers.info(stream, CONSUMER);
    return info.num_ack_pending === 0 && info.num_pending === 0;
  };
  return { run, stats, idle };
}
