/** The outbox's NATS JetStream publisher: one `js.publish` per event, pipelined, deduplicated by id. */
import type { JetStreamClient, JetStreamPublishOptions, PubAck } from '@nats-io/jetstream';
import { headers as natsHeaders } from '@nats-io/transport-node';
import { offAbort, onAbort } from '../../core/abort.js';
import { optional, positiveNumber, readOptions, type Schema } from '../../core/read-options.js';
import { show } from '../../core/validate.js';
import { OutboxPublishError } from '../../outbox/errors.js';
import type { OutboxMessage, Publish } from '../../outbox/store.js';

/** Options of {@link natsJetStreamPublisher}. */
export interface NatsJetStreamPublisherOptions {
  /**
   * The subject each event is published on: one subject for all, or a function of the event
   * (`(message) => \`orders.${message.topic}\``). A stream must capture it.
   * @default the event's `topic`
   */
  readonly subject?: string | ((message: OutboxMessage) => string) | undefined;
  /**
   * How long to wait for each event's PubAck, in milliseconds; past it that event fails.
   * @default the client's timeout (`jetstream(nc, { timeout })`, 5 000 unless set)
   */
  readonly timeoutMs?: number | undefined;
}

const subjectOption = (name: string, value: unknown): NatsJetStreamPublisherOptions['subject'] => {
  if (typeof value === 'function' || (typeof value === 'string' && value !== ''))
    return value as NatsJetStreamPublisherOptions['subject'];
  throw new TypeError(`expected "${name}" to be a non-empty string or a function, got ${show(value)}`);
};

const schema = {
  subject: optional(subjectOption),
  timeoutMs: optional(positiveNumber),
} satisfies Schema<NatsJetStreamPublisherOptions>;

const encoder = new TextEncoder();

/**
 * A {@link Publish} function for the outbox relay that publishes each event to NATS JetStream and
 * resolves once JetStream stored every one (its PubAck came back).
 *
 * - **Payload and headers.** The body is the event's `payload` as JSON (UTF-8); the event's
 *   `headers` become NATS headers; `Nats-Msg-Id` is the event's `id`.
 * - **Duplicates.** A relay that crashed between publishing and marking delivered publishes the
 *   event again with the same id, and JetStream drops it (the PubAck says `duplicate: true`).
 *   JetStream remembers ids only for the stream's `duplicate_window` (2 minutes by default; set
 *   it on the stream, in nanoseconds): a republish later than that is stored twice. What makes a
 *   consumer safe beyond the window is the inbox (dedup by event id in the consumer's own
 *   transaction), not the broker.
 * - **Pipelined.** Every event of the batch is in flight at once; one connection keeps them in
 *   batch order on the wire, so a stream stores events of one subject in that order.
 *
 * How it fails: if some events were not confirmed (no stream captures the subject, a timeout, a
 * refused header or payload), it rejects with an `OutboxPublishError` whose `failures` name only
 * those events (all of them if none was confirmed); the relay marks the others delivered. An
 * aborted `signal` rejects at once with `signal.reason`; an abort while PubAcks are pending stops
 * waiting for them (the relay publishes the batch again later; ids deduplicate it).
 *
 * @param js - a JetStream client (`jetstream(nc)` from `@nats-io/jetstream`): anything with its
 *   `publish`
 * @throws TypeError when `js` has no `publish` method, or for a bad or unknown option
 * @example
 * ```ts
 * import { jetstream } from '@nats-io/jetstream';
 * import { connect } from '@nats-io/transport-node';
 * import { natsJetStreamPublisher } from 'bulwark/nats';
 *
 * const nc = await connect({ servers: '127.0.0.1:4222' });
 * const publish = natsJetStreamPublisher(jetstream(nc), { timeoutMs: 2_000 });
 * ```
 */
export function natsJetStreamPublisher(
  js: Pick<JetStreamClient, 'publish'>,
  options?: NatsJetStreamPublisherOptions,
): Publish {
  if (typeof (js as { publish?: unknown } | null | undefined)?.publish !== 'function')
    throw new TypeError(`expected "js" to be a JetStream client (with publish), got ${show(js)}`);
  const { subject, timeoutMs } = readOptions('natsJetStreamPublisher options', options, schema);
  const subjectOf =
    typeof subject === 'function' ? subject : (message: OutboxMessage) => subject ?? message.topic;

  const publishOne = async (message: OutboxMessage): Promise<PubAck> => {
    const body = JSON.stringify(message.payload) as string | undefined;
    if (body === undefined) throw new TypeError(`the payload of event ${message.id} is not JSON`);
    const options: Partial<JetStreamPublishOptions> = { msgID: message.id };
    const entries = Object.entries(message.headers);
    if (entries.length > 0) {
      const headers = natsHeaders();
      for (const [name, value] of entries) headers.set(name, value);
      options.headers = headers;
    }
    if (timeoutMs !== undefined) options.timeout = timeoutMs;
    const subjectName = subjectOf(message);
    try {
      return await js.publish(subjectName, encoder.encode(body), options);
    } catch (error) {
      // nats.js reports "no responders" (no stream captures the subject) as JetStream not being
      // enabled: a dead letter should say what is wrong.
      if ((error as Error | undefined)?.name === 'JetStreamNotEnabled')
        throw new Error(`no JetStream stream captures subject "${subjectName}" (no responders)`, {
          cause: error,
        });
      throw error;
    }
  };

  return async (messages, { signal }) => {
    signal.throwIfAborted();
    const settled = await untilAborted(Promise.allSettled(messages.map(publishOne)), signal);
    const failures = new Map<string, unknown>();
    settled.forEach((outcome, index) => {
      if (outcome.status === 'rejected') failures.set(messages[index]!.id, outcome.reason);
    });
    if (failures.size > 0) throw new OutboxPublishError(failures);
  };
}

/** `work`, or a rejection with `signal.reason` as soon as `signal` aborts. */
function untilAborted<T>(work: Promise<T>, signal: AbortSignal): Promise<T> {
  return new Promise<T>((resolve, reject) => {
    const aborted = (): void => reject(signal.reason);
    onAbort(signal, aborted);
    work.then(resolve, reject).finally(() => offAbort(signal, aborted));
  });
}
