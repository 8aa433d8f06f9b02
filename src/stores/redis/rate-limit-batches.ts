/**
 * How the Redis rate-limit store cuts the decisions of one tick into script calls: at most
 * {@link MAX_BATCH} per call and, on a Redis Cluster, where every key of one call must hash to one
 * slot (else Redis answers `CROSSSLOT`), split first by the slot of their key, as the server
 * computes it on the key actually sent.
 */
import { keySlot } from './slot.js';

/**
 * Most decisions in one batch script call (on a Redis Cluster, all of one hash slot). A script
 * blocks Redis for its whole run (every other client waits), so a batch must stay short: 32 GCRA
 * decisions run ~0.3 ms on the server (a sliding window of 10 buckets ~3× that). Beyond ~16–32
 * keys the fixed cost of a call is already amortised (measured with `INFO commandstats`: ~13.5 µs
 * of server time for one key alone, ~8.4 µs per key in a batch of 32, ~8.2 µs in one of 64), and
 * more, smaller calls keep several in flight, so the client prepares the next batch while Redis
 * runs the current one.
 */
export const MAX_BATCH = 32;

/** The options of an ioredis `Redis` or `Cluster` that change the keys it sends. */
export interface KeyPrefixOptions {
  readonly keyPrefix?: unknown;
  /** A Cluster's options for its nodes (ioredis also copies their `keyPrefix` to the Cluster's). */
  readonly redisOptions?: { readonly keyPrefix?: unknown } | undefined;
}

/** What {@link slotPrefixOf} reads of a client. */
export interface SlotClient {
  readonly isCluster?: boolean | undefined;
  readonly options?: KeyPrefixOptions | undefined;
}

/**
 * What to put in front of a store's key to get the key whose slot Redis computes: the client's
 * `keyPrefix` (`options.keyPrefix`, else a Cluster's `options.redisOptions.keyPrefix`), or `''`.
 * `undefined` for a client that is not a Cluster (`isCluster !== true`): there the slot of a key
 * does not matter, and is never computed. Never throws; a prefix that is not a string (the
 * types of ioredis allow none other) is taken as none.
 *
 * @example
 * slotPrefixOf(new Cluster(nodes, { keyPrefix: 'app:' })); // 'app:'
 * slotPrefixOf(new Redis()); // undefined
 */
export function slotPrefixOf(client: SlotClient): string | undefined {
  if (client.isCluster !== true) return undefined;
  const prefix = client.options?.keyPrefix || client.options?.redisOptions?.keyPrefix;
  return typeof prefix === 'string' ? prefix : '';
}

/**
 * `pending` (decisions of one rule group, in the order they were made) split by the Redis Cluster
 * slot of `slotPrefix` + their key: one list per slot, in the order of each slot's first decision,
 * each keeping the order of its decisions (so the decisions of one key stay in order). Never
 * throws.
 *
 * @example
 * bySlot([{ key: 'a:{u1}' }, { key: 'b:{u2}' }, { key: 'c:{u1}' }], ''); // [[a:{u1}, c:{u1}], [b:{u2}]]
 */
export function bySlot<T extends { readonly key: string }>(
  pending: readonly T[],
  slotPrefix: string,
): IterableIterator<T[]> {
  const slots = new Map<number, T[]>();
  for (const decision of pending) {
    const slot = keySlot(slotPrefix + decision.key);
    const same = slots.get(slot);
    if (same === undefined) slots.set(slot, [decision]);
    else same.push(decision);
  }
  return slots.values();
}
