/**
 * The idempotency store conformance suite: one set of scenarios that every
 * {@link IdempotencyStore} must pass unchanged (the in-memory store on a `FakeClock`, the Redis and
 * PostgreSQL stores on their servers' clocks, PGlite, or your own store). It checks the contract of
 * `idempotency/store.ts`: one owner per key however many claim at once, leases that end, stale
 * owners refused, fingerprints that must match, retention that ends, results kept byte for byte.
 *
 * It imports no test framework: pass your runner's `describe` and `it`. Failures throw plain
 * `Error`s that say what broke.
 *
 * @example
 * import { describe, it } from 'vitest';
 * import { memoryIdempotencyStore } from 'bulwark';
 * import { FakeClock, idempotencyStoreConformance } from 'bulwark/testing';
 *
 * idempotencyStoreConformance('memory store', () => {
 *   const clock = new FakeClock(1_000_000);
 *   return { store: memoryIdempotencyStore({ clock }), elapse: (ms) => clock.advance(ms), slackMs: 0 };
 * }, { describe, it });
 */
import type { ClaimResult, IdempotencyStore } from '../idempotency/store.js';
import { type ConformanceRunner, conformanceChecks, scenarios } from './conformance-runner.js';

/** What one scenario runs against: a fresh store and a way to let time pass on its clock. */
export interface IdempotencyStoreFixture {
  /** A store with no records for the keys the suite uses (e.g. a fresh prefix or schema). */
  readonly store: IdempotencyStore<unknown>;
  /** Lets at least `ms` pass on the store's clock (`clock.advance(ms)`, or a real sleep). */
  elapse(ms: number): Promise<void>;
  /**
   * How much store time may pass beyond what the suite asked for while a scenario runs (round
   * trips, sleep overshoot): 0 on a fake clock. The suite's leases are at least 4 × this plus
   * 200 ms, so a real store's lease never ends by accident mid-scenario.
   */
  readonly slackMs: number;
  /** Called after the scenario, pass or fail. */
  close?(): void | Promise<void>;
}

const { fail, equal, within, eventually } = conformanceChecks('idempotency store conformance');

type Watch = NonNullable<IdempotencyStore<unknown>['watch']>;

function status(result: ClaimResult, expected: ClaimResult['status'], what: string): void {
  if (result === null || typeof result !== 'object')
    fail(`${what}: expected a claim result, got ${String(result)}`);
  if (result.status !== expected) fail(`${what}: expected "${expected}", got ${JSON.stringify(result)}`);
}

function tokenOf(result: ClaimResult, what: string): string {
  status(result, 'claimed', what);
  const { token } = result as { token: unknown };
  if (typeof token !== 'string' || token === '') fail(`${what}: the token must be a non-empty string`);
  return token as string;
}

async function claimed(f: IdempotencyStoreFixture, key: string, fingerprint: string, leaseMs: number) {
  return tokenOf(await f.store.claim(key, fingerprint, leaseMs), `claim of ${JSON.stringify(key)}`);
}

/**
 * Returns once `f.store` (which has a `watch`) is listening: a watcher of a key in progress is woken
 * by its release. A remote store may miss notifications until then and wake its watchers once it
 * listens; past this, only a change of its key wakes a watcher (unless the store reconnects).
 */
async function listening(f: IdempotencyStoreFixture, watch: Watch, leaseMs: number): Promise<void> {
  const token = await claimed(f, 'listening', 'fp', leaseMs * 4);
  status(await f.store.claim('listening', 'fp', leaseMs), 'in_progress', "the first watcher's claim");
  let woken = false;
  const unwatch = watch('listening', () => {
    woken = true;
  });
  try {
    equal(await f.store.release('listening', token), true, 'release of the first watched key');
    await eventually(f.elapse, () => woken, 'release: the first watch never called wake');
  } finally {
    unwatch();
  }
}

const results = [
  '',
  '{"status":201,"body":"ok"}',
  'ünïcödé ✓ 😀 \u0000 "quotes" \\ backslash',
  `{"$bytes":"${'A'.repeat(64)}=="}`,
  'x'.repeat(200_000),
];

const hostileKeys = ['a}b{c', 'tenant:POST:/pay:k', ' spaced key ', '😀', 'quote\'"`', 'k'.repeat(1_000)];

/**
 * Registers the conformance scenarios for `name` under `runner.describe`. `fixture` is called once
 * per scenario and must return a store with no records for the suite's keys.
 *
 * Scenarios: a free key is claimed, then in progress for the same fingerprint and a mismatch for
 * another; 100 concurrent claims give exactly one owner; complete stores a result every later claim
 * gets byte for byte (and a mismatch for another fingerprint); release frees the key; an expired
 * lease is taken over and the stale owner's complete, renew and release are refused; an owner whose
 * lease expired cannot complete even untaken; renew extends the lease; retention ends; tokens are
 * unique; hostile keys are independent; watchers are woken by complete and release (each watch
 * its own watcher, a throwing one ignored).
 */
export function idempotencyStoreConformance(
  name: string,
  fixture: () => IdempotencyStoreFixture | Promise<IdempotencyStoreFixture>,
  runner: ConformanceRunner,
): void {
  const each = scenarios(runner, fixture);
  const scenario = (title: string, body: (f: IdempotencyStoreFixture, lease: number) => Promise<void>) =>
    each(title, (f) => body(f, Math.ceil(4 * f.slackMs + 200)));

  runner.describe(`idempotency store conformance: ${name}`, () => {
    scenario(
      'a free key is claimed; then in progress for its fingerprint, a mismatch for another',
      async (f, lease) => {
        await claimed(f, 'k', 'fp-1', lease);
        const again = await f.store.claim('k', 'fp-1', lease);
        status(again, 'in_progress', 'second claim, same fingerprint');
        within(
          (again as { retryAfterMs: number }).retryAfterMs,
          1,
          lease,
          'retryAfterMs of an in-progress key',
        );
        if (!Number.isInteger((again as { retryAfterMs: number }).retryAfterMs))
          fail('retryAfterMs must be a whole number of milliseconds');
        status(await f.store.claim('k', 'fp-2', lease), 'mismatch', 'claim with another fingerprint');
      },
    );

    scenario(
      '100 concurrent claims of one key: exactly one is claimed, the others see it in progress',
      async (f, lease) => {
        const all = await Promise.all(
          Array.from({ length: 100 }, () => f.store.claim('race', 'fp', lease * 10)),
        );
        const owners = all.filter((r) => r.status === 'claimed').length;
        equal(owners, 1, 'claims that got "claimed"');
        equal(all.filter((r) => r.status === 'in_progress').length, 99, 'claims that got "in_progress"');
      },
    );

    scenario('complete stores the result: every later claim gets it byte for byte', async (f, lease) => {
      for (const [i, result] of results.entries()) {
        const key = `done-${i}`;
        const token = await claimed(f, key, 'fp', lease);
        equal(await f.store.complete(key, token, result, 60_000), true, `complete of ${key}`);
        for (let replay = 0; replay < 2; replay++) {
          const got = await f.store.claim(key, 'fp', lease);
          status(got, 'completed', `claim of completed ${key}`);
          const stored = (got as { result: string }).result;
          if (stored !== result)
            fail(`${key}: the stored result changed (length ${result.length} → ${stored.length})`);
        }
        status(
          await f.store.claim(key, 'other', lease),
          'mismatch',
          `completed ${key} with another fingerprint`,
        );
      }
    });

    scenario('complete twice: the second is refused and the first result stays', async (f, lease) => {
      const token = await claimed(f, 'k', 'fp', lease);
      equal(await f.store.complete('k', token, 'first', 60_000), true, 'first complete');
      equal(await f.store.complete('k', token, 'second', 60_000), false, 'second complete');
      equal(await f.store.release('k', token), false, 'release after complete');
      equal(await f.store.renew('k', token, lease), false, 'renew after complete');
      const got = await f.store.claim('k', 'fp', lease);
      status(got, 'completed', 'claim after two completes');
      equal((got as { result: string }).result, 'first', 'stored result');
    });

    scenario(
      'release frees the key at once, for any fingerprint; the new claim has a new token',
      async (f, lease) => {
        const first = await claimed(f, 'k', 'fp', lease);
        equal(await f.store.release('k', first), true, 'release by the owner');
        const second = await claimed(f, 'k', 'other', lease);
        if (second === first) fail('a new claim reused the released token');
        equal(await f.store.release('k', first), false, 'release with the old token');
        equal(await f.store.complete('k', first, 'stale', 60_000), false, 'complete with the old token');
        equal(await f.store.complete('k', second, 'fresh', 60_000), true, 'complete by the new owner');
      },
    );

    scenario('an expired lease is taken over; the stale owner is refused everything', async (f, lease) => {
      const stale = await claimed(f, 'k', 'fp', lease);
      await f.elapse(lease + 50);
      const successor = await claimed(f, 'k', 'fp', lease * 4);
      if (successor === stale) fail('the takeover reused the stale token');
      equal(await f.store.complete('k', stale, 'stale', 60_000), false, "stale owner's complete");
      equal(await f.store.renew('k', stale, lease), false, "stale owner's renew");
      equal(await f.store.release('k', stale), false, "stale owner's release");
      status(await f.store.claim('k', 'fp', lease), 'in_progress', "the successor's claim is untouched");
      equal(await f.store.complete('k', successor, 'fresh', 60_000), true, "successor's complete");
      const got = await f.store.claim('k', 'fp', lease);
      status(got, 'completed', 'claim after the takeover');
      equal((got as { result: string }).result, 'fresh', 'stored result');
    });

    scenario(
      'an owner whose lease expired cannot complete or renew, even with no successor',
      async (f, lease) => {
        const token = await claimed(f, 'k', 'fp', lease);
        await f.elapse(lease + 50);
        equal(await f.store.complete('k', token, 'late', 60_000), false, 'complete after the lease');
        equal(await f.store.renew('k', token, lease), false, 'renew after the lease');
        await claimed(f, 'k', 'other', lease);
      },
    );

    scenario('renew extends the lease from now', async (f, lease) => {
      const token = await claimed(f, 'k', 'fp', lease);
      await f.elapse(Math.ceil(lease / 2));
      equal(await f.store.renew('k', token, lease * 3), true, 'renew by the owner');
      await f.elapse(lease + 50);
      const during = await f.store.claim('k', 'fp', lease);
      status(during, 'in_progress', 'claim after the first lease would have ended');
      within((during as { retryAfterMs: number }).retryAfterMs, 1, lease * 3, 'retryAfterMs after renew');
      equal(await f.store.complete('k', token, 'done', 60_000), true, 'complete within the renewed lease');
    });

    scenario('retention ends: after ttlMs the key is free again', async (f, lease) => {
      const token = await claimed(f, 'k', 'fp', lease);
      equal(await f.store.complete('k', token, 'r', lease), true, 'complete with a short ttl');
      status(await f.store.claim('k', 'other', lease), 'mismatch', 'within the retention');
      await f.elapse(lease + 50);
      await claimed(f, 'k', 'other', lease);
    });

    scenario('unknown keys and foreign tokens are refused without changing anything', async (f, lease) => {
      equal(await f.store.complete('nothing', 'no-token', 'r', 60_000), false, 'complete of an unknown key');
      equal(await f.store.release('nothing', 'no-token'), false, 'release of an unknown key');
      equal(await f.store.renew('nothing', 'no-token', lease), false, 'renew of an unknown key');
      const token = await claimed(f, 'k', 'fp', lease);
      equal(await f.store.complete('k', `${token}x`, 'r', 60_000), false, 'complete with a foreign token');
      equal(await f.store.release('k', 'other'), false, 'release with a foreign token');
      status(await f.store.claim('k', 'fp', lease), 'in_progress', 'the owner keeps the key');
      await claimed(f, 'nothing', 'fp', lease);
    });

    scenario('tokens are unique across keys and claims', async (f, lease) => {
      const tokens = new Set<string>();
      for (let i = 0; i < 20; i++) {
        const token = await claimed(f, `t${i % 5}`, 'fp', lease);
        tokens.add(token);
        equal(await f.store.release(`t${i % 5}`, token), true, `release ${i}`);
      }
      equal(tokens.size, 20, 'distinct tokens of 20 claims');
    });

    scenario('hostile keys are kept apart', async (f, lease) => {
      const tokens = new Map<string, string>();
      for (const key of hostileKeys) tokens.set(key, await claimed(f, key, 'fp', lease));
      for (const key of hostileKeys)
        equal(
          await f.store.complete(key, tokens.get(key)!, `result of ${key}`, 60_000),
          true,
          `complete ${key}`,
        );
      for (const key of hostileKeys) {
        const got = await f.store.claim(key, 'fp', lease);
        status(got, 'completed', `claim of ${JSON.stringify(key)}`);
        equal((got as { result: string }).result, `result of ${key}`, `result of ${JSON.stringify(key)}`);
      }
    });

    scenario(
      'watchers that saw the key in progress are woken by complete and by release (when the store can watch)',
      async (f, lease) => {
        const watch = f.store.watch?.bind(f.store);
        if (watch === undefined) return;
        await listening(f, watch, lease);
        for (const end of ['complete', 'release'] as const) {
          const key = `watched-${end}`;
          const token = await claimed(f, key, 'fp', lease * 4);
          // As a waiting duplicate does: its claim sees the key in progress, then it watches.
          status(await f.store.claim(key, 'fp', lease), 'in_progress', `the watcher's claim before ${end}`);
          let woken = 0;
          const wake = () => {
            woken += 1;
          };
          // A watcher that throws must not stop the others; the same function watched twice is two
          // watchers, so unwatching one leaves the other.
          const unwatchThrowing = watch(key, () => {
            throw new Error('a watcher that throws');
          });
          const unwatchFirst = watch(key, wake);
          const unwatch = watch(key, wake);
          unwatchFirst();
          try {
            // Nothing wakes a watcher before its key changes (the store listens already).
            await f.elapse(50);
            equal(woken, 0, `wakes before ${end}`);
            if (end === 'complete') await f.store.complete(key, token, 'r', 60_000);
            else await f.store.release(key, token);
            await eventually(f.elapse, () => woken > 0, `${end}: watch never called wake`);
          } finally {
            unwatch();
            unwatchThrowing();
          }
        }
      },
    );
  });
}
