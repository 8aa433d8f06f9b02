/**
 * The memory outbox against the relay-facing contract of `store.ts`, on a FakeClock: claims take
 * only each key's oldest pending event, oldest first; leases; `delivered` and `failed` only for the
 * lease's owner; `release`; dead letters and redrive; wake-ups; delivered events forgotten.
 */
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { describe, expect, it } from 'vitest';
import { FakeClock } from '../testing/fake-clock.js';
import { memoryOutbox } from './memory-store.js';
import type { FailedDelivery, OutboxMessage } from './store.js';

const event = (n: string, key?: string) => ({ topic: 't', key, payload: { n } });
const names = (messages: readonly OutboxMessage[]) => messages.map((m) => (m.payload as { n: string }).n);
const retry = (id: string, retryInMs: number, error = 'Error: nack'): FailedDelivery => ({
  id,
  error,
  retryInMs,
  dead: false,
});
const dead = (id: string, error = 'Error: gone'): FailedDelivery => ({ id, error, retryInMs: 0, dead: true });

/** Lets queued microtasks (the outbox's wake-ups) run. */
const settle = () => new Promise<void>((resolve) => setImmediate(resolve));

describe('memoryOutbox: claims', () => {
  it('hands out each event as enqueued, with its id, attempts 0 and its enqueue time', async () => {
    const clock = new FakeClock(5_000);
    const outbox = memoryOutbox({ clock });
    const ids = await outbox.enqueue([
      { topic: 'orders', key: 'o-1', payload: { total: 3 }, headers: { trace: 't-1' } },
      { topic: 'audit', payload: ['x'] },
    ]);
    await clock.advance(10);
    expect(await outbox.claim('r', 10, 1_000)).toEqual([
      {
        id: ids[0],
        topic: 'orders',
        key: 'o-1',
        payload: { total: 3 },
        headers: { trace: 't-1' },
        attempts: 0,
        createdAt: 5_000,
      },
      {
        id: ids[1],
        topic: 'audit',
        key: undefined,
        payload: ['x'],
        headers: {},
        attempts: 0,
        createdAt: 5_000,
      },
    ]);
    expect(await outbox.enqueue([])).toEqual([]);
  });

  it("claims only each key's oldest pending event, oldest first; events without a key go independently", async () => {
    const clock = new FakeClock();
    const outbox = memoryOutbox({ clock });
    await outbox.enqueue([event('a1', 'a'), event('b1', 'b'), event('a2', 'a'), event('x'), event('y')]);
    const first = await outbox.claim('r', 10, 1_000);
    expect(names(first)).toEqual(['a1', 'b1', 'x', 'y']);
    // a1 still pending (claimed, not delivered): a2 waits behind it, whoever asks.
    expect(await outbox.claim('other', 10, 1_000)).toEqual([]);
    await outbox.delivered(
      'r',
      first.filter((m) => m.key === 'a').map((m) => m.id),
    );
    expect(names(await outbox.claim('other', 10, 1_000))).toEqual(['a2']);
  });

  it('takes at most limit events', async () => {
    const outbox = memoryOutbox({ clock: new FakeClock() });
    await outbox.enqueue([event('1'), event('2'), event('3')]);
    expect(names(await outbox.claim('r', 2, 1_000))).toEqual(['1', '2']);
    expect(names(await outbox.claim('r', 2, 1_000))).toEqual(['3']);
  });

  it('leaves a claimed event to its owner until the lease ends, then anyone may claim it', async () => {
    const clock = new FakeClock();
    const outbox = memoryOutbox({ clock });
    const [id] = await outbox.enqueue([event('1')]);
    expect(names(await outbox.claim('a', 10, 1_000))).toEqual(['1']);
    await clock.advance(999);
    expect(await outbox.claim('b', 10, 1_000)).toEqual([]);
    expect(await outbox.claim('a', 10, 1_000)).toEqual([]); // its own lease too
    await clock.advance(1);
    const [taken] = await outbox.claim('b', 10, 500);
    expect([taken?.id, taken?.attempts]).toEqual([id, 0]);
    // b's lease is 500 ms from its claim.
    await clock.advance(499);
    expect(await outbox.claim('c', 10, 1_000)).toEqual([]);
    await clock.advance(1);
    expect(names(await outbox.claim('c', 10, 1_000))).toEqual(['1']);
  });
});

describe('memoryOutbox: delivered and failed act for the owner only', () => {
  it('delivered marks what the owner holds, resolves how many, and lets the key move on', async () => {
    const clock = new FakeClock();
    const outbox = memoryOutbox({ clock });
    const [k1, k2, other] = await outbox.enqueue([event('k1', 'k'), event('k2', 'k'), event('o')]);
    await outbox.claim('a', 10, 1_000);
    expect(await outbox.delivered('b', [k1!, other!])).toBe(0);
    expect(await outbox.delivered('a', [k1!, other!, 'unknown'])).toBe(2);
    expect(await outbox.delivered('a', [k1!])).toBe(0); // already delivered
    const [next] = await outbox.claim('b', 10, 1_000);
    expect(next?.id).toBe(k2);
    await clock.advance(5_000);
    expect((await outbox.claim('c', 10, 1_000)).map((m) => m.id)).toEqual([k2]);
  });

  it('an owner whose lease ended may still mark its events, until another relay claims them', async () => {
    const clock = new FakeClock();
    const outbox = memoryOutbox({ clock });
    const [first, second] = await outbox.enqueue([event('1'), event('2')]);
    await outbox.claim('a', 10, 1_000);
    await clock.advance(5_000);
    expect(await outbox.delivered('a', [first!])).toBe(1);
    expect((await outbox.claim('b', 10, 1_000)).map((m) => m.id)).toEqual([second]);
    expect(await outbox.delivered('a', [second!])).toBe(0);
    expect(await outbox.delivered('b', [second!])).toBe(1);
    expect(await outbox.claim('c', 10, 1_000)).toEqual([]);
  });

  it('failed records the attempt and error, releases the event, and holds it back until its retry time', async () => {
    const clock = new FakeClock();
    const outbox = memoryOutbox({ clock });
    const [id] = await outbox.enqueue([event('1', 'k'), event('2', 'k')]);
    await outbox.claim('a', 10, 60_000);
    expect(await outbox.failed('b', [retry(id!, 100)])).toBe(0); // not b's
    expect(await outbox.failed('a', [retry(id!, 2_000), retry('unknown', 1)])).toBe(1);
    expect(await outbox.failed('a', [retry(id!, 2_000)])).toBe(0); // released: a holds it no more
    await clock.advance(1_999);
    expect(await outbox.claim('b', 10, 1_000)).toEqual([]); // and its key waits behind it
    await clock.advance(1);
    const [again] = await outbox.claim('b', 10, 1_000);
    expect([again?.id, again?.attempts]).toEqual([id, 1]);
    expect(await outbox.failed('b', [retry(id!, 0)])).toBe(1);
    const [third] = await outbox.claim('c', 10, 1_000);
    expect([third?.id, third?.attempts]).toEqual([id, 2]);
    expect(await outbox.deadLetters()).toEqual([]);
  });

  it('a dead event becomes a dead letter with its last error; its key moves on', async () => {
    const clock = new FakeClock(1_000);
    const outbox = memoryOutbox({ clock });
    const [id, next] = await outbox.enqueue([event('1', 'k'), event('2', 'k')]);
    await outbox.claim('a', 10, 1_000);
    expect(await outbox.failed('a', [retry(id!, 0, 'Error: first')])).toBe(1);
    await outbox.claim('a', 10, 1_000);
    expect(await outbox.failed('a', [dead(id!, 'Error: last')])).toBe(1);
    expect(await outbox.deadLetters()).toEqual([
      {
        id,
        topic: 't',
        key: 'k',
        payload: { n: '1' },
        headers: {},
        attempts: 2,
        createdAt: 1_000,
        lastError: 'Error: last',
      },
    ]);
    expect((await outbox.claim('b', 10, 1_000)).map((m) => m.id)).toEqual([next]);
  });

  it('release gives back what the owner holds, at once, and only that', async () => {
    const clock = new FakeClock();
    const outbox = memoryOutbox({ clock });
    await outbox.enqueue([event('1'), event('2')]);
    await outbox.claim('a', 1, 60_000);
    await outbox.claim('b', 1, 60_000);
    await outbox.release('a');
    expect(names(await outbox.claim('c', 10, 1_000))).toEqual(['1']);
    await outbox.release('nobody');
    expect(await outbox.claim('d', 10, 1_000)).toEqual([]);
  });
});

describe('memoryOutbox: dead letters and redrive', () => {
  /** An outbox holding dead letters `1` and `2`, a pending event `3` whose retry is far off, and `4` untouched. */
  async function withDeadLetters() {
    const clock = new FakeClock();
    const outbox = memoryOutbox({ clock });
    const ids = await outbox.enqueue([event('1'), event('2'), event('3'), event('4')]);
    await outbox.claim('a', 3, 1_000);
    await outbox.failed('a', [
      dead(ids[0]!, 'Error: one'),
      dead(ids[1]!, 'Error: two'),
      retry(ids[2]!, 60_000),
    ]);
    return { clock, outbox, ids: ids as [string, string, string, string] };
  }

  it('deadLetters lists the dead letters only, oldest first', async () => {
    const { outbox, ids } = await withDeadLetters();
    const letters = await outbox.deadLetters();
    expect(letters.map((l) => [l.id, l.attempts, l.lastError])).toEqual([
      [ids[0], 1, 'Error: one'],
      [ids[1], 1, 'Error: two'],
    ]);
  });

  it('redrive() makes every dead letter pending again, with no attempts and claimable at once; nothing else changes', async () => {
    const { outbox, ids } = await withDeadLetters();
    expect(await outbox.redrive()).toBe(2);
    expect(await outbox.deadLetters()).toEqual([]);
    const claimed = await outbox.claim('b', 10, 1_000);
    expect(claimed.map((m) => [m.id, m.attempts])).toEqual([
      [ids[0], 0],
      [ids[1], 0],
      [ids[3], 0],
    ]);
    expect(await outbox.redrive()).toBe(0);
  });

  it('redrive(ids) makes only those pending again', async () => {
    const { outbox, ids } = await withDeadLetters();
    expect(await outbox.redrive([ids[1], ids[2], 'unknown'])).toBe(1);
    expect((await outbox.deadLetters()).map((l) => l.id)).toEqual([ids[0]]);
    expect((await outbox.claim('b', 10, 1_000)).map((m) => m.id)).toEqual([ids[1], ids[3]]);
    expect(await outbox.redrive([])).toBe(0);
    expect((await outbox.deadLetters()).map((l) => l.id)).toEqual([ids[0]]);
  });
});

describe('memoryOutbox: wake-ups', () => {
  it('wakes its watchers soon after events are enqueued or redriven, not when nothing was', async () => {
    const clock = new FakeClock();
    const outbox = memoryOutbox({ clock });
    let wakes = 0;
    const unwatch = outbox.watch(() => wakes++);
    await outbox.enqueue([]);
    await settle();
    expect(wakes).toBe(0);
    const [id] = await outbox.enqueue([event('1')]);
    await settle();
    expect(wakes).toBe(1);
    expect(await outbox.redrive()).toBe(0);
    await settle();
    expect(wakes).toBe(1);
    await outbox.claim('a', 10, 1_000);
    await outbox.failed('a', [dead(id!)]);
    expect(await outbox.redrive()).toBe(1);
    await settle();
    expect(wakes).toBe(2);
    unwatch();
    await outbox.enqueue([event('2')]);
    await settle();
    expect(wakes).toBe(2);
  });
});

describe('memoryOutbox: delivered events are forgotten', () => {
  it('keeps nothing of a delivered event (its payload can be garbage-collected)', async () => {
    setFlagsFromString('--expose-gc');
    const gc = runInNewContext('gc') as () => void;
    const outbox = memoryOutbox({ clock: new FakeClock() });
    const payload = await (async () => {
      await outbox.enqueue([{ topic: 't', payload: { big: 'x'.repeat(1_000) } }]);
      const [message] = await outbox.claim('a', 10, 1_000);
      expect(await outbox.delivered('a', [message!.id])).toBe(1);
      return new WeakRef(message!.payload as object);
    })();
    for (let i = 0; i < 10 && payload.deref() !== undefined; i++) {
      await settle();
      gc();
    }
    expect(payload.deref()).toBeUndefined();
  });
});

describe('memoryOutbox options', () => {
  it('a bad or unknown option is a TypeError naming memoryOutbox options', () => {
    expect(() => memoryOutbox({ clok: new FakeClock() } as never)).toThrow(
      /^unknown option "clok" in memoryOutbox options; did you mean "clock"\?$/,
    );
    expect(() => memoryOutbox({ clock: 'now' } as never)).toThrow(TypeError);
  });
});
