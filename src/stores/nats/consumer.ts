/**
 * A JetStream pull consumer loop for outbox events: ack after the handler, redeliver on failure,
 * dead-letter after `maxDeliveries`.
 */
import type { Consumer, ConsumerMessages, JetStreamClient, JsMsg } from '@nats-io/jetstream';
import { headers as natsHeaders } from '@nats-io/transport-node';
import { neverAborted, offAbort, onAbort } from '../../core/abort.js';
import {
  nonEmptyString,
  nonNegativeNumber,
  optional,
  positiveInt,
  readOptions,
  required,
  type Schema,
  signal as signalCheck,
  withDefault,
} from '../../core/read-options.js';
import { show } from '../../core/validate.js';

/**
 * Handles one message, e.g. `inbox.process(...)` in the caller's database transaction. Resolving
 * means "done for good" (the message is acked); rejecting means "try again later".
 */
export type JetStreamHandler = (
  message: JsMsg,
  context: { readonly signal: AbortSignal },
) => void | Promise<void>;

/** Options of {@link jetStreamConsumer}. */
export interface JetStreamConsumerOptions {
  /** The JetStream client dead letters are published with (`jetstream(nc)`). */
  readonly js: Pick<JetStreamClient, 'publish'>;
  /** Where a message goes once its handler failed `maxDeliveries` times; a stream must capture it. */
  readonly deadLetterSubject: string;
  /**
   * Deliveries a message gets before it is dead-lettered: its handler fails on delivery
   * `maxDeliveries` → dead letter. Keep the consumer's own `max_deliver` above it (or unlimited).
   */
  readonly maxDeliveries: number;
  /**
   * How long JetStream waits before redelivering a message that was `nak`ed (its handler failed,
   * or it was handed back at stop). Below ~100 ms a message handed back at stop may be routed to
   * the pull request the stopped consumer left open, and wait out the `ack_wait` instead.
   * @default 1000
   */
  readonly retryDelayMs?: number | undefined;
  /**
   * Messages pulled ahead of the handler. They are handled one at a time, in order, and each
   * waits its turn: keep `maxMessages` × the handler's time well under the consumer's `ack_wait`.
   * @default 10
   */
  readonly maxMessages?: number | undefined;
  /** Aborting it stops consuming, as {@link JetStreamConsumer.stop}; handlers see it too. */
  readonly signal?: AbortSignal | undefined;
}

/** A running {@link jetStreamConsumer}. */
export interface JetStreamConsumer {
  /**
   * Stops pulling, waits for the handler in flight to settle (and its ack, nak or dead letter),
   * hands the messages pulled ahead back to JetStream (nak, redelivered after `retryDelayMs`),
   * and resolves as {@link done}.
   */
  stop(): Promise<void>;
  /**
   * Settles when consuming ended: resolves after {@link stop}, an aborted `signal` or the
   * connection's close; rejects if JetStream ended it with an error (e.g. the consumer was
   * deleted). Handle it: left alone, that rejection is an unhandled one.
   */
  readonly done: Promise<void>;
}

/** The headers a dead letter carries besides the original's own (its `Nats-*` ones dropped). */
export const deadLetterHeaders = {
  /** The last handler error, one line (`TypeError: boom`). */
  error: 'Bulwark-Error',
  /** The subject the message was published on. */
  subject: 'Bulwark-Original-Subject',
  /** The stream it was stored in, and its sequence there. */
  stream: 'Bulwark-Original-Stream',
  sequence: 'Bulwark-Original-Sequence',
  /** How many times it was delivered. */
  deliveries: 'Bulwark-Deliveries',
} as const;

const publisherCheck = (name: string, value: unknown): Pick<JetStreamClient, 'publish'> => {
  if (typeof (value as { publish?: unknown } | null | undefined)?.publish !== 'function')
    throw new TypeError(`expected "${name}" to be a JetStream client (with publish), got ${show(value)}`);
  return value as Pick<JetStreamClient, 'publish'>;
};

const schema = {
  js: required(publisherCheck),
  deadLetterSubject: required(nonEmptyString),
  maxDeliveries: required(positiveInt),
  retryDelayMs: withDefault(1_000, nonNegativeNumber),
  maxMessages: withDefault(10, positiveInt),
  signal: optional(signalCheck),
} satisfies Schema<JetStreamConsumerOptions>;

/**
 * Consumes a JetStream pull consumer with at-least-once handling that an inbox makes
 * effectively-once: each message is acked only after `handler` resolved, so a crash or a failure
 * before then gets it delivered again (and the inbox, keyed by the `Nats-Msg-Id` event id, drops
 * what was already processed).
 *
 * - Messages are handled one at a time, in the order the consumer delivers them.
 * - A handler that rejects gets the message `nak`ed with `retryDelayMs`; when that was delivery
 *   `maxDeliveries`, the message is published to `deadLetterSubject` instead (same data, the
 *   original headers but `Nats-*`, plus {@link deadLetterHeaders}; deduplicated by the original
 *   `Nats-Msg-Id`, else by stream and sequence) and then `term`ed, so it is not delivered again.
 *   JetStream has no dead-letter queue of its own.
 * - A dead letter that cannot be published leaves the message `nak`ed, to try again.
 * - A handler that rejects once `signal` aborted is not counted a failure: the message is
 *   `nak`ed for the next consumer (after `retryDelayMs`), never dead-lettered.
 * - A handler that never settles holds the message until the consumer's `ack_wait` ends and
 *   JetStream redelivers it elsewhere: bound the handler's time.
 *
 * @param consumer - a pull consumer (`js.consumers.get(stream, durable)`), with ack policy explicit
 * @throws TypeError when `consumer` has no `consume`, `handler` is not a function, or for a bad,
 *   missing or unknown option
 * @example
 * ```ts
 * import { jetstream } from '@nats-io/jetstream';
 * import { connect } from '@nats-io/transport-node';
 * import { jetStreamConsumer } from 'bulwark/nats';
 *
 * declare function handleOrder(id: string, order: unknown, signal: AbortSignal): Promise<void>;
 *
 * const js = jetstream(await connect({ servers: '127.0.0.1:4222' }));
 * const orders = jetStreamConsumer(
 *   await js.consumers.get('ORDERS', 'billing'),
 *   (message, { signal }) => handleOrder(message.headers?.get('Nats-Msg-Id') ?? '', message.json(), signal),
 *   { js, maxDeliveries: 5, deadLetterSubject: 'dead.orders' },
 * );
 * process.once('SIGTERM', () => void orders.stop());
 * await orders.done;
 * ```
 */
export function jetStreamConsumer(
  consumer: Pick<Consumer, 'consume'>,
  handler: JetStreamHandler,
  options: JetStreamConsumerOptions,
): JetStreamConsumer {
  if (typeof (consumer as { consume?: unknown } | null | undefined)?.consume !== 'function')
    throw new TypeError(
      `expected "consumer" to be a JetStream consumer (with consume), got ${show(consumer)}`,
    );
  if (typeof handler !== 'function')
    throw new TypeError(`expected "handler" to be a function, got ${show(handler)}`);
  const { js, deadLetterSubject, maxDeliveries, retryDelayMs, maxMessages, ...rest } = readOptions(
    'jetStreamConsumer options',
    options,
    schema,
  );
  const signal = rest.signal ?? neverAborted;
  let messages: ConsumerMessages | undefined;
  let stopping = false;

  const deadLetter = async (message: JsMsg, error: unknown): Promise<void> => {
    const { stream, streamSequence, deliveryCount } = message.info;
    try {
      const headers = natsHeaders();
      for (const [name, values] of message.headers ?? []) {
        if (!name.toLowerCase().startsWith('nats-')) for (const value of values) headers.append(name, value);
      }
      headers.set(deadLetterHeaders.error, oneLine(error));
      headers.set(deadLetterHeaders.subject, message.subject);
      headers.set(deadLetterHeaders.stream, stream);
      headers.set(deadLetterHeaders.sequence, String(streamSequence));
      headers.set(deadLetterHeaders.deliveries, String(deliveryCount));
      const msgID = message.headers?.get('Nats-Msg-Id') || `${stream}:${streamSequence}`;
      await js.publish(deadLetterSubject, message.data, { headers, msgID });
    } catch {
      message.nak(retryDelayMs);
      return;
    }
    // No reason: servers before 2.11 take `+TERM <reason>` for an unknown reply and redeliver.
    message.term();
  };

  // Every nak has a delay: an immediate redelivery can be routed to the pull request this consumer
  // left open on the server when it stopped, where it would wait out the whole ack_wait.
  const settle = async (message: JsMsg): Promise<void> => {
    if (stopping) return message.nak(retryDelayMs);
    try {
      await handler(message, { signal });
    } catch (error) {
      if (signal.aborted) return message.nak(retryDelayMs);
      if (message.info.deliveryCount >= maxDeliveries) return deadLetter(message, error);
      return message.nak(retryDelayMs);
    }
    message.ack();
  };

  const stop = (): Promise<void> => {
    stopping = true;
    void messages?.close();
    return done;
  };

  const run = async (): Promise<void> => {
    onAbort(signal, stop);
    try {
      messages = await consumer.consume({ max_messages: maxMessages });
      if (stopping) void messages.close();
      for await (const message of messages) await settle(message);
    } finally {
      offAbort(signal, stop);
    }
  };

  const done = signal.aborted ? Promise.resolve() : run();
  return { stop, done };
}

/** An error as one header-safe line: `Name: message`, at most 1 000 characters. */
function oneLine(error: unknown): string {
  const text = error instanceof Error ? `${error.name}: ${error.message}` : String(error);
  return text.replace(/[\r\n]+/g, ' ').slice(0, 1_000);
}
