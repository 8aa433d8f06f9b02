/**
 * The same payments API as a careful-looking service would write it without bulwark: plain retries
 * around the card processor (a timer race, three tries, no breaker), `Idempotency-Key` accepted
 * but not honoured, the balance read and written back without a lock, the event published after
 * the commit, a consumer without an inbox, orders as three calls in a row, reads straight from the
 * database. Each of these is what the protected build replaces with a pattern; nothing else differs.
 */
import { randomUUID } from 'node:crypto';
import { systemClock } from '../../src/index.js';
import { insertCredit, insertNotification, readAccount, writeBalance } from '../bank.js';
import type { ChargeRequest } from '../processor.js';
import { waitFor } from '../wait.js';
import type { Build, BuildDeps } from './build.js';

/** Tries `call` up to three times, each given 800 ms by a timer race (the call itself goes on). */
async function withPlainRetries<T>(call: () => Promise<T>): Promise<T> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await Promise.race([
        call(),
        systemClock
          .sleep(800)
          .then(() => Promise.reject(Object.assign(new Error('timed out'), { status: 504 }))),
      ]);
    } catch (error) {
      if (attempt >= 3) throw error;
      await systemClock.sleep(50);
    }
  }
}

/**
 * Builds the naive API on `deps`.
 *
 * @example
 * const api = await startApi(naiveBuild(deps), deps.bank.accountIds);
 */
export function naiveBuild(deps: BuildDeps): Build {
  const { bank, broker, processor, warehouse } = deps;
  const { db } = bank;
  let accountReads = 0;
  let publishing = 0;
  const charge = (request: ChargeRequest) => withPlainRetries(() => processor.charge(request));

  broker.subscribe(async (message) => {
    const { paymentId } = message.payload as { paymentId: string };
    await insertNotification(db, paymentId, message.id);
  });

  return {
    name: 'naive',
    middleware: [],
    async pay({ paymentId, accountId, cents, card }) {
      // Load, charge, save: whatever another request saved meanwhile is overwritten.
      const account = await readAccount(db, accountId);
      const { chargeId } = await charge({ reference: paymentId, cents, card });
      await writeBalance(db, accountId, (account?.balance ?? 0) + cents);
      await insertCredit(db, { accountId, paymentId, cents });
      // After the commit, best effort: a refused publish is logged and forgotten.
      publishing++;
      broker
        .publish([{ id: randomUUID(), topic: 'payment.succeeded', payload: { paymentId, accountId, cents } }])
        .catch(() => undefined)
        .finally(() => publishing--);
      return { paymentId, chargeId };
    },
    async order({ orderId, cents, card, address }) {
      await warehouse.reserve(orderId);
      await charge({ reference: orderId, cents, card });
      return { orderId, shipmentId: await warehouse.ship(orderId, address) };
    },
    account(id) {
      accountReads++;
      return readAccount(db, id);
    },
    async drain(timeoutMs) {
      await waitFor(() => publishing === 0 && broker.pending === 0, timeoutMs);
    },
    stats: () => ({ breakerTransitions: 0, breakerRefusals: 0, shed: 0, accountReads }),
    async close() {},
  };
}
