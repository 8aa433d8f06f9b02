/**
 * The load: many concurrent clients, each with its own seeded random, making payments, orders and
 * balance reads through the phases of the timeline; in the "noisy tenant" phase one tenant bursts
 * with clients that never pause.
 */
import { systemClock } from '../../src/index.js';
import { seededRandom } from '../../src/testing/index.js';
import { DECLINED_CARD } from '../processor.js';
import type { SeriesRecorder } from '../series.js';
import type { Timeline } from '../timeline.js';
import { UNDELIVERABLE } from '../warehouse.js';
import { type Operation, perform } from './client.js';
import { LoadRecorder, type LoadStats } from './stats.js';

/** Options of {@link runLoad}. */
export interface LoadOptions {
  /** The API's base URLs: client `i` uses `baseUrls[i % length]`. */
  readonly baseUrls: readonly string[];
  readonly seed: number;
  readonly timeline: Timeline;
  readonly accountIds: readonly string[];
  /** Well-behaved clients, spread over four tenants. */
  readonly clients: number;
  /** Clients of the noisy tenant, busy only in its phase. */
  readonly noisyClients: number;
  /** Where each operation's latency is recorded by the second it finished in. */
  readonly series?: SeriesRecorder;
  /** Receives the recorder once the load starts (for a progress display). */
  readonly onStart?: (recorder: LoadRecorder) => void;
}

type Pick = <T>(items: readonly T[]) => T;

function nextOperation(
  random: () => number,
  pick: Pick,
  client: number,
  sequence: number,
  accountIds: readonly string[],
): Operation {
  const tenant = `tenant-${client % 4}`;
  const cents = 100 + Math.floor(random() * 4_900);
  const card = random() < 0.05 ? DECLINED_CARD : '4242424242424242';
  const abortAfterMs = random() < 0.03 ? 20 + Math.floor(random() * 280) : undefined;
  const abort = abortAfterMs === undefined ? {} : { abortAfterMs };
  const kind = random();
  if (kind < 0.6) {
    const paymentId = `pay-${client}-${sequence}`;
    const body = { paymentId, accountId: pick(accountIds), cents, card };
    return { method: 'POST', path: '/payments', tenant, body, key: paymentId, ...abort };
  }
  if (kind < 0.75) {
    const orderId = `ord-${client}-${sequence}`;
    const address = random() < 0.1 ? UNDELIVERABLE : 'Main St 1';
    const body = { orderId, sku: `sku-${1 + Math.floor(random() * 20)}`, cents, card, address };
    return { method: 'POST', path: '/orders', tenant, body, key: orderId, ...abort };
  }
  return { method: 'GET', path: `/accounts/${pick(accountIds)}`, tenant, ...abort };
}

function noisyOperation(
  random: () => number,
  pick: Pick,
  client: number,
  sequence: number,
  accountIds: readonly string[],
): Operation {
  if (random() < 0.8) return { method: 'GET', path: `/accounts/${pick(accountIds)}`, tenant: 'noisy' };
  const paymentId = `noisy-${client}-${sequence}`;
  const body = { paymentId, accountId: pick(accountIds), cents: 100, card: '4242424242424242' };
  return { method: 'POST', path: '/payments', tenant: 'noisy', body, key: paymentId };
}

/**
 * Runs the load against `baseUrls` until the timeline ends; resolves with what the clients saw once
 * every operation has finished.
 *
 * @example
 * const stats = await runLoad({ baseUrls: [url], seed: 1, timeline, accountIds, clients: 16, noisyClients: 8 });
 */
export async function runLoad(options: LoadOptions): Promise<LoadStats> {
  const { baseUrls, seed, timeline, accountIds } = options;
  const recorder = new LoadRecorder(options.series);
  timeline.start();
  options.onStart?.(recorder);

  const client = async (index: number, noisy: boolean): Promise<void> => {
    const random = seededRandom(seed * 7_919 + index);
    const pick: Pick = (items) => items[Math.floor(random() * items.length)]!;
    const settings = { baseUrl: baseUrls[index % baseUrls.length]!, random, recorder };
    for (let sequence = 1; timeline.running(); sequence++) {
      if (noisy && timeline.phase() !== 'noisy tenant') {
        await systemClock.sleep(50);
        continue;
      }
      const make = noisy ? noisyOperation : nextOperation;
      await perform(settings, make(random, pick, index, sequence, accountIds));
      if (!noisy) await systemClock.sleep(20 + random() * 40);
    }
  };

  const clients = [
    ...Array.from({ length: options.clients }, (_, index) => client(index, false)),
    ...Array.from({ length: options.noisyClients }, (_, index) => client(options.clients + index, true)),
  ];
  await Promise.all(clients);
  return recorder.stats();
}
