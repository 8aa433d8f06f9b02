/**
 * natsJetStreamPublisher against the real NATS (JetStream) at NATS_URL: every event of a batch
 * stored in order with its id as Nats-Msg-Id, a republished id dropped by JetStream, per-event
 * failures named in an OutboxPublishError, and the signal honoured.
 */
import { randomUUID } from 'node:crypto';
import { getEventListeners } from 'node:events';
import { type JetStreamClient, jetstream, type PubAck } from '@nats-io/jetstream';
import { describe, expect, it } from 'vitest';
import { OutboxPublishError } from '../../src/outbox/errors.js';
import type { OutboxMessage } from '../../src/outbox/store.js';
import { natsJetStreamPublisher } from '../../src/stores/nats/index.js';
import { deferred } from '../support/deferred.js';
import { useNats } from '../support/services.js';

const nats = await useNats();

const event = (topic: string, payload: unknown, headers: Record<string, string> = {}): OutboxMessage => ({
  id: randomUUID(),
  topic,
  key: undefined,
  payload,
  headers,
  attempts: 0,
  createdAt: Date.now(),
});

const live = { signal: new AbortController().signal };

/** Every message of `stream`, in stream order (an ordered consumer from the first). */
async function stored(js: JetStreamClient, stream: string, count: number) {
  const messages = await (await js.consumers.get(stream)).fetch({ max_messages: count, expires: 2_000 });
  const found = [];
  for await (const message of messages) {
    found.push({
      id: message.headers?.get('Nats-Msg-Id'),
      subject: message.subject,
      payload: message.json<unknown>(),
      trace: message.headers?.get('traceparent'),
    });
    if (found.length === count) break;
  }
  return found;
}

nats.describe('natsJetStreamPublisher on JetStream', () => {
  it('stores a batch of 100, in batch order, each with its id, payload and headers', async () => {
    const js = jetstream(await nats.connect());
    const { config } = await nats.addStream('events');
    const batch = Array.from({ length: 100 }, (_, i) =>
      event(nats.subject('events', i % 2 === 0 ? 'even' : 'odd'), { n: i }, { traceparent: `t-${i}` }),
    );
    await natsJetStreamPublisher(js)(batch, live);
    expect(await stored(js, config.name, 100)).toEqual(
      batch.map((m, i) => ({ id: m.id, subject: m.topic, payload: { n: i }, trace: `t-${i}` })),
    );
  });

  it('publishes on the subject option (a string or a function of the event) instead of the topic', async () => {
    const js = jetstream(await nats.connect());
    const { config } = await nats.addStream('orders');
    const fixed = natsJetStreamPublisher(js, { subject: nats.subject('orders', 'all') });
    const computed = natsJetStreamPublisher(js, { subject: (m) => nats.subject('orders', m.topic) });
    const [a, b] = [event('created', 1), event('paid', 2)];
    await fixed([a], live);
    await computed([b], live);
    expect((await stored(js, config.name, 2)).map((m) => m.subject)).toEqual([
      nats.subject('orders', 'all'),
      nats.subject('orders', 'paid'),
    ]);
  });

  it('a republished id is stored once: JetStream acks it as a duplicate within duplicate_window', async () => {
    const nc = await nats.connect();
    const js = jetstream(nc);
    const { config } = await nats.addStream('events', { duplicate_window: 60_000 * 1_000_000 });
    const acks: PubAck[] = [];
    const recording = {
      publish: (...args: Parameters<JetStreamClient['publish']>) =>
        js.publish(...args).then((ack) => {
          acks.push(ack);
          return ack;
        }),
    };
    const publish = natsJetStreamPublisher(recording);
    const message = event(nats.subject('events', 'created'), { n: 1 });
    await publish([message], live);
    await publish([{ ...message, attempts: 1 }], live);
    expect(acks.map((ack) => [ack.seq, ack.duplicate])).toEqual([
      [1, false],
      [1, true],
    ]);
    const jsm = await js.jetstreamManager();
    expect((await jsm.streams.info(config.name)).state.messages).toBe(1);
  });

  it('names exactly the events that were not confirmed in an OutboxPublishError; the rest are stored', async () => {
    const js = jetstream(await nats.connect());
    const { config } = await nats.addStream('events');
    const batch = [
      event(nats.subject('events', 'a'), 1),
      event(nats.subject('nowhere', 'b'), 2),
      event(nats.subject('events', 'c'), 3),
      event(nats.subject('events', 'd'), undefined),
      event(nats.subject('events', 'e'), 5, { 'bad name': 'x' }),
      event(nats.subject('nowhere', 'f'), 6),
      event(nats.subject('events', 'g'), 7),
    ];
    const error = await natsJetStreamPublisher(js, { timeoutMs: 2_000 })(batch, live).catch(
      (e: unknown) => e,
    );
    expect(error).toBeInstanceOf(OutboxPublishError);
    const failed = [batch[1]!, batch[3]!, batch[4]!, batch[5]!].map((m) => m.id);
    expect([...(error as OutboxPublishError).failures.keys()].sort()).toEqual(failed.sort());
    expect((error as OutboxPublishError).cause).toBeInstanceOf(Error);
    const nowhere = (error as OutboxPublishError).failures.get(batch[1]!.id) as Error;
    expect(nowhere.message).toBe(`no JetStream stream captures subject "${batch[1]!.topic}" (no responders)`);
    expect((nowhere.cause as Error).name).toBe('JetStreamNotEnabled');
    expect((await stored(js, config.name, 3)).map((m) => m.payload)).toEqual([1, 3, 7]);
  });

  it('rejects with an OutboxPublishError naming every event when none is confirmed', async () => {
    const js = jetstream(await nats.connect());
    const batch = [event(nats.subject('nowhere', 'a'), 1), event(nats.subject('nowhere', 'b'), 2)];
    const error = await natsJetStreamPublisher(js)(batch, live).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(OutboxPublishError);
    expect([...(error as OutboxPublishError).failures.keys()]).toEqual(batch.map((m) => m.id));
  });

  it('an aborted signal rejects at once with its reason and publishes nothing', async () => {
    const js = jetstream(await nats.connect());
    const { config } = await nats.addStream('events');
    const reason = new Error('relay stopping');
    const publish = natsJetStreamPublisher(js);
    await expect(
      publish([event(nats.subject('events', 'a'), 1)], { signal: AbortSignal.abort(reason) }),
    ).rejects.toBe(reason);
    const jsm = await js.jetstreamManager();
    expect((await jsm.streams.info(config.name)).state.messages).toBe(0);
  });
});

describe('natsJetStreamPublisher without a server', () => {
  it('stops waiting for PubAcks when the signal aborts mid-flight, all of them sent at once', async () => {
    const pending = deferred<PubAck>();
    const sent: string[] = [];
    const publish = natsJetStreamPublisher({
      publish: (subject) => {
        sent.push(subject);
        return pending.promise;
      },
    });
    const controller = new AbortController();
    const result = publish([event('a', 1), event('b', 2)], { signal: controller.signal });
    await Promise.resolve();
    expect(sent).toEqual(['a', 'b']);
    const reason = new Error('lease lost');
    controller.abort(reason);
    await expect(result).rejects.toBe(reason);
    pending.reject(new Error('too late'));
  });

  it('passes the timeout and the id to every publish', async () => {
    const calls: unknown[] = [];
    const publish = natsJetStreamPublisher(
      {
        publish: async (...args) => {
          calls.push(args[2]);
          return { stream: 's', seq: 1, duplicate: false } as PubAck;
        },
      },
      { timeoutMs: 250 },
    );
    const message = event('a', 1);
    await publish([message], live);
    expect(calls).toEqual([{ msgID: message.id, timeout: 250 }]);
  });

  it('sets no timeout of its own when none is given (the client keeps its default)', async () => {
    const calls: unknown[] = [];
    const publish = natsJetStreamPublisher({
      publish: async (...args) => {
        calls.push(args[2]);
        return { stream: 's', seq: 1, duplicate: false } as PubAck;
      },
    });
    const message = event('a', 1);
    await publish([message], live);
    expect(calls).toStrictEqual([{ msgID: message.id }]);
  });

  it('names a payload that is not JSON, and passes any other failure of the client on unchanged', async () => {
    const other = Object.assign(new Error('wrong last sequence'), { name: 'JetStreamApiError' });
    const failures = [other, undefined];
    const publish = natsJetStreamPublisher({
      publish: () => Promise.reject(failures.shift()),
    });
    const batch = [event('a', undefined), event('b', 2), event('c', 3)];
    const error = (await publish(batch, live).catch((e: unknown) => e)) as OutboxPublishError;
    expect(error).toBeInstanceOf(OutboxPublishError);
    expect((error.failures.get(batch[0]!.id) as Error).message).toBe(
      `the payload of event ${batch[0]!.id} is not JSON`,
    );
    expect(error.failures.get(batch[1]!.id)).toBe(other);
    expect(error.failures.has(batch[2]!.id)).toBe(true);
    expect(error.failures.get(batch[2]!.id)).toBeUndefined(); // a client rejecting with nothing
  });

  it('leaves no abort listener on the signal once a publish settled', async () => {
    const controller = new AbortController();
    const publish = natsJetStreamPublisher({
      publish: async () => ({ stream: 's', seq: 1, duplicate: false }) as PubAck,
    });
    await publish([event('a', 1)], { signal: controller.signal });
    await publish([event('b', 2)], { signal: controller.signal }).catch(() => undefined);
    expect(getEventListeners(controller.signal, 'abort')).toHaveLength(0);
  });

  it.each([
    [null, undefined, /"js" to be a JetStream client \(with publish\), got null/],
    [{}, undefined, /"js" to be a JetStream client/],
    [{ publish: 1 }, undefined, /"js" to be a JetStream client/],
    [{ publish() {} }, 5, /"natsJetStreamPublisher options" to be an options object/],
    [{ publish() {} }, { subject: '' }, /"subject" to be a non-empty string or a function, got ""/],
    [{ publish() {} }, { subject: 7 }, /"subject" to be a non-empty string or a function, got 7/],
    [{ publish() {} }, { timeoutMs: 0 }, /"timeoutMs" to be a positive finite number, got 0/],
    [{ publish() {} }, { timeout: 5 }, /unknown option "timeout".*did you mean "timeoutMs"/],
  ])('refuses js %o with options %o: a TypeError', (js, options, message) => {
    const make = () => natsJetStreamPublisher(js as JetStreamClient, options as never);
    expect(make).toThrow(TypeError);
    expect(make).toThrow(message);
  });
});
