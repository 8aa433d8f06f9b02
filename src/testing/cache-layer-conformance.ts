/**
 * The cache layer conformance suite: scenarios every {@link CacheLayer} must pass unchanged (the
 * memory layer on a `FakeClock`, the Redis layer on its server's clock, or your own). It checks the
 * contract of `cache/store.ts`: values kept for their TTL, then stale for their grace, then gone;
 * writes that replace, deletes, keys that never mix; and, for a remote layer, namespace versions,
 * messages to every subscriber, and load claims that exclude each other.
 *
 * It imports no test framework: pass your runner's `describe` and `it`. Failures throw plain
 * `Error`s that say what broke.
 *
 * @example
 * import { describe, it } from 'vitest';
 * import { memoryLayer } from 'bulwark';
 * import { cacheLayerConformance, FakeClock } from 'bulwark/testing';
 *
 * cacheLayerConformance('memory layer', () => {
 *   const clock = new FakeClock(1_000_000);
 *   return { layer: memoryLayer({ maxEntries: 1_000 }), now: () => clock.now(), elapse: (ms) => clock.advance(ms), slackMs: 0 };
 * }, { describe, it });
 */
import type { CacheLayer, LocalCacheLayer, RemoteCacheLayer } from '../cache/store.js';
import { type ConformanceRunner, conformanceChecks, scenarios } from './conformance-runner.js';

/** What one scenario runs against: a fresh layer and its clock. */
export interface CacheLayerFixture {
  /** A layer holding nothing under the keys the suite uses (e.g. a fresh prefix). */
  readonly layer: CacheLayer;
  /** The cache's clock, in ms (a local layer's times are on it; a remote layer ignores it). */
  now(): number;
  /** Lets at least `ms` pass on the layer's clock (`clock.advance(ms)`, or a real sleep). */
  elapse(ms: number): Promise<void>;
  /**
   * How much layer time may pass beyond what the suite asked for while a scenario runs: 0 on a
   * fake clock. The suite's TTLs are at least 4 × this plus 200 ms.
   */
  readonly slackMs: number;
  /** Called after the scenario, pass or fail. */
  close?(): void | Promise<void>;
}

const { fail, equal } = conformanceChecks('cache layer conformance');

const hostileKeys = ['', 'a}b{c', 'ns\u0000key', ' spaced key ', '😀', 'quote\'"`', 'k'.repeat(1_000)];

/** What a read found, the same for both kinds: the value and whether it is still fresh. */
interface Found {
  readonly value: string;
  readonly fresh: boolean;
}

/** Writes `value` for `ttlMs`, then `graceMs` of grace, whatever the layer's kind. */
async function put(f: CacheLayerFixture, key: string, value: string, ttlMs: number, graceMs: number) {
  const { layer } = f;
  if (layer.kind === 'remote') return layer.set(key, value, ttlMs, graceMs);
  const now = f.now();
  layer.set(key, { value, refreshAt: now + ttlMs, staleAt: now + ttlMs, expiresAt: now + ttlMs + graceMs });
}

/** Reads `key`, whatever the layer's kind; fails on an entry of the wrong shape. */
async function find(f: CacheLayerFixture, key: string): Promise<Found | undefined> {
  const { layer } = f;
  if (layer.kind === 'remote') {
    const entry = await layer.get(key);
    if (entry === undefined) return undefined;
    if (typeof entry.payload !== 'string' || !(entry.remainingMs > 0) || !(entry.graceMs >= 0)) {
      fail(`get(${JSON.stringify(key)}): an entry of the wrong shape: ${JSON.stringify(entry)}`);
    }
    return { value: entry.payload, fresh: entry.remainingMs > entry.graceMs };
  }
  const now = f.now();
  const entry = layer.get(key, now);
  if (entry === undefined) return undefined;
  if (!(entry.expiresAt > now)) fail(`get(${JSON.stringify(key)}): an ended entry was returned`);
  return { value: entry.value as string, fresh: entry.staleAt > now };
}

async function drop(f: CacheLayerFixture, key: string): Promise<void> {
  const { layer } = f;
  if (layer.kind === 'remote') await layer.delete(key);
  else layer.delete(key);
}

function expectFound(found: Found | undefined, value: string, fresh: boolean, what: string): void {
  const { value: foundValue, fresh: foundFresh } =
    found ?? fail(`${what}: expected ${JSON.stringify(value)}, found nothing`);
  equal(foundValue, value, `${what}: the value`);
  equal(foundFresh, fresh, `${what}: fresh`);
}

function remote(f: CacheLayerFixture): RemoteCacheLayer | undefined {
  return f.layer.kind === 'remote' ? f.layer : undefined;
}

function local(f: CacheLayerFixture): LocalCacheLayer | undefined {
  return f.layer.kind === 'local' ? f.layer : undefined;
}

/**
 * Registers the cache layer scenarios for `name` under `runner.describe`. `fixture` is called
 * once per scenario.
 *
 * Scenarios: an absent key reads nothing; a value is fresh for its TTL, stale for its grace, then
 * gone; a write replaces value and times; delete drops (and deleting nothing is fine); hostile keys
 * never mix. A local layer: `deletePrefix` drops only its prefix. A remote layer: namespace
 * versions start at 0 and only grow; `set`, `delete` and `bumpVersion` messages reach every
 * subscriber; of many concurrent load claims exactly one wins, a claim ends when its owner releases
 * it (not another owner) or when it expires.
 */
export function cacheLayerConformance(
  name: string,
  fixture: () => CacheLayerFixture | Promise<CacheLayerFixture>,
  runner: ConformanceRunner,
): void {
  runner.describe(`cache layer conformance: ${name}`, () => {
    const scenario = scenarios(runner, fixture);
    const ttlOf = (f: CacheLayerFixture) => 200 + 4 * f.slackMs;

    scenario('an absent key reads nothing', async (f) => {
      if ((await find(f, 'absent')) !== undefined) fail('get of an absent key found an entry');
    });

    scenario('a value is fresh for its TTL, stale for its grace, then gone', async (f) => {
      const ttl = ttlOf(f);
      await put(f, 'k', 'v1', ttl, ttl);
      expectFound(await find(f, 'k'), 'v1', true, 'within the TTL');
      await f.elapse(ttl + f.slackMs);
      expectFound(await find(f, 'k'), 'v1', false, 'past the TTL, within grace');
      await f.elapse(ttl + f.slackMs);
      if ((await find(f, 'k')) !== undefined) fail('past the grace: the entry was still there');
    });

    scenario('an entry without grace is gone at the end of its TTL', async (f) => {
      const ttl = ttlOf(f);
      await put(f, 'k', 'v', ttl, 0);
      expectFound(await find(f, 'k'), 'v', true, 'within the TTL');
      await f.elapse(ttl + f.slackMs);
      if ((await find(f, 'k')) !== undefined) fail('past the TTL: the entry was still there');
    });

    scenario('a write replaces the value and its times', async (f) => {
      const ttl = ttlOf(f);
      await put(f, 'k', 'old', ttl, 0);
      await put(f, 'k', 'new', ttl * 4, 0);
      expectFound(await find(f, 'k'), 'new', true, 'after the second write');
      await f.elapse(ttl + f.slackMs);
      expectFound(await find(f, 'k'), 'new', true, 'past the first TTL');
    });

    scenario('delete drops the entry; deleting an absent key is fine', async (f) => {
      const ttl = ttlOf(f) * 10;
      await put(f, 'k', 'v', ttl, ttl);
      await put(f, 'other', 'w', ttl, ttl);
      await drop(f, 'k');
      await drop(f, 'never written');
      if ((await find(f, 'k')) !== undefined) fail('the deleted key was still there');
      expectFound(await find(f, 'other'), 'w', true, 'another key');
    });

    scenario('hostile keys are independent of each other; values keep every character', async (f) => {
      const ttl = ttlOf(f) * 10;
      for (const [i, key] of hostileKeys.entries()) await put(f, key, `value ${i} 😀\u0000"`, ttl, 0);
      for (const [i, key] of hostileKeys.entries()) {
        expectFound(
          await find(f, key),
          `value ${i} 😀\u0000"`,
          true,
          `key ${JSON.stringify(key).slice(0, 40)}`,
        );
      }
    });

    scenario('a local layer: deletePrefix drops only the keys under the prefix', async (f) => {
      const layer = local(f);
      if (layer === undefined) return;
      const ttl = ttlOf(f) * 10;
      for (const key of ['a\u0000x', 'a\u0000y', 'ab\u0000x', 'b\u0000a']) await put(f, key, key, ttl, 0);
      layer.deletePrefix('a\u0000');
      equal(await find(f, 'a\u0000x'), undefined, 'a\\0x after deletePrefix');
      equal(await find(f, 'a\u0000y'), undefined, 'a\\0y after deletePrefix');
      expectFound(await find(f, 'ab\u0000x'), 'ab\u0000x', true, 'a key with a longer namespace');
      expectFound(await find(f, 'b\u0000a'), 'b\u0000a', true, 'another namespace');
      layer.deletePrefix('');
      equal(layer.size, 0, 'size after deletePrefix of everything');
    });

    scenario('a remote layer: namespace versions start at 0 and only grow', async (f) => {
      const layer = remote(f);
      if (layer === undefined) return;
      equal(await layer.version('ns'), 0, 'the first version');
      equal(await layer.bumpVersion('ns'), 1, 'after one bump');
      equal(await layer.bumpVersion('ns', 'version bumped'), 2, 'after two bumps');
      equal(await layer.version('ns'), 2, 'read back');
      equal(await layer.version('other ns'), 0, 'another namespace');
    });

    scenario('a remote layer: set, delete and bumpVersion messages reach every subscriber', async (f) => {
      const layer = remote(f);
      if (layer === undefined) return;
      const first: string[] = [];
      const second: string[] = [];
      const unsubscribeFirst = layer.subscribe(
        (message) => first.push(message),
        () => {},
      );
      const unsubscribeSecond = layer.subscribe(
        (message) => second.push(message),
        () => {},
      );
      try {
        await f.elapse(100); // a remote subscription settles
        const ttl = ttlOf(f) * 10;
        await layer.set('k', 'v', ttl, 0, 'set k');
        await layer.set('quiet', 'v', ttl, 0);
        await layer.delete('k', 'delete k');
        await layer.delete('quiet');
        await layer.bumpVersion('quiet');
        await layer.bumpVersion('ns', 'version bumped');
        const expected = ['set k', 'delete k', 'version bumped'];
        for (let i = 0; i < 200 && (first.length < 3 || second.length < 3); i++) await f.elapse(10);
        equal(first.join(', '), expected.join(', '), 'the messages of the first subscriber');
        equal(second.join(', '), expected.join(', '), 'the messages of the second subscriber');
        unsubscribeFirst();
        await layer.delete('k', 'after unsubscribe');
        for (let i = 0; i < 200 && second.length < 4; i++) await f.elapse(10);
        equal(second.at(-1), 'after unsubscribe', 'the message after the first unsubscribed');
        equal(first.length, 3, 'messages to an unsubscribed listener');
      } finally {
        unsubscribeFirst();
        unsubscribeSecond();
      }
    });

    scenario(
      'a remote layer: of 50 concurrent load claims exactly one wins; the owner ends it',
      async (f) => {
        const layer = remote(f);
        if (layer === undefined) return;
        const ttl = ttlOf(f) * 10;
        const claims = await Promise.all(
          Array.from({ length: 50 }, (_, i) => layer.claimLoad('k', `owner ${i}`, ttl)),
        );
        const winners = claims.flatMap((won, i) => (won ? [i] : []));
        equal(winners.length, 1, 'winning claims');
        const winner = `owner ${winners[0]}`;
        await layer.releaseLoad('k', 'another owner');
        equal(await layer.claimLoad('k', 'late', ttl), false, 'a claim after another owner released');
        await layer.releaseLoad('k', winner);
        equal(await layer.claimLoad('k', 'late', ttl), true, 'a claim after its owner released');
      },
    );

    scenario('a remote layer: a claim ends when it expires', async (f) => {
      const layer = remote(f);
      if (layer === undefined) return;
      const ttl = ttlOf(f);
      equal(await layer.claimLoad('k', 'a', ttl), true, 'the first claim');
      equal(await layer.claimLoad('k', 'b', ttl), false, 'a second claim while the first lives');
      await f.elapse(ttl + f.slackMs);
      equal(await layer.claimLoad('k', 'b', ttl), true, 'a claim after the first expired');
    });
  });
}
