/**
 * The broker of a multi-worker run: a JetStream stream the main process created, one durable pull
 * consumer shared by every worker (each message goes to one of them), published with `Nats-Msg-Id`
 * = the event id. As chaotic as the in-process broker (lab/broker.ts): a share of publishes is
 * refused before it reaches the server, and a share of acks is "lost" after the handler ran (the
 * handler then throws, and JetStream delivers the message again, as it does when an ack is lost).
 */
import { AckPolicy, type JsMsg, jetstream, jetstreamManager } from '@nats-io/jetstream';
import { connect } from '@nats-io/transport-node';
import { ResilienceError } from '../src/index.js';
import {
  type JetStreamConsumer,
  jetStreamConsumer,
  natsJetStreamPublisher,
} from '../src/stores/nats/index.js';
import { seededRandom } from '../src/testing/index.js';
import type { Broker, Consumer } from './broker.js';

/** The durable consumer every worker pulls from. */
const neverAborted = new AbortController().signal;

const CONSUMER = 'lab';

/** Where a run's stream lives. */
export interface NatsStream {
  readonly url: string;
  /** The stream's name; its subjects are `<stream>.>`. */
  readonly stream: string;
}

/**
 * Creates the run's stream and its shared durable consumer (main process, before the workers).
 *
 * @example
 * await createNatsStream({ url, stream: 'lab_1234_bulwark' });
 */
export async function createNatsStream({ url, stream }: NatsStream): Promise<void> {
  const nc = await connect({ servers: url, timeout: 2_000 });
  try {
    const jsm = await jetstreamManager(nc);
    await jsm.streams.add({ name: stream, subjects: [`${stream}.>`] });
    await jsm.consumers.add(stream, {
      durable_name: CONSUMER,
      ack_policy: AckPolicy.Explicit,
      ack_wait: 30_000 * 1_000_000,
    });
  } finally {
    await nc.close();
  }
}

/**
 * Messages of the run's stream not yet acked for good (waiting, or delivered and unacked), and
 * then deletes the stream when `remove` is set.
 */
export async function natsBacklog({ url, stream }: NatsStream, remove = false): Promise<number> {
  const nc = await connect({ servers: url, timeout: 2_000 });
  try {
    const jsm = await jetstreamManager(nc);
    const info = await jsm.consumers.info(stream, CONSUMER);
    if (remove) await jsm.streams.delete(stream);
    return info.num_pending + info.num_ack_pending;
  } finally {
    await nc.close();
  }
}

/** Options of {@link natsBroker}. */
export interface NatsBrokerOptions extends NatsStream {
  readonly seed: number;
  /** Share of publishes refused. @default 0.1 */
  readonly failRate?: number;
  /** Share of first deliveries whose ack is lost. @default 0.1 */
  readonly lostAckRate?: number;
}

/**
 * A worker's broker on the run's stream; `close()` stops consuming and closes the connection.
 *
 * @example
 * const broker = await natsBroker({ url, stream, seed: 7 });
 */
export async function natsBroker(options: NatsBrokerOptions): Promise<Broker & { close(): Promise<void> }> {
  const { url, stream, failRate = 0.1, lostAckRate = 0.1 } = options;
  const random = seededRandom(options.seed);
  const nc = await connect({ servers: url, timeout: 2_000 });
  const js = jetstream(nc);
  const publish = natsJetStreamPublisher(js, { subject: (message) => `${stream}.${message.topic}` });
  let consuming: JetStreamConsumer | undefined;
  let pending = 0;
  let published = 0;

  const handle = (consumer: Consumer) => async (message: JsMsg) => {
    pending++;
    try {
      const id = message.headers?.get('Nats-Msg-Id') ?? '';
      await consumer({ id, topic: message.subject.slice(stream.length + 1), payload: message.json() });
      if (message.info.deliveryCount === 1 && random() < lostAckRate) throw new Error('the ack was lost');
    } finally {
      pending--;
    }
  };

  return {
    async publish(messages) {
      if (random() < failRate)
        throw new ResilienceError('broker: publish refused, try again', {
          code: 'ERR_BROKER',
          kind: 'transient',
        });
      const createdAt = Date.now();
      const outgoing = messages.map((message) => ({
        ...message,
        key: undefined,
        headers: {},
        attempts: 0,
        createdAt,
      }));
      await publish(outgoing, { signal: neverAborted });
      published += messages.length;
    },
    subscribe(consumer) {
      void js.consumers.get(stream, CONSUMER).then(
        (pull) => {
          consuming = jetStreamConsumer(pull, handle(consumer), {
            js,
            deadLetterSubject: `${stream}.dead`,
            maxDeliveries: 50,
            retryDelayMs: 200,
          });
          consuming.done.catch(() => undefined);
        },
        (error: unknown) => console.error('lab broker: cannot consume', error),
      );
    },
    get pending() {
      return pending;
    },
    get published() {
      return published;
    },
    async close() {
      await consuming?.stop();
      await nc.close();
    },
  };
}
