/**
 * The relay on the memory outbox and a FakeClock: batches, order per key (a stuck key holds back
 * only itself), retries with backoff, dead letters and redrive, partial failures, a publish that
 * outlives its lease, wake-ups, outbox failures, stop.
 */
import { describe, expect, it } from 'vitest';
import { constant } from '../retry/backoff.js';
import { FakeClock } from '../testing/fake-clock.js';
import { OutboxPublishError } from './errors.js';
import { memoryOutbox } from './memory-store.js';
import { outboxRelay } from './outbox-relay.js';
import type { OutboxMessage, Publish } from './store.js';

/** A publisher that records what it published, failing the events `failing` says. */
function recordingPublisher(failing: (m: OutboxMessage) => unknown = () => undefined) {
  const published: string[] = [];
  const batches: number[] = [];
  const publish: Publish = async (messages) => {
    batches.push(messages.length);
    const failures = new Map<string, unknown>();
    for (const m of messages) {
      const error = failing(m);
      if (error === undefined) published.push(String((m.payload as { n: unknown }).n));
      else failures.set(m.id, error);
    }
    if (failures.size > 0) throw new OutboxPublishError(failures);
  };
  return { publish, published, batches };
}

const event = (n: number | string, key?: string) => ({ topic: 't', key, payload: { n } });

describe('outboxRelay', () => {
  it('publishes what was enqueued, in batches, and marks it delivered', async () => {
    const clock = new FakeClock();
    const outbox = memoryOutbox({ clock });
    const { publish, published, batches } = recordingPublisher();
    const delivered: number[] = [];
    const relay = outboxRelay({
      outbox,
      publish,
      clock,
      batchSize: 4,
      onDelivered: (e) => delivered.push(e.ids.length * 1_000 + e.marked),
    });
    await outbox.enqueue(Array.from({ length: 10 }, (_, i) => event(i)));
    relay.start();
    await clock.advance(0);
    expect(published).toEqual(['0', '1', '2', '3', '4', '5', '6', '7', '8', '9']);
    expect(batches).toEqual([4, 4, 2]);
    expect(delivered).toEqual([4_004, 4_004, 2_002]);
    await relay.stop();
    expect(relay.running).toBe(false);
  });

  it('keeps each key in order; a failing head holds back its key only', async () => {
    const clock = new FakeClock();
    const outbox = memoryOutbox({ clock });
    let failA = true;
    const { publish, published } = recordingPublisher((m) =>
      failA && (m.payload as { n: string }).n === 'a1' ? new Error('broker refused a1') : undefined,
    );
    const relay = outboxRelay({ outbox, publish, clock, backoff: constant(5_000), pollMs: 1_000 });
    await outbox.enqueue([
      event('a1', 'a'),
      event('b1', 'b'),
      event('a2', 'a'),
      event('b2', 'b'),
      event('x'),
    ]);
    relay.start();
    await clock.advance(1_000);
    expect(published).toEqual(['b1', 'x', 'b2']);
    failA = false;
    await clock.advance(5_000);
    expect(published).toEqual(['b1', 'x', 'b2', 'a1', 'a2']);
    await relay.stop();
  });

  it('retries a failed event after backoff(attempts), then dead-letters it; redrive delivers it', async () => {
    const clock = new FakeClock();
    const outbox = memoryOutbox({ clock });
    let broken = true;
    const { publish, published } = recordingPublisher(() => (broken ? new Error('down') : undefined));
    const failures: [number, number][] = [];
    const dead: number[] = [];
    const relay = outboxRelay({
      outbox,
      publish,
      clock,
      maxAttempts: 3,
      backoff: (n) => n * 1_000,
      onPublishFailed: (e) => failures.push([e.attempts, e.retryInMs]),
      onDeadLettered: (e) => dead.push(e.attempts),
    });
    const [id] = await outbox.enqueue([event(1)]);
    relay.start();
    await clock.advance(999);
    expect(failures).toEqual([[1, 1_000]]);
    await clock.advance(1_001);
    expect(failures).toEqual([
      [1, 1_000],
      [2, 2_000],
    ]);
    await clock.advance(2_000);
    expect(dead).toEqual([3]);
    const letters = await outbox.deadLetters();
    expect(letters.map((l) => [l.id, l.attempts, l.lastError])).toEqual([[id, 3, 'Error: down']]);
    await clock.advance(60_000);
    expect(published).toEqual([]);
    broken = false;
    expect(await outbox.redrive()).toBe(1);
    await clock.advance(0);
    expect(published).toEqual(['1']);
    await relay.stop();
  });

  it("waits for each failed event's own retry time, not only the soonest (pollMs far off)", async () => {
    const clock = new FakeClock();
    const outbox = memoryOutbox({ clock });
    let calls = 0;
    const { publish, published } = recordingPublisher(() => (++calls <= 2 ? new Error('once') : undefined));
    const relay = outboxRelay({
      outbox,
      publish,
      clock,
      batchSize: 1,
      pollMs: 3_600_000,
      backoff: constant(1_000),
    });
    await outbox.enqueue([event(1)]);
    relay.start();
    await clock.advance(500);
    await outbox.enqueue([event(2)]); // fails half a second after the first
    await clock.advance(500);
    expect(published).toEqual(['1']);
    await clock.advance(500);
    expect(published).toEqual(['1', '2']);
    await relay.stop();
  });

  it('a publisher that rejects fails the whole batch; an OutboxPublishError only the events it names', async () => {
    const clock = new FakeClock();
    const outbox = memoryOutbox({ clock });
    let calls = 0;
    const seen: string[][] = [];
    const publish: Publish = async (messages) => {
      calls++;
      seen.push(messages.map((m) => String((m.payload as { n: number }).n)));
      if (calls === 1) throw new Error('connection reset');
      if (calls === 2) throw new OutboxPublishError(new Map([[messages[1]!.id, new Error('too big')]]));
    };
    const relay = outboxRelay({ outbox, publish, clock, backoff: constant(100) });
    await outbox.enqueue([event(1), event(2), event(3)]);
    relay.start();
    await clock.advance(100);
    await clock.advance(100);
    expect(seen).toEqual([['1', '2', '3'], ['1', '2', '3'], ['2']]);
    await relay.stop();
  });

  it('abandons a publish that outlives the lease: its signal aborts and the batch is tried again', async () => {
    const clock = new FakeClock();
    const outbox = memoryOutbox({ clock });
    const signals: AbortSignal[] = [];
    const publish: Publish = (_, { signal }) => {
      signals.push(signal);
      return signals.length === 1 ? new Promise(() => {}) : Promise.resolve();
    };
    const failed: unknown[] = [];
    const relay = outboxRelay({
      outbox,
      publish,
      clock,
      leaseMs: 1_000,
      backoff: constant(0),
      onPublishFailed: (e) => failed.push(e.error),
    });
    await outbox.enqueue([event(1)]);
    relay.start();
    await clock.advance(1_000);
    expect(signals[0]?.aborted).toBe(true);
    expect(String(failed[0])).toMatch(/outlived the batch's 1000 ms lease/);
    await clock.advance(0);
    expect(signals).toHaveLength(2);
    await relay.stop();
    expect(await outbox.claim('someone', 10, 1_000)).toEqual([]);
  });

  it('wakes on enqueue instead of waiting for the poll; polls when nothing wakes it', async () => {
    const clock = new FakeClock();
    const outbox = memoryOutbox({ clock });
    const { publish, published } = recordingPublisher();
    const relay = outboxRelay({ outbox, publish, clock, pollMs: 60_000 });
    relay.start();
    await clock.advance(10);
    await outbox.enqueue([event(1)]);
    await clock.advance(0);
    expect(published).toEqual(['1']);
    await relay.stop();

    const polled = outboxRelay({
      outbox: {
        timeoutMs: 0,
        claim: (...a) => outbox.claim(...a),
        delivered: (...a) => outbox.delivered(...a),
        failed: (...a) => outbox.failed(...a),
        release: (o) => outbox.release(o),
      },
      publish,
      clock,
      pollMs: 5_000,
    });
    polled.start();
    await clock.advance(10);
    await outbox.enqueue([event(2)]);
    await clock.advance(4_000);
    expect(published).toEqual(['1']);
    await clock.advance(1_000);
    expect(published).toEqual(['1', '2']);
    await polled.stop();
  });

  it('reports an outbox that fails and carries on after pollMs', async () => {
    const clock = new FakeClock();
    const outbox = memoryOutbox({ clock });
    let down = true;
    const errors: string[] = [];
    const { publish, published } = recordingPublisher();
    const relay = outboxRelay({
      outbox: {
        timeoutMs: 0,
        claim: (...a) => (down ? Promise.reject(new Error('db down')) : outbox.claim(...a)),
        delivered: (...a) => outbox.delivered(...a),
        failed: (...a) => outbox.failed(...a),
        release: (o) => outbox.release(o),
      },
      publish,
      clock,
      pollMs: 1_000,
      onStoreError: (e) => errors.push(`${e.operation}: ${(e.error as Error).message}`),
    });
    await outbox.enqueue([event(1)]);
    relay.start();
    await clock.advance(1_500);
    expect(errors).toEqual(['claim: db down', 'claim: db down']);
    down = false;
    await clock.advance(1_000);
    expect(published).toEqual(['1']);
    await relay.stop();
  });

  it('stop() waits for the batch in flight, marks it, and releases', async () => {
    const clock = new FakeClock();
    const outbox = memoryOutbox({ clock });
    let finish: (() => void) | undefined;
    const publish: Publish = () => new Promise<void>((resolve) => (finish = resolve));
    const relay = outboxRelay({ outbox, publish, clock });
    await outbox.enqueue([event(1)]);
    relay.start();
    await clock.advance(0);
    let stopped = false;
    const stopping = relay.stop().then(() => (stopped = true));
    await clock.advance(0);
    expect(stopped).toBe(false);
    finish?.();
    await stopping;
    expect(await outbox.claim('other', 10, 1_000)).toEqual([]); // delivered, not released
    relay.start();
    await relay.stop();
  });

  it.each([
    [{}, /"outbox"/],
    [{ outbox: memoryOutbox() }, /"publish"/],
    [{ outbox: memoryOutbox(), publish: () => Promise.resolve(), leaseMs: 299 }, /at least 300/],
    [{ outbox: memoryOutbox(), publish: () => Promise.resolve(), batchSize: 0 }, /"batchSize"/],
    [{ outbox: memoryOutbox(), publish: () => Promise.resolve(), batchsize: 5 }, /batchSize/],
  ])('bad options are a TypeError: %o', (options, message) => {
    expect(() => outboxRelay(options as never)).toThrow(message);
  });
});

describe('memoryOutbox', () => {
  it('refuses a bad event before adding any', async () => {
    const outbox = memoryOutbox();
    await expect(outbox.enqueue([event(1), { topic: '', payload: 1 }])).rejects.toThrow(/"topic"/);
    await expect(outbox.enqueue([{ topic: 't', payload: new Date() }])).rejects.toThrow(
      /the payload is a Date/,
    );
    await expect(outbox.enqueue([{ topic: 't', payload: undefined }])).rejects.toThrow(TypeError);
    await expect(outbox.enqueue([{ topic: 't', key: '', payload: 1 }])).rejects.toThrow(/"key"/);
    await expect(outbox.enqueue([{ topic: 't', payload: 1, headers: { a: 1 as never } }])).rejects.toThrow(
      /header "a"/,
    );
    await expect(outbox.enqueue('x' as never)).rejects.toThrow(/"events" to be an array/);
    expect(await outbox.claim('o', 10, 1_000)).toEqual([]);
  });
});
