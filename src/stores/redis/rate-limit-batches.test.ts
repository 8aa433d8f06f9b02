/**
 * How the rate-limit store cuts a tick's decisions into script calls on a Redis Cluster: by rule
 * group and hash slot (of the key with the client's `keyPrefix`), at most MAX_BATCH each. Against a
 * scripted client (no Redis); the same on a real cluster is in test/redis-cluster/.
 */
import { describe, expect, it } from 'vitest';
import { type Call, scriptedClient } from '../../../test/rate-limit/support/scripted-client.js';
import { ruleOf } from '../../rate-limit/rule.js';
import { FakeClock } from '../../testing/fake-clock.js';
import { redisStores } from './index.js';
import { bySlot, MAX_BATCH, slotPrefixOf } from './rate-limit-batches.js';
import { keySlot } from './slot.js';

const rule = ruleOf({ name: 'api', limit: 5, periodMs: 60_000 });

/** Every decision allowed: a result for the single-key script, one per key for the batch script. */
const allowAll = (call: Call) =>
  call.numKeys === 1 ? [4, 0, 0] : Array.from({ length: call.numKeys }, () => [4, 0, 0]);

/** A scripted Cluster client with `options` (its keyPrefix), and the store on it. */
function onCluster(options?: object) {
  const { client, calls } = scriptedClient(allowAll, { isCluster: true });
  if (options !== undefined) Object.assign(client as object, { options });
  return { store: redisStores(client, { clock: new FakeClock() }).rateLimit, calls };
}

/** The keys of each call. */
const keysOf = (calls: readonly Call[]) => calls.map((c) => c.args.slice(0, c.numKeys));

describe('slotPrefixOf', () => {
  it('is undefined for a client that is not a Cluster, whatever its keyPrefix', () => {
    expect(slotPrefixOf({})).toBeUndefined();
    expect(slotPrefixOf({ isCluster: false, options: { keyPrefix: 'app:' } })).toBeUndefined();
  });

  it("is a Cluster's keyPrefix, else its nodes' keyPrefix, else ''", () => {
    expect(slotPrefixOf({ isCluster: true })).toBe('');
    expect(slotPrefixOf({ isCluster: true, options: {} })).toBe('');
    expect(slotPrefixOf({ isCluster: true, options: { keyPrefix: 'app:' } })).toBe('app:');
    expect(slotPrefixOf({ isCluster: true, options: { redisOptions: { keyPrefix: 'n:' } } })).toBe('n:');
    expect(
      slotPrefixOf({ isCluster: true, options: { keyPrefix: 'app:', redisOptions: { keyPrefix: 'n:' } } }),
    ).toBe('app:');
    expect(
      slotPrefixOf({ isCluster: true, options: { keyPrefix: '', redisOptions: { keyPrefix: 'n:' } } }),
    ).toBe('n:');
    expect(slotPrefixOf({ isCluster: true, options: { keyPrefix: 7 } })).toBe('');
  });
});

describe('bySlot', () => {
  const a = { key: 'a:{u1}' };
  const b = { key: 'b:{u2}' };
  const c = { key: 'c:{u1}' };

  it('one list per slot, in the order of its first decision, each in the order of its decisions', () => {
    expect(keySlot(a.key)).not.toBe(keySlot(b.key));
    expect([...bySlot([a, b, c, a], '')]).toEqual([[a, c, a], [b]]);
    expect([...bySlot([], '')]).toEqual([]);
  });

  it('hashes the key with the prefix: a prefix with a tag puts every key in its slot', () => {
    expect([...bySlot([a, b, c], '{t}')]).toEqual([[a, b, c]]);
    // With `p{` in front the tag is `a:{u1` or `c:{u1`: a and c are no longer together.
    expect([...bySlot([a, c], 'p{')]).toEqual([[a], [c]]);
  });
});

describe('Redis rate-limit store on a Cluster client: one call per rule group and slot', () => {
  it('splits a tick by slot, keeping order; a slot with one decision is a single-key call', async () => {
    const { store, calls } = onCluster();
    const keys = ['u1', 'u2', 'u1', 'u3', 'u2', 'u1'];
    expect(new Set(keys.map((k) => keySlot(store.keyOf(k, rule)))).size).toBe(3);
    await Promise.all(keys.map((k, i) => store.take(k, i + 1, rule)));
    const u = (k: string) => store.keyOf(k, rule);
    expect(calls.map((c) => [c.numKeys, ...c.args.slice(0, 2 * c.numKeys)])).toEqual([
      [3, u('u1'), u('u1'), u('u1'), 1, 3, 6],
      [2, u('u2'), u('u2'), 2, 5],
      [1, u('u3'), 4],
    ]);
  });

  it('different rules never share a call, even in one slot', async () => {
    const { store, calls } = onCluster();
    const other = ruleOf({ name: 'other', limit: 7, periodMs: 60_000 });
    await Promise.all([store.take('u1', 1, rule), store.take('u1', 1, other), store.take('u1', 1, rule)]);
    expect(keysOf(calls)).toEqual([
      [store.keyOf('u1', rule), store.keyOf('u1', rule)],
      [store.keyOf('u1', other)],
    ]);
  });

  it(`sends at most MAX_BATCH (${MAX_BATCH}) decisions of one slot per call`, async () => {
    const { store, calls } = onCluster();
    await Promise.all(Array.from({ length: MAX_BATCH + 2 }, () => store.take('u1', 1, rule)));
    expect(calls.map((c) => c.numKeys)).toEqual([MAX_BATCH, 2]);
  });

  it("computes the slot on the key the client sends: with the client's keyPrefix", async () => {
    // `{t}` in front: every key hashes to `t`, one slot, one call.
    const tagged = onCluster({ keyPrefix: '{t}' });
    await Promise.all(['u1', 'u2', 'u3'].map((k) => tagged.store.take(k, 1, rule)));
    expect(tagged.calls.map((c) => c.numKeys)).toEqual([3]);
    // The same from the nodes' options.
    const nodes = onCluster({ redisOptions: { keyPrefix: '{t}' } });
    await Promise.all(['u1', 'u2', 'u3'].map((k) => nodes.store.take(k, 1, rule)));
    expect(nodes.calls.map((c) => c.numKeys)).toEqual([3]);
  });
});
