/**
 * The Redis Streams publisher of the transactional outbox: a `Publish` that appends each event the
 * relay hands it to a stream with `XADD`, a whole batch in one pipeline (one round trip).
 */
import type { Cluster, Redis } from 'ioredis';
import { offAbort, onAbort } from '../../core/abort.js';
import { StoreUnavailableError } from '../../core/errors.js';
import {
  type Check,
  optional,
  positiveInt,
  readOptions,
  required,
  type Schema,
} from '../../core/read-options.js';
import { show } from '../../core/validate.js';
import { OutboxPublishError } from '../../outbox/errors.js';
import type { OutboxMessage, Publish } from '../../outbox/store.js';
import { deadStatuses } from './deadline.js';

/**
 * Options of {@link redisStreamPublisher}. Each is checked at once: a bad value or an unknown key is
 * a `TypeError` naming the option.
 *
 * @example
 * const options: RedisStreamPublisherOptions = { stream: (m) => `events:${m.topic}`, maxLen: 100_000 };
 */
export interface RedisStreamPublisherOptions {
  /**
   * The stream every event is appended to, or a function giving each event's stream (e.g. one per
   * topic). A name is used as given (after the client's own `keyPrefix`, if any) and must not be
   * empty. A function that throws or gives anything but a non-empty string fails that event only.
   */
  readonly stream: string | ((message: OutboxMessage) => string);
  /**
   * Trims each stream to about this many entries as events are appended (`MAXLEN ~ n`): Redis
   * removes whole internal nodes only, so a stream keeps at least `maxLen` entries and may keep up
   * to a node more (`stream-node-max-entries`, default 100). A consumer that falls further behind
   * loses the oldest entries.
   * @default none: streams are never trimmed
   */
  readonly maxLen?: number | undefined;
}

/** The XADDs of one batch (on a Cluster, of one stream), sent as one pipeline. */
interface StreamPipeline {
  xadd(...args: string[]): StreamPipeline;
  exec(): Promise<Array<[Error | null, unknown]>>;
}

/** What the publisher needs of an ioredis `Redis` or `Cluster`. */
interface StreamClient {
  pipeline(): StreamPipeline;
  readonly status?: string | undefined;
  /** True for an ioredis `Cluster`, whose pipelines must keep to the keys of one node. */
  readonly isCluster?: boolean | undefined;
}

/** One event ready to send: its id and the XADD arguments. */
interface Entry {
  readonly id: string;
  readonly args: string[];
}

type StreamOf = (message: OutboxMessage) => string;

const streamOption: Check<string | StreamOf> = (name, value) => {
  if (typeof value === 'function') return value as StreamOf;
  if (typeof value !== 'string' || value === '')
    throw new TypeError(`expected "${name}" to be a non-empty string or a function, got ${show(value)}`);
  return value;
};

const schema = {
  stream: required(streamOption),
  maxLen: optional(positiveInt),
} satisfies Schema<RedisStreamPublisherOptions>;

/**
 * A `Publish` for the outbox relay that appends every event to a Redis stream:
 * `XADD <stream> [MAXLEN ~ <maxLen>] * id <event id> topic <topic> key <key or ''> payload <JSON>
 * headers <JSON>`. The XADDs of a batch go out in one pipeline, in the batch's order (so one round
 * trip per batch; on a `Cluster`, one pipeline per stream, sent together). The returned promise
 * resolves once Redis answered every XADD: that answer is the confirmation, and the relay marks the
 * events delivered only then. `NOMKSTREAM` is not used: a missing stream is created by its first
 * event, never skipped.
 *
 * **At least once.** Redis does not deduplicate XADDs (unlike JetStream's `Nats-Msg-Id`): an event
 * the relay publishes again (after a crash, a lease that ended, a batch that failed after some
 * XADDs landed) is appended again, with the same `id` field. Consumers must deduplicate on that
 * field: process each entry through the inbox, `inbox.process(client, { consumer, messageId: id },
 * handler)`, and a duplicate is recognised and skipped in the consumer's own transaction.
 *
 * **Failures.**
 * - An XADD that Redis refuses (`WRONGTYPE` when the stream's key holds another type, `OOM`, ...)
 *   fails its event only: the promise rejects with `OutboxPublishError`, whose `failures` name
 *   exactly those ids (every other event was appended). So does an event whose `stream` function
 *   throws or gives no non-empty string, or whose payload `JSON.stringify` cannot serialise
 *   (those are not sent).
 * - A connection failure (closed, reset, the client's `commandTimeout`, `maxRetriesPerRequest`)
 *   rejects the whole batch with `StoreUnavailableError` (the original as `cause`); the relay
 *   publishes it again later. While the client is `reconnecting` (or closed) the batch fails at once
 *   without queueing in ioredis's offline queue.
 * - `signal` already aborted: rejects with its reason and sends nothing. Aborted while Redis has not
 *   answered: rejects with its reason at once, but the XADDs may still land (the consumer's dedup
 *   makes that harmless). A Redis that never answers is bounded by `signal` (the relay aborts it
 *   when the lease ends) and by the client's `commandTimeout`, if set.
 *
 * Throws a `TypeError` for a client that is not an ioredis client, or for a bad option.
 *
 * @example
 * import { Redis } from 'ioredis';
 * import { redisStreamPublisher } from 'bulwark/redis';
 * const publish = redisStreamPublisher(new Redis(process.env.REDIS_URL), {
 *   stream: (message) => `events:${message.topic}`,
 *   maxLen: 1_000_000,
 * });
 * const relay = outboxRelay({ outbox: stores.outbox, publish });
 * relay.start();
 */
export function redisStreamPublisher(client: Redis | Cluster, options: RedisStreamPublisherOptions): Publish {
  const c = client as unknown as Partial<StreamClient> | null;
  if (c === null || typeof c !== 'object' || typeof c.pipeline !== 'function') {
    throw new TypeError(`expected "client" to be an ioredis Redis or Cluster client, got ${show(client)}`);
  }
  const { stream, maxLen } = readOptions('redisStreamPublisher options', options, schema);
  const redis = client as unknown as StreamClient;
  const streamOf: StreamOf = typeof stream === 'string' ? () => stream : stream;
  const trim = maxLen === undefined ? [] : ['MAXLEN', '~', String(maxLen)];
  return (messages, { signal }) => {
    if (signal.aborted) return Promise.reject(signal.reason);
    const status = redis.status;
    if (status !== undefined && deadStatuses.has(status)) {
      return Promise.reject(new StoreUnavailableError(`Redis connection is ${status}`));
    }
    const failures = new Map<string, unknown>();
    const groups = groupEntries(messages, streamOf, trim, redis.isCluster === true, failures);
    const sent = groups.map((entries) => {
      const pipeline = redis.pipeline();
      for (const entry of entries) pipeline.xadd(...entry.args);
      return pipeline.exec();
    });
    return new Promise<void>((resolve, reject) => {
      const aborted = (): void => reject(signal.reason);
      onAbort(signal, aborted);
      Promise.all(sent).then(
        (replies) => {
          offAbort(signal, aborted);
          const error = outcome(groups, replies, failures);
          if (error === undefined) resolve();
          else reject(error);
        },
        (error: unknown) => {
          offAbort(signal, aborted);
          reject(connectionFailure(error));
        },
      );
    });
  };
}

/**
 * The entries to send, in the batch's order: one group, or one per stream on a Cluster (a pipeline
 * there must keep to one node). Events that cannot be sent go to `failures` instead.
 */
function groupEntries(
  messages: readonly OutboxMessage[],
  streamOf: StreamOf,
  trim: readonly string[],
  perStream: boolean,
  failures: Map<string, unknown>,
): Entry[][] {
  const groups = new Map<string, Entry[]>();
  for (const message of messages) {
    let stream: string;
    let payload: string;
    try {
      stream = streamName(streamOf, message);
      payload = serialise(message);
    } catch (error) {
      failures.set(message.id, error);
      continue;
    }
    const fields = ['id', message.id, 'topic', message.topic, 'key', message.key ?? ''];
    fields.push('payload', payload, 'headers', JSON.stringify(message.headers));
    const group = perStream ? stream : '';
    const entry = { id: message.id, args: [stream, ...trim, '*', ...fields] };
    const entries = groups.get(group);
    if (entries === undefined) groups.set(group, [entry]);
    else entries.push(entry);
  }
  return [...groups.values()];
}

/** The stream of `message`: what the `stream` function gave, checked. */
function streamName(streamOf: StreamOf, message: OutboxMessage): string {
  const stream: unknown = streamOf(message);
  if (typeof stream !== 'string' || stream === '') {
    throw new TypeError(`expected the "stream" function to give a non-empty string, got ${show(stream)}`);
  }
  return stream;
}

/** The payload as JSON; a `TypeError` for a value JSON cannot represent (`undefined`, a function). */
function serialise(message: OutboxMessage): string {
  const json = JSON.stringify(message.payload) as string | undefined;
  if (json === undefined) {
    throw new TypeError(
      `expected the payload of event ${message.id} to be JSON, got ${show(message.payload)}`,
    );
  }
  return json;
}

/**
 * What the replies mean for the batch: undefined when every event was appended, an
 * `OutboxPublishError` naming the refused ones, or a `StoreUnavailableError` when any reply is a
 * connection failure rather than Redis's own refusal (the whole batch then counts as failed).
 */
function outcome(
  groups: readonly Entry[][],
  replies: ReadonlyArray<ReadonlyArray<readonly [Error | null, unknown]>>,
  failures: Map<string, unknown>,
): Error | undefined {
  for (const [g, entries] of groups.entries()) {
    for (const [i, entry] of entries.entries()) {
      const error = replies[g]![i]![0];
      if (error === null) continue;
      // A Redis error reply (ioredis `ReplyError`) concerns its command; anything else, the link.
      if (error.name !== 'ReplyError') return connectionFailure(error);
      failures.set(entry.id, error);
    }
  }
  return failures.size === 0 ? undefined : new OutboxPublishError(failures);
}

/** A failure of the connection (or of the pipeline as a whole) as a `StoreUnavailableError`. */
function connectionFailure(error: unknown): StoreUnavailableError {
  const message = error instanceof Error ? error.message : String(error);
  return new StoreUnavailableError(`Redis failed: ${message}`, error);
}
