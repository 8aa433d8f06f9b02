/**
 * The payments API built with bulwark: per-tenant rate limiting, priority load shedding and
 * `Idempotency-Key` at the edge (the `bulwark/http` adapters); `smartResilience` around the card
 * processor; a lock per account with fenced balance writes; the `payment.succeeded` event in an
 * outbox, in the balance's transaction, delivered by a relay to an inbox-deduplicated consumer; a
 * durable saga for orders; a read-through cache for reads. The PostgreSQL stores run on the build's
 * embedded PGlite; locks, limits and the cache in memory.
 */

import { idempotencyMiddleware, loadSheddingMiddleware, rateLimitMiddleware } from '../../src/http/index.js';
import {
  distributedLock,
  exponentialJitter,
  idempotency,
  loadShedder,
  memoryLayer,
  outboxRelay,
  type Priority,
  rateLimiter,
  readThroughCache,
  saga,
  smartResilience,
} from '../../src/index.js';
import { postgresStores } from '../../src/stores/postgres/index.js';
import { seededRandom } from '../../src/testing/index.js';
import {
  type Account,
  insertCredit,
  insertNotification,
  isCredited,
  readAccount,
  writeBalance,
} from '../bank.js';
import type { Charge } from '../processor.js';
import { waitFor } from '../wait.js';
import type { Reservation } from '../warehouse.js';
import type { Build, BuildDeps, OrderInput, PaymentInput } from './build.js';
import { tenantOf } from './tenant.js';

/** The request priorities: a payment before an order before a balance read. */
function priorityOf(method: string | undefined, url: string | undefined): Priority {
  if (method === 'GET') return 'low';
  return url?.startsWith('/orders') ? 'normal' : 'high';
}

/**
 * Builds the protected API on `deps` (migrates the stores, starts the outbox relay).
 *
 * @example
 * const build = await protectedBuild(deps);
 * const api = await startApi(build, deps.bank.accountIds);
 */
export async function protectedBuild(deps: BuildDeps): Promise<Build> {
  const { bank, broker, processor, warehouse } = deps;
  const { db } = bank;
  const { shared } = deps;
  const stores = postgresStores(db.handle, { timeoutMs: 5_000, schema: shared?.schema });
  await stores.migrate();

  let breakerTransitions = 0;
  let breakerRefusals = 0;
  let shed = 0;
  let accountReads = 0;

  const card = smartResilience({
    maxAttempts: 4,
    backoff: exponentialJitter({ baseMs: 20, maxMs: 200, random: seededRandom(deps.seed) }),
    attemptTimeoutMs: 250,
    callTimeoutMs: 1_200,
    failureThreshold: 5,
    resetTimeoutMs: deps.resetTimeoutMs,
    breaker: {
      onStateChange: ({ to }) => {
        breakerTransitions++;
        deps.series.breakerState(deps.source, to);
      },
      onRejected: () => breakerRefusals++,
    },
  });
  const charge = (reference: string, cents: number, cardNumber: string, idempotencyKey: string) =>
    card.execute(({ signal }) =>
      processor.charge({ reference, cents, card: cardNumber, idempotencyKey }, signal),
    );

  const locks = distributedLock({ store: shared?.redis.lock });
  const accounts = readThroughCache({
    layers:
      shared === undefined
        ? [memoryLayer({ maxEntries: 1_000 })]
        : [memoryLayer({ maxEntries: 1_000 }), shared.redis.cacheLayer],
    ttlMs: 1_000,
  });
  // Eight requests in flight keep every worker busy; beyond that they only queue (behind the
  // processor's latency spikes, or the embedded database's one session): shed the least urgent.
  const shedder = loadShedder({ limits: { inFlight: 8 }, onRejected: () => shed++ });

  const relay = outboxRelay({
    outbox: stores.outbox,
    publish: (messages) => broker.publish(messages.map(({ id, topic, payload }) => ({ id, topic, payload }))),
    pollMs: 100,
    backoff: exponentialJitter({ baseMs: 50, maxMs: 500, random: seededRandom(deps.seed + 1) }),
  });
  const undelivered = async (): Promise<number> => {
    const { rows } = await db.query<{ n: string | number }>(
      `SELECT count(*) AS n FROM "${stores.schema}".outbox WHERE status = 'pending'`,
    );
    return Number(rows[0]?.n ?? 0);
  };
  broker.subscribe(async (message) => {
    const { paymentId } = message.payload as { paymentId: string };
    await db.transaction((tx) =>
      stores.inbox.process(tx, { consumer: 'notifier', messageId: message.id }, (own) =>
        insertNotification(own, paymentId, message.id),
      ),
    );
  });
  relay.start();

  /** Credits under the account's lock; the fence refuses a write from a holder whose lease ended. */
  const credit = async ({ accountId, paymentId, cents }: PaymentInput): Promise<void> => {
    await locks.withLock(
      `account:${accountId}`,
      async ({ fence }) => {
        const account = await readAccount(db, accountId);
        return stores.fence.write(`account:${accountId}`, fence, async (tx) => {
          // A retry whose first run credited (and then failed to answer) must not credit twice.
          if (await isCredited(tx, paymentId)) return false;
          await writeBalance(tx, accountId, (account?.balance ?? 0) + cents);
          await insertCredit(tx, { accountId, paymentId, cents });
          await stores.outbox.enqueue(tx, [
            { topic: 'payment.succeeded', payload: { paymentId, accountId, cents } },
          ]);
          return true;
        });
      },
      { ttlMs: 5_000, waitMs: 10_000 },
    );
    await accounts.delete(`account:${accountId}`);
  };

  const placeOrder = saga<OrderInput>({ name: 'place-order', log: stores.sagaLog })
    .step({
      name: 'reservation',
      run: ({ input }): Promise<Reservation> => warehouse.reserve(input.orderId),
      compensate: ({ output }) => warehouse.release(output),
    })
    .step({
      name: 'payment',
      run: ({ input, sagaId }): Promise<Charge> =>
        charge(input.orderId, input.cents, input.card, `${sagaId}:payment`),
      compensate: ({ output, idempotencyKey }) => processor.refund(output, idempotencyKey),
    })
    .step({ name: 'shipment', run: ({ input }) => warehouse.ship(input.orderId, input.address) });

  return {
    name: 'bulwark',
    middleware: [
      rateLimitMiddleware({
        limiter: rateLimiter({
          name: 'tenant',
          limit: deps.tenantRatePerSecond,
          periodMs: 1_000,
          store: shared?.redis.rateLimit,
        }),
        key: tenantOf,
      }),
      loadSheddingMiddleware({ shedder, priority: (req) => priorityOf(req.method, req.url) }),
      idempotencyMiddleware({
        idempotency: idempotency({ store: stores.idempotency, maxWaitMs: 3_000 }),
        tenant: tenantOf,
      }),
    ],
    async pay(input) {
      const { chargeId } = await charge(input.paymentId, input.cents, input.card, input.paymentId);
      await credit(input);
      return { paymentId: input.paymentId, chargeId };
    },
    async order(input) {
      const { outputs } = await placeOrder.run(input);
      return { orderId: input.orderId, shipmentId: outputs.shipment };
    },
    account(id): Promise<Account | undefined> {
      return accounts.get(`account:${id}`, () => {
        accountReads++;
        return readAccount(db, id);
      });
    },
    async drain(timeoutMs) {
      await waitFor(async () => broker.pending === 0 && (await undelivered()) === 0, timeoutMs);
    },
    stats: () => ({ breakerTransitions, breakerRefusals, shed, accountReads }),
    async close() {
      await relay.stop();
      shedder.close();
      accounts.close();
      await stores.close();
    },
  };
}
