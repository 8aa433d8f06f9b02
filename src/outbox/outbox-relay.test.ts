/**
 * The relay on the memory outbox and a FakeClock: batches, order per key (a stuck key holds back
 * only itself), retries with backoff, dead letters and redrive, partial failures, a publish that
 * outlives its lease, wake-ups, outbox failures, stop.
 */
import { describe, expect, it } from 'vitest';
import { constant } from '../retry/backoff.js';
import { FakeClock } from '../testing/fake-clock.js';
import { OutboxPublishError } from './errors.js';
import { type MemoryOutbox, memoryOutbox } from './memory-store.js';
import { outboxRelay } from './outbox-relay.js';
import type { OutboxMessage, OutboxStore, Publish } from './store.js';

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

/**
 * `outbox` as a relay sees it, with each call listed (`claim`, `delivered <n>`, `failed <n>`,
 * `release`), the owners that claimed, and how many watchers it has; `overrides` replace calls.
 */
function spied(outbox: MemoryOutbox, overrides: Partial<OutboxStore> = {}) {
  const calls: string[] = [];
  const owners = new Set<string>();
  let watchers = 0;
  const store: OutboxStore = {
    timeoutMs: 0,
    claim: (owner, limit, leaseMs) => {
      calls.push('claim');
      owners.add(owner);
      return outbox.claim(owner, limit, leaseMs);
    },
    delivered: (owner, ids) => {
      calls.push(`delivered ${ids.length}`);
      return outbox.delivered(owner, ids);
    },
    failed: (owner, failures) => {
      calls.push(`failed ${failures.length}`);
      return outbox.failed(owner, failures);
    },
    release: (owner) => {
      calls.push('release');
      return outbox.release(owner);
    },
    watch: (wake) => {
      watchers++;
      const unwatch = outbox.watch(wake);
      return () => {
        watchers--;
        unwatch();
      };
    },
    ...overrides,
  };
  return { store, calls, owners, watchers: () => watchers };
}

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

  it('a retry that falls due while a claim runs is claimed right after it, not at pollMs', async () => {
    const clock = new FakeClock();
    const outbox = memoryOutbox({ clock });
    // Each claim answers 10 ms after it read the outbox.
    const slow = spied(outbox, {
      claim: async (...a) => {
        const batch = await outbox.claim(...a);
        await clock.sleep(10);
        return batch;
      },
    });
    let calls = 0;
    const { publish, published } = recordingPublisher(() => (++calls === 1 ? new Error('once') : undefined));
    const relay = outboxRelay({ outbox: slow.store, publish, clock, pollMs: 60_000, backoff: constant(5) });
    await outbox.enqueue([event(1)]);
    relay.start();
    // The claim at 0 answers at 10; the publish fails; retry at 15. The next claim reads at 10 and
    // answers at 20, empty: the retry fell due during it.
    for (let t = 0; t < 5; t++) await clock.advance(10);
    expect(published).toEqual(['1']);
    const stopping = relay.stop();
    await clock.advance(10);
    await stopping;
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

  it('running from start() until stop() ends; start() while running is a no-op; stop() unwatches and releases', async () => {
    const clock = new FakeClock();
    const outbox = memoryOutbox({ clock });
    const spy = spied(outbox);
    const { publish, published } = recordingPublisher();
    const relay = outboxRelay({ outbox: spy.store, publish, clock });
    expect(relay.running).toBe(false);
    relay.start();
    relay.start();
    expect(relay.running).toBe(true);
    await clock.advance(0);
    expect([spy.owners.size, spy.watchers()]).toEqual([1, 1]);
    await outbox.enqueue([event(1)]);
    await clock.advance(0);
    expect(published).toEqual(['1']);
    await relay.stop();
    expect(relay.running).toBe(false);
    expect([spy.watchers(), spy.calls.at(-1)]).toEqual([0, 'release']);
    await relay.stop();
    expect(spy.calls.filter((c) => c === 'release')).toHaveLength(1);
  });

  it('onDelivered, onPublishFailed, onDeadLettered and onStoreError subscribe; their disposers unsubscribe', async () => {
    const clock = new FakeClock();
    const outbox = memoryOutbox({ clock });
    let claimDown = true;
    const spy = spied(outbox, {
      claim: (...a) => {
        if (!claimDown) return outbox.claim(...a);
        claimDown = false;
        return Promise.reject(new Error('db down'));
      },
    });
    const { publish } = recordingPublisher((m) =>
      Number((m.payload as { n: number }).n) % 2 === 0 ? new Error('nack') : undefined,
    );
    const relay = outboxRelay({
      outbox: spy.store,
      publish,
      clock,
      name: 'orders',
      maxAttempts: 2,
      backoff: constant(100),
      pollMs: 1_000,
    });
    const seen: string[] = [];
    const disposers = [
      relay.onDelivered((e) => seen.push(`${e.policy} delivered ${e.ids.length} ${e.marked}`)),
      relay.onPublishFailed((e) => seen.push(`${e.policy} failed ${e.attempts} ${e.retryInMs}`)),
      relay.onDeadLettered((e) => seen.push(`${e.policy} dead ${e.attempts}`)),
      relay.onStoreError((e) => seen.push(`${e.policy} store ${e.operation}`)),
    ];
    await outbox.enqueue([event(1), event(2)]);
    relay.start();
    await clock.advance(1_000);
    await clock.advance(100);
    expect(seen).toEqual([
      'orders store claim',
      'orders delivered 1 1',
      'orders failed 1 100',
      'orders dead 2',
    ]);
    for (const dispose of disposers) dispose();
    claimDown = true;
    await outbox.enqueue([event(3), event(4)]);
    await clock.advance(1_000);
    await clock.advance(100);
    expect(seen).toHaveLength(4);
    expect((await outbox.deadLetters()).length).toBe(2);
    await relay.stop();
  });

  it('marks only what was confirmed: no delivered() for a batch that failed whole, no failed() for one confirmed whole', async () => {
    const clock = new FakeClock();
    const outbox = memoryOutbox({ clock });
    const spy = spied(outbox);
    let down = true;
    const publish: Publish = () => (down ? Promise.reject(new Error('broker down')) : Promise.resolve());
    const delivered: number[] = [];
    const relay = outboxRelay({
      outbox: spy.store,
      publish,
      clock,
      backoff: constant(100),
      onDelivered: (e) => delivered.push(e.ids.length),
    });
    await outbox.enqueue([event(1), event(2)]);
    relay.start();
    await clock.advance(0);
    down = false;
    await clock.advance(100);
    await relay.stop();
    expect(spy.calls.filter((c) => c !== 'claim')).toEqual(['failed 2', 'delivered 2', 'release']);
    expect(delivered).toEqual([2]);
  });

  it('a partial failure reports and reschedules only the events the publisher named', async () => {
    const clock = new FakeClock();
    const outbox = memoryOutbox({ clock });
    const spy = spied(outbox);
    const { publish } = recordingPublisher((m) =>
      (m.payload as { n: number }).n === 2 ? new Error('too big') : undefined,
    );
    const failed: string[] = [];
    const relay = outboxRelay({
      outbox: spy.store,
      publish,
      clock,
      maxAttempts: 1,
      onPublishFailed: (e) => failed.push(e.id),
      onDeadLettered: (e) => failed.push(`${e.id} dead: ${(e.error as Error).message}`),
    });
    const [, id2] = await outbox.enqueue([event(1), event(2), event(3)]);
    relay.start();
    await clock.advance(0);
    await relay.stop();
    expect(failed).toEqual([`${id2} dead: too big`]);
    expect(spy.calls.filter((c) => c !== 'claim')).toEqual(['delivered 2', 'failed 1', 'release']);
    expect((await outbox.deadLetters()).map((l) => [l.id, l.lastError])).toEqual([[id2, 'Error: too big']]);
  });

  it('events it could not mark delivered stay its own until stop() releases them; they are published again', async () => {
    const clock = new FakeClock();
    const outbox = memoryOutbox({ clock });
    const errors: string[] = [];
    const { publish, published } = recordingPublisher();
    const relay = outboxRelay({
      outbox: spied(outbox, { delivered: () => Promise.reject(new Error('db down')) }).store,
      publish,
      clock,
      onStoreError: (e) => errors.push(`${e.operation}: ${(e.error as Error).message}`),
    });
    await outbox.enqueue([event(1)]);
    relay.start();
    await clock.advance(1_000);
    expect([published, errors]).toEqual([['1'], ['delivered: db down']]);
    await relay.stop();
    // Released: another relay publishes it again at once, not at the end of the 30 s lease.
    const second = recordingPublisher();
    const next = outboxRelay({ outbox, publish: second.publish, clock });
    next.start();
    await clock.advance(0);
    expect(second.published).toEqual(['1']);
    await next.stop();
  });

  it('reports an outbox that fails to record failures or to release, and stops all the same', async () => {
    const clock = new FakeClock();
    const outbox = memoryOutbox({ clock });
    const errors: string[] = [];
    const { publish } = recordingPublisher(() => new Error('nack'));
    const relay = outboxRelay({
      outbox: spied(outbox, {
        failed: () => Promise.reject(new Error('cannot record')),
        release: () => Promise.reject(new Error('cannot release')),
      }).store,
      publish,
      clock,
      leaseMs: 1_000,
      onStoreError: (e) => errors.push(`${e.operation}: ${(e.error as Error).message}`),
    });
    await outbox.enqueue([event(1)]);
    relay.start();
    await clock.advance(0);
    expect(errors).toEqual(['failed: cannot record']);
    await relay.stop();
    expect(errors).toEqual(['failed: cannot record', 'release: cannot release']);
    expect(relay.running).toBe(false);
  });

  it('a wake-up while it is busy ends its next idle wait at once, that one only', async () => {
    const clock = new FakeClock();
    const outbox = memoryOutbox({ clock });
    // Each claim answers 10 ms after it read the outbox: an event enqueued meanwhile is not in it.
    let claims = 0;
    const slow = spied(outbox, {
      claim: async (...a) => {
        claims++;
        const batch = await outbox.claim(...a);
        await clock.sleep(10);
        return batch;
      },
    });
    const { publish, published } = recordingPublisher();
    const relay = outboxRelay({ outbox: slow.store, publish, clock, pollMs: 60_000 });
    relay.start();
    await clock.advance(5);
    await outbox.enqueue([event(1)]);
    await clock.advance(5); // the empty claim answers; the relay goes idle, woken already
    await clock.advance(10);
    expect(published).toEqual(['1']);
    // Then a claim that finds nothing, and the wait for pollMs.
    await clock.advance(1_000);
    expect(claims).toBe(3);
    const stopping = relay.stop();
    await clock.advance(10); // a claim in flight, if any, answers
    await stopping;
  });

  it("a publish that finished in time keeps its signal: it aborts only at the lease's end", async () => {
    const clock = new FakeClock();
    const outbox = memoryOutbox({ clock });
    const signals: AbortSignal[] = [];
    const publish: Publish = (_, { signal }) => {
      signals.push(signal);
      return Promise.resolve();
    };
    const relay = outboxRelay({ outbox, publish, clock, leaseMs: 1_000, pollMs: 60_000 });
    await outbox.enqueue([event(1)]);
    relay.start();
    await clock.advance(5_000);
    expect(signals.map((s) => s.aborted)).toEqual([false]);
    await relay.stop();
  });

  it("defaults: named 'outbox'; a failed event waits exponentialJitter({ baseMs: 1_000, maxMs: 300_000 }) and is dead after 10 tries", async () => {
    const clock = new FakeClock();
    const outbox = memoryOutbox({ clock });
    const waits: number[] = [];
    const names = new Set<string>();
    const relay = outboxRelay({
      outbox,
      publish: () => Promise.reject(new Error('down')),
      clock,
      onPublishFailed: (e) => {
        names.add(e.policy);
        waits.push(e.retryInMs);
      },
      onDeadLettered: (e) => waits.push(-e.attempts),
    });
    expect(relay.name).toBe('outbox');
    await outbox.enqueue([event(1)]);
    relay.start();
    await clock.advance(1_000_000); // the 9 waits add up to 511 s ± 30 %
    await relay.stop();
    expect([...names]).toEqual(['outbox']);
    expect(waits).toHaveLength(10);
    expect(waits.at(-1)).toBe(-10);
    // Try n waits 1 s · 2^(n−1) ± 30 %, at most 300 s.
    for (const [i, wait] of waits.slice(0, 9).entries()) {
      const d = Math.min(300_000, 1_000 * 2 ** i);
      expect(wait).toBeGreaterThanOrEqual(Math.floor(0.7 * d));
      expect(wait).toBeLessThanOrEqual(Math.min(300_000, Math.ceil(1.3 * d)));
    }
  });

  it('a lease of exactly the minimum is accepted: 300 ms, or 3 × the outbox deadline', () => {
    const publish: Publish = () => Promise.resolve();
    expect(outboxRelay({ outbox: memoryOutbox(), publish, leaseMs: 300 }).running).toBe(false);
    const slow: OutboxStore = { ...spied(memoryOutbox()).store, timeoutMs: 200 };
    expect(() => outboxRelay({ outbox: slow, publish, leaseMs: 600 })).not.toThrow();
    expect(() => outboxRelay({ outbox: slow, publish, leaseMs: 599 })).toThrow(
      /^expected "leaseMs" to be at least 600 \(300 ms and 3 × the outbox's deadline\), got 599$/,
    );
  });

  it.each([
    [{}, /"outbox"/],
    [{ outbox: memoryOutbox() }, /"publish"/],
    [{ outbox: memoryOutbox(), publish: () => Promise.resolve(), leaseMs: 299 }, /at least 300/],
    [{ outbox: memoryOutbox(), publish: () => Promise.resolve(), batchSize: 0 }, /"batchSize"/],
    [
      { outbox: memoryOutbox(), publish: () => Promise.resolve(), batchsize: 5 },
      /^unknown option "batchsize" in outboxRelay options; did you mean "batchSize"\?$/,
    ],
    [
      { outbox: { timeoutMs: 0, claim() {}, delivered() {}, failed() {} }, publish: () => Promise.resolve() },
      /^expected "outbox" to be an outbox \(claim, delivered, failed, release, timeoutMs\), got an object$/,
    ],
    [
      { outbox: { claim() {}, delivered() {}, failed() {}, release() {} }, publish: () => Promise.resolve() },
      /^expected "outbox" to be an outbox \(claim, delivered, failed, release, timeoutMs\), got an object$/,
    ],
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
