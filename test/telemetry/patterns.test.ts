/**
 * The stateful patterns' telemetry with the real OpenTelemetry metrics SDK (an in-memory reader):
 * a scripted run of each on its in-memory store and a FakeClock, then the exact `bulwark.events`
 * data points of its pattern. No instance has a listener: events are counted all the same.
 */
import type { DataPoint } from '@opentelemetry/sdk-metrics';
import { expect, it } from 'vitest';
import {
  distributedLock,
  idempotency,
  isLockLostError,
  memoryFenceStore,
  memoryIdempotencyStore,
  memoryLayer,
  memoryLockStore,
  memoryOutbox,
  type OutboxMessage,
  OutboxPublishError,
  outboxRelay,
  ResilienceError,
  readThroughCache,
  saga,
} from '../../src/index.js';
import { chaosStore, FakeClock } from '../../src/testing/index.js';
import { pointLines, useTestMeterProvider } from '../support/otel-metrics.js';
import { until } from '../support/until.js';

const { collect } = useTestMeterProvider();

/** The `bulwark.events` data points of `pattern` as "attr=value,…: count" lines, sorted. */
async function eventsOf(pattern: string): Promise<string[]> {
  const points = (await collect()).named('bulwark.events')?.dataPoints as DataPoint<number>[] | undefined;
  return pointLines(points?.filter((point) => point.attributes['bulwark.pattern'] === pattern));
}

const down = (code: string) => new ResilienceError('down', { code, kind: 'unavailable' });

/** A promise and the function that resolves it. */
function gate() {
  let open!: () => void;
  const promise = new Promise<void>((resolve) => (open = resolve));
  return { promise, open };
}

it('lock: counts each acquisition, a lease lost and a stale fenced write', async () => {
  const clock = new FakeClock(0);
  const memory = memoryLockStore({ clock });
  let renewDown = true;
  const store = {
    timeoutMs: memory.timeoutMs,
    acquire: memory.acquire.bind(memory),
    renew: (key: string, owner: string, ttlMs: number) =>
      renewDown ? Promise.reject(down('E_LOCK_STORE')) : memory.renew(key, owner, ttlMs),
    release: memory.release.bind(memory),
  };
  const locks = distributedLock({ name: 'accounts', store, clock });
  const fences = memoryFenceStore();
  const resume = gate();
  // The first holder pauses past its lease (its renewal fails), then writes with its old fence.
  const first = locks
    .withLock(
      'account:1',
      async ({ fence }) => {
        await resume.promise;
        await fences.write('account:1', fence, () => 'late');
      },
      { ttlMs: 3_000, waitMs: 0 },
    )
    .catch((error: unknown) => error);
  await until(() => clock.pendingTimers > 0, 'the first holder holds the lock');
  await clock.advance(3_000); // the renewal at 1 s fails: lost; the store's lease ends at 3 s
  renewDown = false;
  await locks.withLock('account:1', ({ fence }) => fences.write('account:1', fence, () => 'new'), {
    waitMs: 0,
  });
  resume.open();
  expect(isLockLostError(await first)).toBe(true);

  expect(await eventsOf('lock')).toEqual([
    'bulwark.event=lock_acquired,bulwark.pattern=lock,bulwark.policy=accounts: 2',
    'bulwark.event=lock_lost,bulwark.pattern=lock,bulwark.policy=accounts,error.type=E_LOCK_STORE: 1',
    'bulwark.event=stale_fence,bulwark.pattern=lock,bulwark.policy=accounts,error.type=ERR_STALE_FENCE: 1',
  ]);
});

it('idempotency: counts a replay, and a conflict for another request and for one in progress', async () => {
  const clock = new FakeClock(0);
  const payments = idempotency({ name: 'payments', wait: false, clock });
  let runs = 0;
  const charge = () => `receipt-${++runs}`;
  expect(await payments.execute('order-1', { amount: 5 }, charge)).toBe('receipt-1');
  expect(await payments.execute('order-1', { amount: 5 }, charge)).toBe('receipt-1'); // replayed
  await expect(payments.execute('order-1', { amount: 6 }, charge)).rejects.toMatchObject({
    code: 'ERR_IDEMPOTENCY_CONFLICT',
  });
  const release = gate();
  let started = false;
  const slow = payments.execute('order-2', {}, async () => {
    started = true;
    await release.promise;
    return 'slow';
  });
  await until(() => started, 'the first request runs');
  await expect(payments.execute('order-2', {}, charge)).rejects.toMatchObject({
    code: 'ERR_IDEMPOTENCY_IN_PROGRESS',
  });
  release.open();
  expect(await slow).toBe('slow');
  expect(runs).toBe(1);

  expect(await eventsOf('idempotency')).toEqual([
    'bulwark.event=conflict,bulwark.pattern=idempotency,bulwark.policy=payments,error.type=ERR_IDEMPOTENCY_CONFLICT: 1',
    'bulwark.event=conflict,bulwark.pattern=idempotency,bulwark.policy=payments,error.type=ERR_IDEMPOTENCY_IN_PROGRESS: 1',
    'bulwark.event=replay,bulwark.pattern=idempotency,bulwark.policy=payments: 1',
  ]);
});

it('cache: counts 2 hits, 1 miss and 1 load', async () => {
  const clock = new FakeClock(0);
  const users = readThroughCache({
    name: 'users',
    layers: [memoryLayer({ maxEntries: 100 })],
    ttlMs: 60_000,
    clock,
  });
  let loads = 0;
  const loader = () => ({ id: 'u1', n: ++loads });
  for (let i = 0; i < 3; i++) expect(await users.get('user:u1', loader)).toEqual({ id: 'u1', n: 1 });

  expect(await eventsOf('cache')).toEqual([
    'bulwark.event=cache_hit,bulwark.pattern=cache,bulwark.policy=users: 2',
    'bulwark.event=cache_miss,bulwark.pattern=cache,bulwark.policy=users: 1',
    'bulwark.event=load,bulwark.pattern=cache,bulwark.policy=users: 1',
  ]);
});

it('saga: counts each step compensated', async () => {
  const clock = new FakeClock(0);
  const undone: string[] = [];
  const order = saga<{ id: string }>({ name: 'order', clock })
    .step({ name: 'reserve', run: () => 'r', compensate: () => void undone.push('reserve') })
    .step({ name: 'charge', run: () => 'c', compensate: () => void undone.push('charge') })
    .step({
      name: 'ship',
      run: () => {
        throw down('E_SHIPPING');
      },
    });
  await expect(order.run({ id: 'o-1' })).rejects.toMatchObject({ code: 'ERR_SAGA_FAILED' });
  expect(undone).toEqual(['charge', 'reserve']);

  expect(await eventsOf('saga')).toEqual([
    'bulwark.event=compensated,bulwark.pattern=saga,bulwark.policy=order: 2',
  ]);
});

it('outbox: counts each event delivered and each dead letter (an unnamed relay: policy "outbox")', async () => {
  const clock = new FakeClock(0);
  const outbox = memoryOutbox({ clock });
  const published: unknown[] = [];
  const relay = outboxRelay({
    outbox,
    clock,
    maxAttempts: 2,
    backoff: () => 100,
    publish: async (messages: readonly OutboxMessage[]) => {
      const failures = new Map<string, unknown>();
      for (const m of messages) {
        if ((m.payload as { n: number }).n === 4) failures.set(m.id, down('E_BROKER'));
        else published.push((m.payload as { n: number }).n);
      }
      if (failures.size > 0) throw new OutboxPublishError(failures);
    },
  });
  await outbox.enqueue([1, 2, 3, 4].map((n) => ({ topic: 'orders', key: `k${n}`, payload: { n } })));
  relay.start();
  await clock.advance(50); // 3 published; the 4th failed, tried again at 100 ms
  await clock.advance(100); // failed again: a dead letter
  await relay.stop();
  expect(published.sort()).toEqual([1, 2, 3]);
  expect((await outbox.deadLetters()).length).toBe(1);

  expect(await eventsOf('outbox')).toEqual([
    'bulwark.event=dead_lettered,bulwark.pattern=outbox,bulwark.policy=outbox,error.type=E_BROKER: 1',
    'bulwark.event=delivered,bulwark.pattern=outbox,bulwark.policy=outbox: 3',
  ]);
});

it('idempotency: counts a store_error when complete fails after the handler ran', async () => {
  const clock = new FakeClock(0);
  const store = chaosStore(memoryIdempotencyStore({ clock }), { rate: 1, methods: ['complete'], seed: 1 });
  const refunds = idempotency({ name: 'refunds', store, clock });
  expect(await refunds.execute('refund-1', {}, () => 'done')).toBe('done');
  expect((await eventsOf('idempotency')).filter((line) => line.includes('refunds'))).toEqual([
    'bulwark.event=store_error,bulwark.pattern=idempotency,bulwark.policy=refunds,error.type=ERR_STORE_UNAVAILABLE: 1',
  ]);
});
