/**
 * The in-memory lock and fence stores: the defaults of `distributedLock()` and the reference
 * behaviour every other store's conformance suite is held to. Single process only.
 */

import type { Clock } from '../core/clock.js';
import { KeyedWakers } from '../core/keyed-wakers.js';
import { clockField, readOptions, type Schema } from '../core/read-options.js';
import { show, storeKey } from '../core/validate.js';
import { StaleFenceError } from './errors.js';
import type { AcquiredLease, FenceStore, LockStore } from './store.js';

/** Options of {@link memoryLockStore}. */
export interface MemoryLockStoreOptions {
  /** The clock leases expire on (the store's clock is authoritative). @default systemClock */
  readonly clock?: Clock | undefined;
}

const schema = { clock: clockField } satisfies Schema<MemoryLockStoreOptions>;

/** How many acquisitions between two sweeps of expired leases (so an abandoned key is not kept forever). */
const SWEEP_EVERY = 1_024;

interface Lease {
  /** The holder, or undefined once released (the entry then only keeps the last fence). */
  owner: string | undefined;
  fence: number;
  expiresAt: number;
}

/** `ttlMs` as a lease length: a positive safe integer. */
export function leaseMs(name: string, value: unknown): number {
  if (!Number.isSafeInteger(value) || (value as number) < 1) {
    throw new TypeError(`expected "${name}" to be a positive safe integer, got ${show(value)}`);
  }
  return value as number;
}

/** A fence as a resource takes it: a non-negative safe integer. */
export function fenceValue(value: unknown): number {
  if (!Number.isSafeInteger(value) || (value as number) < 0) {
    throw new TypeError(`expected "fence" to be a non-negative safe integer, got ${show(value)}`);
  }
  return value as number;
}

/**
 * The in-memory lock store, from {@link memoryLockStore}. Leases expire on its `clock`; the fence
 * of a key is `max(last + 1, clock µs)`. A released key's entry is dropped once the clock has
 * passed its fence (the floor alone then keeps fences increasing); expired, never-released leases
 * are swept every 1,024 acquisitions. `watch` wakes on release, in a microtask.
 */
export class MemoryLockStore implements LockStore {
  readonly timeoutMs = 0;
  private readonly leases = new Map<string, Lease>();
  private readonly wakers = new KeyedWakers();
  private acquisitions = 0;

  constructor(private readonly clock: Clock) {}

  acquire(key: string, owner: string, ttlMs: number): Promise<AcquiredLease | undefined> {
    try {
      storeKey('key', key);
      storeKey('owner', owner);
      leaseMs('ttlMs', ttlMs);
    } catch (error) {
      return Promise.reject(error);
    }
    const now = this.clock.now();
    // Stryker disable next-line UpdateOperator: (--) a count down reaches the multiples of SWEEP_EVERY as often (-1024 % 1024 is -0)
    if (++this.acquisitions % SWEEP_EVERY === 0) this.sweep(now);
    const lease = this.leases.get(key);
    if (lease?.owner !== undefined && lease.expiresAt > now) return Promise.resolve(undefined);
    const fence = Math.max((lease?.fence ?? 0) + 1, Math.floor(now * 1_000));
    const expiresAt = now + ttlMs;
    this.leases.set(key, { owner, fence, expiresAt });
    return Promise.resolve({ fence, expiresAt });
  }

  renew(key: string, owner: string, ttlMs: number): Promise<boolean> {
    try {
      leaseMs('ttlMs', ttlMs);
    } catch (error) {
      return Promise.reject(error);
    }
    const lease = this.held(key, owner);
    if (lease === undefined) return Promise.resolve(false);
    lease.expiresAt = this.clock.now() + ttlMs;
    return Promise.resolve(true);
  }

  release(key: string, owner: string): Promise<boolean> {
    const lease = this.held(key, owner);
    if (lease === undefined) return Promise.resolve(false);
    lease.owner = undefined;
    if (Math.floor(this.clock.now() * 1_000) > lease.fence) this.leases.delete(key);
    // Stryker disable next-line ConditionalExpression: (true) waking a key nobody watches does nothing; the check only saves the microtask
    if (this.wakers.has(key)) queueMicrotask(() => this.wakers.wake(key));
    return Promise.resolve(true);
  }

  watch(key: string, wake: () => void): () => void {
    return this.wakers.add(key, wake);
  }

  /** The unexpired lease `owner` holds on `key`, if any. */
  private held(key: string, owner: string): Lease | undefined {
    const lease = this.leases.get(key);
    return lease !== undefined && lease.owner === owner && lease.expiresAt > this.clock.now()
      ? lease
      : undefined;
  }

  private sweep(now: number): void {
    const floor = Math.floor(now * 1_000);
    for (const [key, lease] of this.leases) {
      if ((lease.owner === undefined || lease.expiresAt <= now) && floor > lease.fence)
        this.leases.delete(key);
    }
  }
}

/**
 * The in-memory lock store: the default of `distributedLock()`, for one process (and for tests,
 * with a `FakeClock`). Throws a `TypeError` for a bad or unknown option.
 *
 * @example
 * const clock = new FakeClock();
 * const locks = distributedLock({ store: memoryLockStore({ clock }), clock });
 */
export function memoryLockStore(options?: MemoryLockStoreOptions): MemoryLockStore {
  return new MemoryLockStore(readOptions('memoryLockStore options', options, schema).clock);
}

const settled = (): void => {};

/**
 * The in-memory fence store, from {@link memoryFenceStore}: `write(resource, fence, apply)` runs
 * `apply()` only if `fence` is not lower than the highest that wrote to `resource`, and records
 * `fence` when `apply` resolves (a rejected `apply` records nothing, like a rolled-back
 * transaction). Writes to one resource run one at a time, in call order, so the check and the
 * write cannot interleave with another writer's.
 */
export class MemoryFenceStore implements FenceStore {
  private readonly fences = new Map<string, number>();
  private readonly queues = new Map<string, Promise<void>>();

  /**
   * Runs `apply()` if `fence` is the highest yet for `resource` (or equal to it), and resolves with
   * its value; rejects with `StaleFenceError` (and `apply` does not run) for a lower fence, and with
   * `apply`'s error when it rejects.
   */
  write<T>(resource: string, fence: number, apply: () => T | Promise<T>): Promise<T> {
    try {
      storeKey('resource', resource);
      fenceValue(fence);
      if (typeof apply !== 'function')
        throw new TypeError(`expected "apply" to be a function, got ${show(apply)}`);
    } catch (error) {
      return Promise.reject(error);
    }
    const run = async (): Promise<T> => {
      const highest = this.fences.get(resource);
      // Stryker disable next-line ConditionalExpression: (true) a fence compared with undefined is never lower, so the check only spells out the first write
      if (highest !== undefined && fence < highest) throw new StaleFenceError(resource, fence, highest);
      const value = await apply();
      this.fences.set(resource, fence);
      return value;
    };
    const previous = this.queues.get(resource);
    const result = previous === undefined ? run() : previous.then(run);
    const tail = result.then(settled, settled);
    this.queues.set(resource, tail);
    tail.then(() => {
      if (this.queues.get(resource) === tail) this.queues.delete(resource);
    });
    return result;
  }

  highest(resource: string): Promise<number | undefined> {
    try {
      storeKey('resource', resource);
    } catch (error) {
      return Promise.reject(error);
    }
    return Promise.resolve(this.fences.get(resource));
  }
}

/**
 * The in-memory fence store: for tests and for resources in the same process as their writers.
 *
 * @example
 * const fences = memoryFenceStore();
 * await locks.withLock('account:42', ({ fence }) =>
 *   fences.write('account:42', fence, () => balances.set('42', next)),
 * );
 */
export function memoryFenceStore(): MemoryFenceStore {
  return new MemoryFenceStore();
}
