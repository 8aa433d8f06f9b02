/**
 * `bulwark/nats`: the transactional outbox on NATS JetStream, both ends.
 *
 * - {@link natsJetStreamPublisher} is the outbox relay's `Publish`: each event published with
 *   `Nats-Msg-Id` = its id and confirmed by its PubAck, so JetStream drops a republished event
 *   within the stream's `duplicate_window`.
 * - {@link jetStreamConsumer} runs a pull consumer for the receiving side: ack only after the
 *   handler (the inbox transaction) resolved, `nak` with a delay on failure, and a dead-letter
 *   subject after `maxDeliveries`.
 *
 * Needs `@nats-io/jetstream` and `@nats-io/transport-node` (optional peer dependencies), v3.
 *
 * @example
 * ```ts
 * import { jetstream } from '@nats-io/jetstream';
 * import { connect } from '@nats-io/transport-node';
 * import { natsJetStreamPublisher } from 'bulwark/nats';
 *
 * const js = jetstream(await connect({ servers: '127.0.0.1:4222' }));
 * const publish = natsJetStreamPublisher(js);
 * ```
 *
 * @module
 */
export {
  deadLetterHeaders,
  type JetStreamConsumer,
  type JetStreamConsumerOptions,
  type JetStreamHandler,
  jetStreamConsumer,
} from './consumer.js';
export { type NatsJetStreamPublisherOptions, natsJetStreamPublisher } from './publisher.js';
