/**
 * The transactional outbox: `outboxRelay` (batch 100) over `postgresStores(pool).outbox`, publishing
 * to NATS JetStream (`natsJetStreamPublisher`) and to Redis Streams (`redisStreamPublisher`).
 *
 * - **Throughput**, events per second until the broker confirmed the last one: a backlog drained
 *   (events enqueued with the relay stopped, timed from `start()`), and enqueue and relay together
 *   (4 connections enqueuing transactions of 100 events while the relay runs, timed from the first
 *   `BEGIN`); for the drain, where a batch's time goes (claim, publish until confirmed, mark
 *   delivered: the store's `claim` and `delivered` timed through a thin wrapper). There is no
 *   maintained Node outbox library to run beside, so the reference is the broker without an
 *   outbox, in the same rounds: the same payloads published straight from the client, pipelined in
 *   batches of 100 (`js.publish` with a `Nats-Msg-Id`, or one pipeline of `XADD`s with the same
 *   fields), one batch after another, for at least 500 ms. The cases run in interleaved rounds, so
 *   a host whose speed drifts (CPU steal) slows them alike; the ratios are taken per round.
 * - **Latency**, enqueue commit → publish confirmed, per event: connections each committing one
 *   event per transaction with a pause between, at two loads (sparse: the relay is idle when an
 *   event comes; busy: it rarely is). The commit time is read when `COMMIT` resolved, the
 *   confirmation time when the publisher's promise resolved (a wrapper around it). The relay woken
 *   by LISTEN/NOTIFY (the default `postgresStores(pool)`, `pollMs` 1000) vs polling only
 *   (`postgresStores(pool, { listen: false })`, `pollMs` 100), in alternating slices.
 *
 * Every event has a key of its own (one per order: per-key ordering is in force but never holds an
 * event back) and a small JSON payload, no headers. The outbox is a fresh schema in the `test`
 * database, emptied (`TRUNCATE`) before each broker's section so that both start from the same
 * table; the JetStream stream (file storage, the server's defaults) and the Redis stream keys are
 * the run's own. All are deleted after.
 */
import { randomUUID } from 'node:crypto';
import { performance } from 'node:perf_hooks';
import { setTimeout as sleep } from 'node:timers/promises';
import { jetstream, jetstreamManager } from '@nats-io/jetstream';
import { connect } from '@nats-io/transport-node';
import {
  isOutboxPublishError,
  type OutboxEvent,
  type OutboxMessage,
  type OutboxRelay,
  type OutboxStore,
  outboxRelay,
  type Publish,
} from 'bulwark';
import { natsJetStreamPublisher } from 'bulwark/nats';
import { type PostgresStores, postgresStores } from 'bulwark/postgres';
import { redisStreamPublisher } from 'bulwark/redis';
import type pg from 'pg';
import { backendSections, benchPostgres, benchRedis } from './servers.js';
import { machine, table } from './support.js';

const run = Date.now().toString(36);
const BATCH = 100;
const ROUNDS = 3;
/** Events per throughput measurement. */
const EVENTS = 4_000;
/** The shortest raw measurement: it repeats its `EVENTS` until it has run this long. */
const RAW_MIN_MS = 500;
/** Connections enqueuing at once, for throughput. */
const PRODUCERS = 4;
const POLL_MS = 100;
const LATENCY_ROUNDS = 2;
const LATENCY_SLICE_MS = 1_250;
/** The latency loads: connections committing one event per transaction, and each one's pause between. */
const LOADS = [
  { name: 'sparse', producers: 1, gapMs: 10 },
  { name: 'busy', producers: 4, gapMs: 5 },
] as const;
const TOPIC = `bench.outbox.${run}.orders`;

const perSecond = (value: number) => `${(value / 1_000).toFixed(1)} k/s`;
const ms = (value: number) => `${value.toFixed(1)} ms`;
const median = (values: readonly number[]) => [...values].sort((a, b) => a - b)[values.length >> 1]!;
const every = (values: readonly number[], format: (value: number) => string) => values.map(format).join(', ');

let sequence = 0;
const payload = (n: number) => ({
  orderId: `order-${run}-${n}`,
  amountCents: 1_999 + (n % 100),
  currency: 'EUR',
  lines: [{ sku: `sku-${n % 50}`, quantity: 1 + (n % 3) }],
});
/** `count` fresh events, each with a key (an order) of its own. */
const events = (count: number): OutboxEvent[] =>
  Array.from({ length: count }, () => {
    const n = sequence++;
    return { topic: TOPIC, key: `order-${run}-${n}`, payload: payload(n) };
  });

/**
 * What the relay did: when the broker confirmed each event (the publisher's promise resolved; the
 * events an `OutboxPublishError` does not name count as confirmed, as for the relay), and the time
 * spent in each step of a batch.
 */
class Tracker {
  readonly at = new Map<string, number>();
  calls = 0;
  claimMs = 0;
  publishMs = 0;
  deliveredMs = 0;
  private waiter: { count: number; resolve: () => void } | undefined;

  /** `publish`, recording confirmations and its time. */
  publish(publish: Publish): Publish {
    return async (messages, options) => {
      const start = performance.now();
      try {
        await publish(messages, options);
        this.confirm(messages, undefined, start);
      } catch (error) {
        if (isOutboxPublishError(error)) this.confirm(messages, error.failures, start);
        throw error;
      }
    };
  }

  /** `outbox`, timing its `claim` and `delivered` (one statement each). */
  outbox(outbox: OutboxStore): OutboxStore {
    const timed = async <T>(work: Promise<T>, add: (ms: number) => void): Promise<T> => {
      const start = performance.now();
      try {
        return await work;
      } finally {
        add(performance.now() - start);
      }
    };
    const store: OutboxStore = {
      timeoutMs: outbox.timeoutMs,
      claim: (owner, limit, leaseMs) =>
        timed(outbox.claim(owner, limit, leaseMs), (ms) => {
          this.claimMs += ms;
        }),
      delivered: (owner, ids) =>
        timed(outbox.delivered(owner, ids), (ms) => {
          this.deliveredMs += ms;
        }),
      failed: (owner, failures) => outbox.failed(owner, failures),
      release: (owner) => outbox.release(owner),
    };
    const watch = outbox.watch;
    return watch === undefined ? store : { ...store, watch: (wake) => watch(wake) };
  }

  private confirm(
    messages: readonly OutboxMessage[],
    failed: ReadonlyMap<string, unknown> | undefined,
    start: number,
  ): void {
    const now = performance.now();
    this.calls += 1;
    this.publishMs += now - start;
    for (const m of messages) if (failed === undefined || !failed.has(m.id)) this.at.set(m.id, now);
    if (this.waiter !== undefined && this.at.size >= this.waiter.count) this.waiter.resolve();
  }

  reset(): void {
    this.at.clear();
    this.calls = 0;
    this.claimMs = 0;
    this.publishMs = 0;
    this.deliveredMs = 0;
  }

  /** Resolves once `count` distinct events were confirmed since the last reset. */
  async until(count: number, timeoutMs = 30_000): Promise<void> {
    if (this.at.size >= count) return;
    const timer = new AbortController();
    try {
      await Promise.race([
        new Promise<void>((resolve) => {
          this.waiter = { count, resolve };
        }),
        sleep(timeoutMs, undefined, { signal: timer.signal }).then(() => {
          throw new Error(`only ${this.at.size} of ${count} events confirmed after ${timeoutMs} ms`);
        }),
      ]);
    } finally {
      this.waiter = undefined;
      timer.abort();
    }
  }
}

/** The outbox in PostgreSQL: one store set that LISTENs (the default), one that does not. */
interface Outbox {
  readonly pool: pg.Pool;
  readonly listening: PostgresStores;
  readonly polling: PostgresStores;
  /** Deletes every event (as if the reaper had run): each broker's section starts on an empty table. */
  empty(): Promise<void>;
  close(): Promise<void>;
}

async function openOutbox(): Promise<Outbox> {
  const postgres = benchPostgres();
  const { pool } = postgres;
  const schema = `bench_outbox_${run}`;
  const listening = postgresStores(pool, { schema });
  const polling = postgresStores(pool, { schema, listen: false });
  await listening.migrate();
  return {
    pool,
    listening,
    polling,
    empty: async () => {
      await pool.query(`TRUNCATE ${schema}.outbox`);
    },
    close: async () => {
      await listening.close();
      await polling.close();
      await pool.query(`DROP SCHEMA ${schema} CASCADE`);
      await postgres.close();
    },
  };
}

/** Enqueues `batch` in one transaction on a pool client; resolves its ids once `COMMIT` resolved. */
async function enqueue(outbox: Outbox, batch: readonly OutboxEvent[]): Promise<string[]> {
  const client = await outbox.pool.connect();
  try {
    await client.query('BEGIN');
    const ids = await outbox.listening.outbox.enqueue(client, batch);
    await client.query('COMMIT');
    return ids;
  } catch (error) {
    await client.query('ROLLBACK');
    throw error;
  } finally {
    client.release();
  }
}

/** Enqueues `count` events in transactions of 100, `PRODUCERS` at a time. */
async function enqueueMany(outbox: Outbox, count: number): Promise<void> {
  let left = count / BATCH;
  await Promise.all(
    Array.from({ length: PRODUCERS }, async () => {
      while (left-- > 0) await enqueue(outbox, events(BATCH));
    }),
  );
}

/** A broker: the outbox's publisher for it, and the same payloads published without an outbox. */
interface Broker {
  readonly publish: Publish;
  readonly rawLabel: string;
  /** Publishes `count` events straight from the client, pipelined in batches of 100, one after another. */
  raw(count: number): Promise<void>;
  close(): Promise<void>;
}

async function openNats(): Promise<Broker> {
  const nc = await connect({ servers: process.env.NATS_URL || '127.0.0.1:4222', timeout: 1_000 });
  const stream = `bench_outbox_${run}`;
  try {
    const jsm = await jetstreamManager(nc);
    await jsm.streams.add({ name: stream, subjects: [`bench.outbox.${run}.>`] });
  } catch (error) {
    await nc.close();
    throw error;
  }
  const js = jetstream(nc);
  const encoder = new TextEncoder();
  const rawSubject = `bench.outbox.${run}.raw`;
  return {
    publish: natsJetStreamPublisher(js),
    rawLabel: '`js.publish` with a `Nats-Msg-Id`',
    raw: async (count) => {
      for (let first = 0; first < count; first += BATCH) {
        await Promise.all(
          events(BATCH).map((event) =>
            js.publish(rawSubject, encoder.encode(JSON.stringify(event.payload)), { msgID: randomUUID() }),
          ),
        );
      }
    },
    close: async () => {
      try {
        await (await jetstreamManager(nc)).streams.delete(stream);
      } finally {
        await nc.close();
      }
    },
  };
}

async function openRedis(): Promise<Broker> {
  const prefix = `bench:outbox:${run}:`;
  const redis = await benchRedis(prefix);
  const { client } = redis;
  const rawStream = `${prefix}raw`;
  return {
    publish: redisStreamPublisher(client, { stream: `${prefix}events` }),
    rawLabel: 'a pipeline of `XADD`s with the same fields',
    raw: async (count) => {
      for (let first = 0; first < count; first += BATCH) {
        const pipeline = client.pipeline();
        for (const event of events(BATCH)) {
          const fields = ['id', randomUUID(), 'topic', event.topic, 'key', event.key!];
          pipeline.xadd(rawStream, '*', ...fields, 'payload', JSON.stringify(event.payload), 'headers', '{}');
        }
        await pipeline.exec();
      }
    },
    close: () => redis.close(),
  };
}

/** The relays of one broker: one on the LISTENing store set (default options), one polling only. */
interface Relays {
  readonly tracker: Tracker;
  readonly listening: OutboxRelay;
  readonly polling: OutboxRelay;
  readonly problems: string[];
}

function relays(outbox: Outbox, broker: Broker): Relays {
  const tracker = new Tracker();
  const problems: string[] = [];
  const common = {
    publish: tracker.publish(broker.publish),
    batchSize: BATCH,
    onPublishFailed: ({ error }: { error: unknown }) => problems.push(`publish failed: ${String(error)}`),
    onStoreError: ({ error }: { error: unknown }) => problems.push(`outbox failed: ${String(error)}`),
  };
  return {
    tracker,
    listening: outboxRelay({ ...common, outbox: tracker.outbox(outbox.listening.outbox) }),
    polling: outboxRelay({ ...common, outbox: tracker.outbox(outbox.polling.outbox), pollMs: POLL_MS }),
    problems,
  };
}

interface ThroughputRound {
  readonly raw: number;
  readonly enqueueOnly: number;
  readonly drain: number;
  readonly drainCalls: number;
  /** Per batch of the drain, in ms: claim, publish until confirmed, mark delivered, in all. */
  readonly claim: number;
  readonly publish: number;
  readonly delivered: number;
  readonly batch: number;
  readonly live: number;
  readonly liveCalls: number;
}

/** One round: raw, then a backlog enqueued and drained, then enqueue and relay together. */
async function throughputRound(outbox: Outbox, broker: Broker, r: Relays): Promise<ThroughputRound> {
  const { tracker, listening: relay } = r;
  // The raw reference repeats until it has run for RAW_MIN_MS (4,000 XADDs take ~50 ms).
  let start = performance.now();
  let published = 0;
  do {
    await broker.raw(EVENTS);
    published += EVENTS;
  } while (performance.now() - start < RAW_MIN_MS);
  const raw = published / ((performance.now() - start) / 1_000);

  start = performance.now();
  await enqueueMany(outbox, EVENTS);
  const enqueueOnly = EVENTS / ((performance.now() - start) / 1_000);
  tracker.reset();
  start = performance.now();
  relay.start();
  await tracker.until(EVENTS);
  const elapsed = performance.now() - start;
  const drainCalls = tracker.calls;
  // The claims counted are the batches' own (the relay claims again only after a batch is marked).
  const steps = { claim: tracker.claimMs, publish: tracker.publishMs, delivered: 0 };
  await relay.stop();
  steps.delivered = tracker.deliveredMs;

  relay.start();
  await sleep(50);
  tracker.reset();
  start = performance.now();
  await enqueueMany(outbox, EVENTS);
  await tracker.until(EVENTS);
  const live = EVENTS / ((performance.now() - start) / 1_000);
  const liveCalls = tracker.calls;
  await relay.stop();
  return {
    raw,
    enqueueOnly,
    drain: EVENTS / (elapsed / 1_000),
    drainCalls,
    claim: steps.claim / drainCalls,
    publish: steps.publish / drainCalls,
    delivered: steps.delivered / drainCalls,
    batch: elapsed / drainCalls,
    live,
    liveCalls,
  };
}

/**
 * One latency slice on `relay`: after a warm-up event, `producers` connections commit one event per
 * transaction, `gapMs` apart, for `LATENCY_SLICE_MS`; resolves each event's commit → confirmation
 * time, and the publish calls it took.
 */
async function latencySlice(
  outbox: Outbox,
  relay: OutboxRelay,
  tracker: Tracker,
  load: (typeof LOADS)[number],
) {
  relay.start();
  tracker.reset();
  await enqueue(outbox, events(1));
  await tracker.until(1);
  tracker.reset();
  const committed = new Map<string, number>();
  const end = performance.now() + LATENCY_SLICE_MS;
  await Promise.all(
    Array.from({ length: load.producers }, async () => {
      while (performance.now() < end) {
        await sleep(load.gapMs);
        const [id] = await enqueue(outbox, events(1));
        committed.set(id!, performance.now());
      }
    }),
  );
  await tracker.until(committed.size);
  await relay.stop();
  const latencies = [...committed].map(([id, at]) => tracker.at.get(id)! - at);
  return { latencies, calls: tracker.calls };
}

async function brokerReport(outbox: Outbox, broker: Broker): Promise<string> {
  await outbox.empty();
  const r = relays(outbox, broker);
  // Warm-up: JIT, connections, the LISTEN connection, the stream's first writes.
  await broker.raw(1_000);
  await enqueueMany(outbox, 1_000);
  r.listening.start();
  await r.tracker.until(1_000);
  await r.listening.stop();

  const rounds: ThroughputRound[] = [];
  for (let round = 0; round < ROUNDS; round++) rounds.push(await throughputRound(outbox, broker, r));

  const modes = ['listening', 'polling'] as const;
  const latencies = LOADS.map(() => modes.map(() => ({ samples: [] as number[], calls: 0 })));
  for (let round = 0; round < LATENCY_ROUNDS; round++) {
    for (const [l, load] of LOADS.entries()) {
      for (const [m, mode] of modes.entries()) {
        const slice = await latencySlice(outbox, r[mode], r.tracker, load);
        latencies[l]![m]!.samples.push(...slice.latencies);
        latencies[l]![m]!.calls += slice.calls;
      }
    }
  }

  const pick = (key: keyof ThroughputRound) => rounds.map((round) => round[key]);
  const ratio = (key: 'drain' | 'live') => {
    const ratios = rounds.map((round) => round[key] / round.raw);
    return `${median(ratios).toFixed(2)} (${every(ratios, (v) => v.toFixed(2))})`;
  };
  const rate = (key: 'raw' | 'drain' | 'live' | 'enqueueOnly') => [
    perSecond(median(pick(key))),
    every(pick(key), perSecond),
  ];
  const fill = (key: 'drainCalls' | 'liveCalls') => (EVENTS / median(pick(key))).toFixed(1);
  const throughput = table(
    [
      'case',
      'events/s, median',
      `every round (${ROUNDS})`,
      'outbox ÷ raw, median (every round)',
      'events per publish call',
    ],
    [
      [`raw: ${broker.rawLabel}, batches of 100`, ...rate('raw'), '—', '100'],
      ['outbox relay, backlog drained (relay alone)', ...rate('drain'), ratio('drain'), fill('drainCalls')],
      [
        `outbox, enqueue + relay together (${PRODUCERS} connections, transactions of 100)`,
        ...rate('live'),
        ratio('live'),
        fill('liveCalls'),
      ],
      [
        `enqueue alone (${PRODUCERS} connections, transactions of 100; no relay)`,
        ...rate('enqueueOnly'),
        '—',
        '—',
      ],
    ],
  );
  const steps = table(
    [
      'drain, per batch of 100 (median of rounds)',
      'claim',
      'publish until confirmed',
      'mark delivered',
      'in all',
    ],
    [
      [
        'time',
        ms(median(pick('claim'))),
        ms(median(pick('publish'))),
        ms(median(pick('delivered'))),
        ms(median(pick('batch'))),
      ],
    ],
  );

  const quantile = (sorted: readonly number[], q: number) =>
    sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))]!;
  const seconds = (LATENCY_ROUNDS * LATENCY_SLICE_MS) / 1_000;
  const latencyRows = LOADS.flatMap((load, l) =>
    modes.map((mode, m) => {
      const { samples, calls } = latencies[l]![m]!;
      const sorted = [...samples].sort((a, b) => a - b);
      return [
        `${load.name}: ${load.producers} × (commit 1 event, wait ${load.gapMs} ms)`,
        mode === 'listening'
          ? 'LISTEN/NOTIFY (default, `pollMs` 1000)'
          : `polling only (\`listen: false\`, \`pollMs\` ${POLL_MS})`,
        `${sorted.length} (${(sorted.length / seconds).toFixed(0)}/s)`,
        ms(quantile(sorted, 0.5)),
        ms(quantile(sorted, 0.99)),
        ms(sorted[sorted.length - 1]!),
        (sorted.length / calls).toFixed(1),
      ];
    }),
  );
  const latency = table(
    [
      'load',
      'relay woken by',
      'events (rate)',
      'p50 commit → confirmed',
      'p99',
      'max',
      'events per publish call',
    ],
    latencyRows,
  );
  const problems =
    r.problems.length === 0
      ? 'No publish or outbox failures.'
      : `${r.problems.length} failures: ${r.problems.slice(0, 3).join('; ')}`;
  return `${throughput}\n\n${steps}\n\n${latency}\n\n${problems}`;
}

export default async function outboxBench(): Promise<string> {
  const sections = await backendSections([['Outbox on PostgreSQL', openOutbox]], async (outbox) => {
    const brokers = await backendSections(
      [
        ['NATS JetStream', openNats],
        ['Redis Streams', openRedis],
      ],
      (broker) => brokerReport(outbox, broker),
    );
    return brokers.join('\n\n');
  });
  const report = `### Transactional outbox: relay throughput and latency (batch ${BATCH})\n\n${machine()}\n\n${sections.join('\n\n')}\n`;
  console.log(report);
  return report;
}
