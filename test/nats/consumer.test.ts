/**
 * jetStreamConsumer against the real NATS (JetStream) at NATS_URL: acks only after the handler
 * resolved (a consumer killed mid-handler gets its message redelivered), naks a failure, moves a
 * message whose handler failed `maxDeliveries` times to the dead-letter subject and terminates it,
 * and stop() waits for the handler in flight.
 */
import { getEventListeners } from 'node:events';
import { AckPolicy, type JetStreamClient, type JsMsg, jetstream, jetstreamManager } from '@nats-io/jetstream';
import { headers } from '@nats-io/transport-node';
import { describe, expect, it, vi } from 'vitest';
import { deadLetterHeaders, type JetStreamHandler, jetStreamConsumer } from '../../src/stores/nats/index.js';
import { deferred } from '../support/deferred.js';
import { useNats } from '../support/services.js';

const nats = await useNats();
const nanos = (ms: number): number => ms * 1_000_000;

/** Polls `read` until `check` holds for its value (or fails after `capMs`), and returns it. */
async function eventually<T>(
  read: () => Promise<T> | T,
  check: (value: T) => boolean,
  capMs = 5_000,
): Promise<T> {
  const start = Date.now();
  for (;;) {
    const value = await read();
    if (check(value)) return value;
    if (Date.now() - start > capMs) throw new Error(`never happened: ${JSON.stringify(value)}`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

/** A stream `events` with a durable pull consumer `worker`, and a stream `dead` for dead letters. */
async function setUp(ackWaitMs: number) {
  const nc = await nats.connect();
  const js = jetstream(nc);
  const jsm = await jetstreamManager(nc);
  const { config } = await nats.addStream('events');
  await nats.addStream('dead');
  await jsm.consumers.add(config.name, {
    durable_name: 'worker',
    ack_policy: AckPolicy.Explicit,
    ack_wait: nanos(ackWaitMs),
  });
  const pending = async () => {
    const info = await jsm.consumers.info(config.name, 'worker');
    return { unacked: info.num_ack_pending, waiting: info.num_pending };
  };
  const consumer = () => js.consumers.get(config.name, 'worker');
  return { js, stream: config.name, pending, consumer, deadLetterSubject: nats.subject('dead', 'events') };
}

/** Consumes with a recording handler until `count` messages were handled and acked, then stops. */
async function drain<T>(context: Awaited<ReturnType<typeof setUp>>, count: number, pick: (m: JsMsg) => T) {
  const { js, consumer, deadLetterSubject, pending } = context;
  const seen: T[] = [];
  const run = jetStreamConsumer(await consumer(), (message) => void seen.push(pick(message)), {
    js,
    deadLetterSubject,
    maxDeliveries: 5,
  });
  await eventually(
    () => seen.length,
    (n) => n >= count,
  );
  await eventually(pending, (p) => p.unacked === 0 && p.waiting === 0);
  await run.stop();
  return seen;
}

const publish = (js: JetStreamClient, id: string, body: unknown) => {
  const h = headers();
  h.set('traceparent', `trace-${id}`);
  return js.publish(nats.subject('events', 'created'), JSON.stringify(body), { msgID: id, headers: h });
};

nats.describe('jetStreamConsumer on JetStream', () => {
  it('acks only after the handler resolved; a consumer killed mid-handler gets the message redelivered', async () => {
    const context = await setUp(500);
    const { js, stream, pending, deadLetterSubject } = context;
    await publish(js, 'e1', { n: 1 });

    // First consumer, on a connection of its own that dies while the handler is mid-way.
    const doomed = await nats.connect();
    const started = deferred<JsMsg>();
    const hung = deferred<void>();
    const first = jetStreamConsumer(
      await jetstream(doomed).consumers.get(stream, 'worker'),
      async (message) => {
        started.resolve(message);
        await hung.promise;
      },
      { js, deadLetterSubject, maxDeliveries: 5 },
    );
    expect((await started.promise).info.deliveryCount).toBe(1);
    expect(await pending()).toEqual({ unacked: 1, waiting: 0 });
    await doomed.close();

    expect(await drain(context, 1, (message) => message.info.deliveryCount)).toEqual([2]);

    // The dead consumer's handler finishing late: its ack goes nowhere, and its loop ends.
    hung.resolve();
    await first.done;
  });

  it('naks a failed handler, redelivers it after retryDelayMs, and acks the retry that succeeds', async () => {
    const { js, pending, consumer, deadLetterSubject } = await setUp(30_000);
    await publish(js, 'e1', { n: 1 });
    const deliveries: number[] = [];
    const done = deferred<void>();
    const run = jetStreamConsumer(
      await consumer(),
      (message) => {
        deliveries.push(message.info.deliveryCount);
        if (deliveries.length === 1) throw new Error('database down');
        done.resolve();
      },
      { js, deadLetterSubject, maxDeliveries: 3, retryDelayMs: 50 },
    );
    await done.promise;
    await eventually(pending, (p) => p.unacked === 0 && p.waiting === 0);
    expect(deliveries).toEqual([1, 2]);
    await run.stop();
  });

  it('after maxDeliveries failures publishes the message to the dead-letter subject and terminates it', async () => {
    const { js, pending, consumer, deadLetterSubject } = await setUp(300);
    await publish(js, 'e1', { n: 1 });
    const deliveries: number[] = [];
    const run = jetStreamConsumer(
      await consumer(),
      (message) => {
        deliveries.push(message.info.deliveryCount);
        throw new TypeError('bad\r\nrow');
      },
      { js, deadLetterSubject, maxDeliveries: 3, retryDelayMs: 10 },
    );
    const dead = await jetstream(await nats.connect()).consumers.get(nats.streamName('dead'));
    const letter = await dead.next({ expires: 5_000 });
    expect(letter).not.toBeNull();
    expect(letter?.subject).toBe(deadLetterSubject);
    expect(letter?.json()).toEqual({ n: 1 });
    const h = letter?.headers;
    expect(h?.get(deadLetterHeaders.error)).toBe('TypeError: bad row');
    expect(h?.get(deadLetterHeaders.subject)).toBe(nats.subject('events', 'created'));
    expect(h?.get(deadLetterHeaders.stream)).toBe(nats.streamName('events'));
    expect(h?.get(deadLetterHeaders.sequence)).toBe('1');
    expect(h?.get(deadLetterHeaders.deliveries)).toBe('3');
    expect(h?.get('traceparent')).toBe('trace-e1');
    expect(h?.get('Nats-Msg-Id')).toBe('e1');

    // Terminated: not delivered again, even after several ack_waits.
    await new Promise((resolve) => setTimeout(resolve, 1_000));
    expect(deliveries).toEqual([1, 2, 3]);
    expect(await pending()).toEqual({ unacked: 0, waiting: 0 });
    await run.stop();
  });

  it('a dead letter drops every Nats-* header whatever its case, is deduplicated by stream and sequence when the original had no id, and carries at most 1,000 characters of the error', async () => {
    const { js, consumer, deadLetterSubject } = await setUp(300);
    const h = headers();
    h.set('NATS-Lab-Note', 'internal');
    h.set('x-tenant', 't1');
    await js.publish(nats.subject('events', 'created'), JSON.stringify({ n: 1 }), { headers: h });
    await js.publish(nats.subject('events', 'created'), JSON.stringify({ n: 2 }));
    const run = jetStreamConsumer(
      await consumer(),
      () => {
        throw new Error('x'.repeat(2_000));
      },
      { js, deadLetterSubject, maxDeliveries: 1, retryDelayMs: 10 },
    );
    const dead = await jetstream(await nats.connect()).consumers.get(nats.streamName('dead'));
    const letters = [await dead.next({ expires: 5_000 }), await dead.next({ expires: 5_000 })];
    await run.stop();
    const [first, second] = letters.map((letter) => letter?.headers);
    expect(first?.get('x-tenant')).toBe('t1');
    expect(first?.has('NATS-Lab-Note')).toBe(false);
    expect(first?.get('Nats-Msg-Id')).toBe(`${nats.streamName('events')}:1`);
    expect(second?.get('Nats-Msg-Id')).toBe(`${nats.streamName('events')}:2`);
    // An original without headers gives a dead letter with only the dead-letter headers.
    expect([...(second?.keys() ?? [])].sort()).toEqual(
      ['Nats-Msg-Id', ...Object.values(deadLetterHeaders)].sort(),
    );
    expect(first?.get(deadLetterHeaders.error)).toBe(`Error: ${'x'.repeat(993)}`);
  });

  it('keeps a message whose dead letter cannot be published (no stream captures the subject), to try again', async () => {
    const { js, pending, consumer } = await setUp(30_000);
    await publish(js, 'e1', { n: 1 });
    const deliveries: number[] = [];
    const run = jetStreamConsumer(
      await consumer(),
      (message) => {
        deliveries.push(message.info.deliveryCount);
        throw new Error('poison');
      },
      { js, deadLetterSubject: nats.subject('nowhere'), maxDeliveries: 1, retryDelayMs: 10 },
    );
    await eventually(
      () => deliveries.length,
      (n) => n >= 3,
    );
    await run.stop();
    expect(deliveries.slice(0, 3)).toEqual([1, 2, 3]);
    expect((await pending()).unacked).toBe(1);
  });

  it('stop() waits for the handler in flight, acks it, and hands the messages pulled ahead back', async () => {
    const context = await setUp(30_000);
    const { js, consumer, deadLetterSubject } = context;
    for (const id of ['e1', 'e2', 'e3']) await publish(js, id, { id });
    const started = deferred<void>();
    const release = deferred<void>();
    const handled: string[] = [];
    const run = jetStreamConsumer(
      await consumer(),
      async (message) => {
        started.resolve();
        await release.promise;
        handled.push(message.json<{ id: string }>().id);
      },
      { js, deadLetterSubject, maxDeliveries: 3 },
    );
    await started.promise;
    let stopped = false;
    const stopping = run.stop().then(() => {
      stopped = true;
    });
    await new Promise((resolve) => setTimeout(resolve, 100));
    expect(stopped).toBe(false);
    release.resolve();
    await stopping;
    expect(handled).toEqual(['e1']);

    // e2 and e3 were nak'ed, not left to the 30 s ack_wait: the next consumer gets them after retryDelayMs.
    const rest = await drain(context, 2, (message) => message.json<{ id: string }>().id);
    expect(rest.sort()).toEqual(['e2', 'e3']);
  });

  it('an aborted signal stops it; a handler failing because of it is not counted toward dead-lettering', async () => {
    const context = await setUp(30_000);
    const { js, consumer, deadLetterSubject } = context;
    await publish(js, 'e1', { n: 1 });
    const controller = new AbortController();
    const started = deferred<void>();
    const run = jetStreamConsumer(
      await consumer(),
      (_message, { signal }) =>
        new Promise<void>((_, reject) => {
          started.resolve();
          signal.addEventListener('abort', () => reject(signal.reason));
        }),
      { js, deadLetterSubject, maxDeliveries: 1, signal: controller.signal },
    );
    await started.promise;
    controller.abort(new Error('shutting down'));
    await run.done;

    // nak'ed (redelivered after retryDelayMs, not the 30 s ack_wait), not dead-lettered although maxDeliveries is 1.
    expect(await drain(context, 1, (message) => message.info.deliveryCount)).toEqual([2]);
    const jsm = await jetstreamManager(await nats.connect());
    expect((await jsm.streams.info(nats.streamName('dead'))).state.messages).toBe(0);
  });
});

describe('jetStreamConsumer options', () => {
  const consumer = { consume: () => Promise.reject(new Error('unused')) };
  const handler: JetStreamHandler = () => {};
  const js = { publish: () => Promise.reject(new Error('unused')) };
  const valid = { js, deadLetterSubject: 'dead', maxDeliveries: 3 };

  it.each([
    [{ ...valid, js: {} }, /"js" to be a JetStream client \(with publish\)/],
    [{ ...valid, deadLetterSubject: '' }, /"deadLetterSubject" to be a non-empty string/],
    [{ js, deadLetterSubject: 'dead' }, /"maxDeliveries" to be a positive integer, got undefined/],
    [{ ...valid, maxDeliveries: 0 }, /"maxDeliveries" to be a positive integer, got 0/],
    [{ ...valid, retryDelayMs: -1 }, /"retryDelayMs" to be a non-negative/],
    [{ ...valid, maxMessages: 1.5 }, /"maxMessages" to be a positive integer/],
    [{ ...valid, signal: 'stop' }, /"signal" to be an AbortSignal/],
    [{ ...valid, maxDelivery: 3 }, /unknown option "maxDelivery".*did you mean "maxDeliveries"/],
  ])('refuses %o: a TypeError', (options, message) => {
    const make = () => jetStreamConsumer(consumer, handler, options as never);
    expect(make).toThrow(TypeError);
    expect(make).toThrow(message);
  });

  it('refuses a consumer without consume and a handler that is not a function', () => {
    expect(() => jetStreamConsumer({} as never, handler, valid)).toThrow(
      /"consumer" to be a JetStream consumer \(with consume\)/,
    );
    expect(() => jetStreamConsumer(null as never, handler, valid)).toThrow(
      /"consumer" to be a JetStream consumer \(with consume\), got null/,
    );
    expect(() => jetStreamConsumer(consumer, handler, { ...valid, js: null as never })).toThrow(
      /"js" to be a JetStream client \(with publish\), got null/,
    );
    expect(() => jetStreamConsumer(consumer, handler, 5 as never)).toThrow(
      /"jetStreamConsumer options" to be an options object/,
    );
    expect(() => jetStreamConsumer(consumer, 'handle' as never, valid)).toThrow(/"handler" to be a function/);
  });

  /** A consumer whose `consume` resolves when told, with the given messages and then nothing until closed. */
  function scriptedConsumer(messages: readonly JsMsg[] = []) {
    const opened = deferred<void>();
    const closed = deferred<void>();
    const asked: unknown[] = [];
    const iterable = {
      close: () => {
        closed.resolve();
        return Promise.resolve(undefined);
      },
      async *[Symbol.asyncIterator]() {
        yield* messages;
        await closed.promise;
      },
    };
    return {
      consumer: {
        consume: async (options: unknown) => {
          asked.push(options);
          await opened.promise;
          return iterable;
        },
      } as never,
      asked,
      open: () => opened.resolve(),
    };
  }
  const fakeMessage = (settled: string[]) =>
    ({ info: { deliveryCount: 1 }, ack: () => settled.push('ack'), nak: () => settled.push('nak') }) as never;

  it('pulls maxMessages ahead, and gives the handler the signal it stops with', async () => {
    const settled: string[] = [];
    const { consumer: scripted, asked, open } = scriptedConsumer([fakeMessage(settled)]);
    const controller = new AbortController();
    const signals: AbortSignal[] = [];
    const run = jetStreamConsumer(scripted, (_, context) => void signals.push(context.signal), {
      ...valid,
      maxMessages: 7,
      signal: controller.signal,
    });
    open();
    await vi.waitFor(() => expect(settled).toEqual(['ack']));
    expect(asked).toEqual([{ max_messages: 7 }]);
    expect(signals).toEqual([controller.signal]);
    await run.stop();
  });

  it('stop() before the consumer opened still closes it once it opens, and leaves no abort listener', async () => {
    const { consumer: scripted, open } = scriptedConsumer();
    const controller = new AbortController();
    const run = jetStreamConsumer(scripted, handler, { ...valid, signal: controller.signal });
    const stopped = run.stop();
    open();
    await stopped;
    await run.done;
    expect(getEventListeners(controller.signal, 'abort')).toHaveLength(0);
  });

  it('does not consume at all when the signal is already aborted', async () => {
    let consumed = false;
    const run = jetStreamConsumer(
      {
        consume: () => {
          consumed = true;
          return Promise.reject(new Error('unused'));
        },
      },
      handler,
      { ...valid, signal: AbortSignal.abort() },
    );
    await run.stop();
    expect(consumed).toBe(false);
  });
});
