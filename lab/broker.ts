/**
 * The in-process message broker between a build's payments and its event consumer: at least once
 * and chaotic on a seed (some publishes fail, some messages are delivered twice), as real brokers
 * are on a bad day.
 */
import { type Clock, ResilienceError, systemClock } from '../src/index.js';
import { seededRandom } from '../src/testing/index.js';

/** A message as the broker carries it. */
export interface Message {
  /** The producer's id of the event: stable across redeliveries. */
  readonly id: string;
  readonly topic: string;
  readonly payload: unknown;
}

/** Handles one delivery; a rejection makes the broker deliver the message again later. */
export type Consumer = (message: Message) => Promise<void>;

/** Options of {@link createBroker}. */
export interface BrokerOptions {
  readonly seed: number;
  /** Share of publishes refused (a transient error: nothing was stored). @default 0.1 */
  readonly failRate?: number;
  /** Share of messages delivered twice. @default 0.1 */
  readonly duplicateRate?: number;
  readonly clock?: Clock;
}

/** A broker with one subscriber. */
export interface Broker {
  /** Stores the messages and resolves once stored (the broker's confirmation), or rejects: none stored. */
  publish(messages: readonly Message[]): Promise<void>;
  subscribe(consumer: Consumer): void;
  /** Deliveries not yet handled. */
  readonly pending: number;
  /** Messages stored (confirmed publishes). */
  readonly published: number;
}

/**
 * A broker delivering each message to the subscriber after the publish confirmed, redelivering
 * after a failure (every 50 ms, up to 100 times).
 *
 * @example
 * const broker = createBroker({ seed: 7 });
 * broker.subscribe(async (message) => notify(message));
 * await broker.publish([{ id: 'e-1', topic: 'payment.succeeded', payload: {} }]);
 */
export function createBroker(options: BrokerOptions): Broker {
  const { seed, failRate = 0.1, duplicateRate = 0.1, clock = systemClock } = options;
  const random = seededRandom(seed);
  let consumer: Consumer | undefined;
  let pending = 0;
  let published = 0;

  // A message counts as pending from its publish until the consumer handled it (or was given up on).
  const deliver = (message: Message, attempt: number): void => {
    if (attempt === 1) pending++;
    clock.setTimer(
      () => {
        const handled =
          consumer === undefined ? Promise.reject(new Error('no subscriber')) : consumer(message);
        handled.then(
          () => pending--,
          () => {
            if (attempt < 100) deliver(message, attempt + 1);
            else pending--;
          },
        );
      },
      attempt === 1 ? 0 : 50,
    );
  };

  return {
    async publish(messages) {
      if (random() < failRate) {
        throw new ResilienceError('broker: publish refused, try again', {
          code: 'ERR_BROKER',
          kind: 'transient',
        });
      }
      for (const message of messages) {
        published++;
        deliver(message, 1);
        if (random() < duplicateRate) deliver(message, 1);
      }
    },
    subscribe(next) {
      consumer = next;
    },
    get pending() {
      return pending;
    },
    get published() {
      return published;
    },
  };
}
