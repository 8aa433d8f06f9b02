/**
 * The lock and fence store conformance suites: scenarios every {@link LockStore} and every fence
 * store must pass unchanged (the in-memory stores on a `FakeClock`, the Redis and PostgreSQL stores
 * on their servers' clocks, PGlite, or your own). They check the contract of `lock/store.ts`: one
 * holder per key however many acquire at once, fences strictly increasing, leases that end and are
 * taken over, stale owners refused, and fences checked at the resource.
 *
 * They import no test framework: pass your runner's `describe` and `it`. Failures throw plain
 * `Error`s that say what broke.
 *
 * @example
 * import { describe, it } from 'vitest';
 * import { memoryLockStore } from 'bulwark';
 * import { FakeClock, lockStoreConformance } from 'bulwark/testing';
 *
 * lockStoreConformance('memory store', () => {
 *   const clock = new FakeClock(1_000_000);
 *   return { store: memoryLockStore({ clock }), elapse: (ms) => clock.advance(ms), slackMs: 0 };
 * }, { describe, it });
 */
import { isStaleFenceError } from '../lock/errors.js';
import type { AcquiredLease, FenceStore, LockStore } from '../lock/store.js';
import { type ConformanceRunner, conformanceChecks, scenarios } from './conformance-runner.js';

/** What one lock scenario runs against: a fresh store and a way to let time pass on its clock. */
export interface LockStoreFixture {
  /** A store with no leases for the keys the suite uses (e.g. a fresh prefix or schema). */
  readonly store: LockStore;
  /** Lets at least `ms` pass on the store's clock (`clock.advance(ms)`, or a real sleep). */
  elapse(ms: number): Promise<void>;
  /**
   * How much store time may pass beyond what the suite asked for while a scenario runs: 0 on a
   * fake clock. The suite's leases are at least 4 × this plus 200 ms.
   */
  readonly slackMs: number;
  /** Called after the scenario, pass or fail. */
  close?(): void | Promise<void>;
}

/** What one fence scenario runs against: a fence store and its write, as plain values. */
export interface FenceStoreFixture {
  /** A store with no fences for the resources the suite uses. */
  readonly store: FenceStore;
  /** Writes `value` to `resource` through the store's `write` with `fence` (rejects as it does). */
  write(resource: string, fence: number, value: string): Promise<void>;
  /** The value last written to `resource`, or undefined. */
  read(resource: string): Promise<string | undefined>;
  /** Called after the scenario, pass or fail. */
  close?(): void | Promise<void>;
}

const lockChecks = conformanceChecks('lock store conformance');
const fenceChecks = conformanceChecks('fence store conformance');

const hostileKeys = ['a}b{c', 'tenant:acct:42', ' spaced key ', '😀', 'quote\'"`', 'k'.repeat(1_000)];

/**
 * Returns once `f.store` (which has a `watch`) is listening: a watcher of a held key is woken by its
 * release. A remote store may miss notifications until then and wake its watchers once it listens;
 * past this, only a release of its key wakes a watcher (unless the store reconnects).
 */
async function listening(f: LockStoreFixture, watch: Watch, ttlMs: number): Promise<void> {
  const { equal, eventually } = lockChecks;
  leaseOf(await f.store.acquire('listening', 'a', ttlMs * 10), 'acquire of the first watched key');
  let woken = false;
  const unwatch = watch('listening', () => {
    woken = true;
  });
  try {
    equal(await f.store.acquire('listening', 'b', ttlMs), undefined, "the first watcher's acquire");
    equal(await f.store.release('listening', 'a'), true, 'release of the first watched key');
    await eventually(f.elapse, () => woken, 'release: the first watch never called wake');
  } finally {
    unwatch();
  }
}

type Watch = NonNullable<LockStore['watch']>;

function leaseOf(result: AcquiredLease | undefined, what: string): AcquiredLease {
  const { fail } = lockChecks;
  if (result === undefined || result === null || typeof result !== 'object')
    fail(`${what}: expected a lease, got ${String(result)}`);
  const lease = result as AcquiredLease;
  if (!Number.isSafeInteger(lease.fence) || lease.fence < 1)
    fail(`${what}: the fence must be a positive safe integer, got ${String(lease.fence)}`);
  if (typeof lease.expiresAt !== 'number' || !Number.isFinite(lease.expiresAt))
    fail(`${what}: expiresAt must be a finite number, got ${String(lease.expiresAt)}`);
  return lease;
}

/**
 * Registers the lock store scenarios for `name` under `runner.describe`. `fixture` is called once
 * per scenario and must return a store with no leases for the suite's keys.
 *
 * Scenarios: a free key is acquired, then refused to anyone (its holder too); 100 concurrent
 * acquisitions give exactly one holder; fences strictly increase over releases and takeovers;
 * release frees at once and only for the holder; an expired lease is taken over and the stale
 * owner's renew and release are refused; renew extends the lease; hostile keys are independent;
 * watchers are woken by release; bad input is a `TypeError`.
 */
export function lockStoreConformance(
  name: string,
  fixture: () => LockStoreFixture | Promise<LockStoreFixture>,
  runner: ConformanceRunner,
): void {
  const { fail, equal, rejectsTypeError, eventually } = lockChecks;
  const each = scenarios(runner, fixture);
  const scenario = (title: string, body: (f: LockStoreFixture, ttl: number) => Promise<void>) =>
    each(title, (f) => body(f, Math.ceil(4 * f.slackMs + 200)));

  runner.describe(`lock store conformance: ${name}`, () => {
    scenario('a free key is acquired; then refused to another owner and to its holder', async (f, ttl) => {
      leaseOf(await f.store.acquire('k', 'a', ttl), 'first acquire');
      equal(await f.store.acquire('k', 'b', ttl), undefined, 'acquire by another owner');
      equal(await f.store.acquire('k', 'a', ttl), undefined, 'acquire again by the holder');
      leaseOf(await f.store.acquire('other', 'b', ttl), 'acquire of another key');
    });

    scenario('100 concurrent acquisitions of one key: exactly one holder', async (f, ttl) => {
      const all = await Promise.all(
        Array.from({ length: 100 }, (_, i) => f.store.acquire('race', `owner-${i}`, ttl * 10)),
      );
      equal(all.filter((l) => l !== undefined).length, 1, 'acquisitions that got the lease');
    });

    scenario('fences strictly increase over releases, owners and takeovers', async (f, ttl) => {
      let last = 0;
      for (let i = 0; i < 20; i++) {
        const owner = `owner-${i % 3}`;
        const { fence } = leaseOf(await f.store.acquire('k', owner, ttl), `acquisition ${i}`);
        if (fence <= last) fail(`acquisition ${i}: fence ${fence} is not above the previous ${last}`);
        last = fence;
        equal(await f.store.release('k', owner), true, `release ${i}`);
      }
      await f.store.acquire('k', 'stale', ttl);
      await f.elapse(ttl + 50);
      const { fence } = leaseOf(await f.store.acquire('k', 'successor', ttl), 'takeover');
      if (fence <= last + 1) fail(`takeover: fence ${fence} is not above the stale holder's`);
    });

    scenario('release frees the key at once, and only for its holder', async (f, ttl) => {
      leaseOf(await f.store.acquire('k', 'a', ttl * 10), 'acquire by a');
      equal(await f.store.release('k', 'b'), false, 'release by another owner');
      equal(await f.store.acquire('k', 'b', ttl), undefined, 'acquire after a refused release');
      equal(await f.store.release('k', 'a'), true, 'release by the holder');
      equal(await f.store.release('k', 'a'), false, 'a second release');
      leaseOf(await f.store.acquire('k', 'b', ttl), 'acquire after the release');
      equal(await f.store.release('never', 'a'), false, 'release of a key never held');
      equal(await f.store.renew('never', 'a', ttl), false, 'renew of a key never held');
    });

    scenario(
      'an expired lease is taken over; the stale owner is refused renew and release',
      async (f, ttl) => {
        leaseOf(await f.store.acquire('k', 'stale', ttl), 'first acquire');
        await f.elapse(ttl + 50);
        leaseOf(await f.store.acquire('k', 'successor', ttl * 4), 'takeover');
        equal(await f.store.renew('k', 'stale', ttl), false, "stale owner's renew");
        equal(await f.store.release('k', 'stale'), false, "stale owner's release");
        equal(
          await f.store.acquire('k', 'third', ttl),
          undefined,
          "acquire while the successor's lease lives",
        );
        equal(await f.store.release('k', 'successor'), true, "successor's release");
      },
    );

    scenario('an owner whose lease expired cannot renew, even with no successor', async (f, ttl) => {
      leaseOf(await f.store.acquire('k', 'a', ttl), 'acquire');
      await f.elapse(ttl + 50);
      equal(await f.store.renew('k', 'a', ttl), false, 'renew after the lease');
      equal(await f.store.release('k', 'a'), false, 'release after the lease');
      leaseOf(await f.store.acquire('k', 'b', ttl), 'acquire of the expired key');
    });

    scenario('renew extends the lease from now', async (f, ttl) => {
      leaseOf(await f.store.acquire('k', 'a', ttl), 'acquire');
      await f.elapse(ttl / 2);
      equal(await f.store.renew('k', 'a', ttl * 2), true, 'renew by the holder');
      await f.elapse(ttl);
      equal(await f.store.acquire('k', 'b', ttl), undefined, 'acquire within the renewed lease');
      equal(await f.store.renew('k', 'b', ttl), false, 'renew by another owner');
      equal(await f.store.release('k', 'a'), true, 'release after renewals');
    });

    scenario('hostile keys are independent of each other', async (f, ttl) => {
      for (const key of hostileKeys) leaseOf(await f.store.acquire(key, 'a', ttl * 10), `acquire of ${key}`);
      for (const key of hostileKeys)
        equal(await f.store.acquire(key, 'b', ttl), undefined, `second acquire of ${key}`);
      for (const key of hostileKeys) equal(await f.store.release(key, 'a'), true, `release of ${key}`);
    });

    scenario(
      'watch wakes a waiter when the key is released (each watch its own; a throwing one ignored)',
      async (f, ttl) => {
        if (f.store.watch === undefined) return;
        await listening(f, f.store.watch.bind(f.store), ttl);
        leaseOf(await f.store.acquire('k', 'a', ttl * 10), 'acquire');
        let woken = 0;
        const wake = () => {
          woken += 1;
        };
        // A watcher that throws must not stop the others; the same function watched twice is two
        // watchers, so unwatching one leaves the other.
        const unwatchThrowing = f.store.watch('k', () => {
          throw new Error('a watcher that throws');
        });
        const unwatchFirst = f.store.watch('k', wake);
        const unwatch = f.store.watch('k', wake);
        unwatchFirst();
        try {
          // As a waiter does: it watches, then its acquisition is refused.
          equal(await f.store.acquire('k', 'b', ttl), undefined, "the watcher's acquire");
          // Nothing wakes a watcher before its key is released (the store listens already).
          await f.elapse(50);
          equal(woken, 0, 'wakes before release');
          equal(await f.store.release('k', 'a'), true, 'release');
          await eventually(f.elapse, () => woken > 0, 'release: watch never called wake');
        } finally {
          unwatch();
          unwatchThrowing();
        }
      },
    );

    scenario('bad input is a TypeError', async (f, ttl) => {
      await rejectsTypeError(() => f.store.acquire('', 'a', ttl), 'an empty key');
      await rejectsTypeError(() => f.store.acquire('k', '', ttl), 'an empty owner');
      await rejectsTypeError(() => f.store.acquire('k', 'a', 0), 'a zero ttlMs');
      await rejectsTypeError(() => f.store.acquire('k', 'a', 1.5), 'a fractional ttlMs');
      await rejectsTypeError(() => f.store.acquire('\uD800', 'a', ttl), 'a lone surrogate');
      await rejectsTypeError(() => f.store.renew('k', 'a', -1), 'a negative renewal');
    });
  });
}

/**
 * Registers the fence store scenarios for `name` under `runner.describe`. `fixture` is called once
 * per scenario.
 *
 * Scenarios: any first fence writes; a higher one writes; the same one writes again; a lower one
 * is refused with `StaleFenceError` (and the value stays); of many concurrent writers the highest
 * fence's value is what stays; resources are independent; bad input is a `TypeError`.
 */
export function fenceStoreConformance(
  name: string,
  fixture: () => FenceStoreFixture | Promise<FenceStoreFixture>,
  runner: ConformanceRunner,
): void {
  const { fail, equal, rejectsTypeError } = fenceChecks;
  const scenario = scenarios(runner, fixture);
  const stale = async (f: FenceStoreFixture, resource: string, fence: number, highest: number) => {
    let error: unknown;
    try {
      await f.write(resource, fence, `stale ${fence}`);
    } catch (e) {
      error = e;
    }
    if (!isStaleFenceError(error))
      fail(`write with fence ${fence} under ${highest}: expected StaleFenceError, got ${String(error)}`);
    const refused = error as { highest: number; fence: number };
    equal(refused.highest, highest, 'StaleFenceError.highest');
    equal(refused.fence, fence, 'StaleFenceError.fence');
  };

  runner.describe(`fence store conformance: ${name}`, () => {
    scenario('a higher or equal fence writes; a lower one is refused and the value stays', async (f) => {
      equal(await f.store.highest('r'), undefined, 'highest fence of a new resource');
      await f.write('r', 1_700_000_000_000_005, 'five');
      await f.write('r', 1_700_000_000_000_007, 'seven');
      await f.write('r', 1_700_000_000_000_007, 'seven again');
      await stale(f, 'r', 1_700_000_000_000_006, 1_700_000_000_000_007);
      equal(await f.read('r'), 'seven again', 'value after a refused write');
      equal(await f.store.highest('r'), 1_700_000_000_000_007, 'highest fence');
      await stale(f, 'r', 0, 1_700_000_000_000_007);
    });

    scenario('of 50 concurrent writers in shuffled order, the highest fence’s value stays', async (f) => {
      const fences = Array.from({ length: 50 }, (_, i) => i + 1).sort(
        (a, b) => ((a * 7919) % 50) - ((b * 7919) % 50),
      );
      const outcomes = await Promise.allSettled(fences.map((fence) => f.write('race', fence, `v${fence}`)));
      for (const outcome of outcomes) {
        if (outcome.status === 'rejected' && !isStaleFenceError(outcome.reason))
          fail(`a concurrent write failed with ${String(outcome.reason)}`);
      }
      equal(await f.read('race'), 'v50', 'value after the race');
      equal(await f.store.highest('race'), 50, 'highest fence after the race');
    });

    scenario('resources are independent', async (f) => {
      for (const [i, resource] of hostileKeys.entries()) await f.write(resource, 100 - i, `v${i}`);
      for (const [i, resource] of hostileKeys.entries())
        equal(await f.read(resource), `v${i}`, `value of ${resource}`);
      await f.write('fresh', 1, 'low fence elsewhere');
    });

    scenario('bad input is a TypeError', async (f) => {
      await rejectsTypeError(() => f.write('', 1, 'v'), 'an empty resource');
      await rejectsTypeError(() => f.write('r', -1, 'v'), 'a negative fence');
      await rejectsTypeError(() => f.write('r', 1.5, 'v'), 'a fractional fence');
      await rejectsTypeError(() => f.write('r', 2 ** 53, 'v'), 'a fence past 2^53');
    });
  });
}
