/**
 * `distributedLock()`: mutual exclusion across processes for a critical section, with a fence.
 * Acquire (waiting up to `waitMs`, woken early by the store where it can tell), run `fn` while
 * the lease is renewed every `ttlMs / 3`, abort `fn`'s signal the moment the lease may be lost,
 * release on exit. The fence goes to the resource, which refuses a stale one: a lease alone is
 * not mutual exclusion (docs/locks-and-fencing.md).
 */
import { randomUUID } from 'node:crypto';
import { type Disposer, type Listener, Listeners } from '../core/events.js';
import { driftMarginMs, LeaseKeeper } from '../core/lease-keeper.js';
import { FIRST_POLL_MS, PollingWait, type Watch } from '../core/polling-wait.js';
import { countEvent } from '../core/telemetry.js';
import { show, storeKey } from '../core/validate.js';
import { isStaleFenceError, LockLostError, LockNotAcquiredError } from './errors.js';
import { type Held, HeldContext, type LockContext, type MultiLockContext } from './held.js';
import { memoryLockStore } from './memory-store.js';
import {
  type DistributedLockOptions,
  type LockAcquiredEvent,
  type LockLostEvent,
  type LockReleaseFailedEvent,
  type ReadDistributedLockOptions,
  readDistributedLockOptions,
  readWithLockOptions,
  type WithLockOptions,
} from './options.js';
import type { LockStore } from './store.js';

/** A distributed lock, from {@link distributedLock}. */
export interface DistributedLock {
  /** The instance's name, in events. */
  readonly name: string;
  /**
   * Runs `fn` holding `key`: waits for the lock up to `waitMs`, then runs `fn({ signal, fence })`
   * with the lease renewed every `ttlMs / 3`, and releases on exit. Resolves with `fn`'s value.
   *
   * Rejects with `LockNotAcquiredError` when the lock stayed held for `waitMs` (`fn` did not run);
   * `LockLostError` when the lease was lost while `fn` ran (`fn`'s signal was aborted at that
   * moment; the call rejects even if `fn` then resolved); the caller's abort reason when its
   * signal aborts while waiting; `StoreUnavailableError` when the store fails while acquiring
   * (`fn` did not run); `fn`'s own error otherwise (a failed release never masks it: it is
   * reported through `onReleaseFailed`). Throws a `TypeError` for an empty or malformed key or a
   * bad option (a `ttlMs` under max(300 ms, 3 × the store's deadline)) before anything runs.
   */
  withLock<T>(
    key: string,
    fn: (context: LockContext) => T | Promise<T>,
    options?: WithLockOptions,
  ): Promise<T>;
  /**
   * Runs `fn` holding every key of `keys` (de-duplicated): acquires them one by one in sorted
   * order (so two callers with the same keys in any order never deadlock), all or nothing (when
   * one is not acquired within `waitMs` — one budget for all — those taken are released, in
   * reverse), then runs `fn({ signal, fences })` and releases in reverse order. Fails as
   * {@link withLock}; `signal` aborts when any lease is lost.
   */
  withLocks<T>(
    keys: readonly string[],
    fn: (context: MultiLockContext) => T | Promise<T>,
    options?: WithLockOptions,
  ): Promise<T>;
  /** Subscribes to acquisitions; returns the disposer. */
  onLockAcquired(listener: Listener<LockAcquiredEvent>): Disposer;
  /** Subscribes to lost locks (`fn`'s signal was aborted); returns the disposer. */
  onLockLost(listener: Listener<LockLostEvent>): Disposer;
  /** Subscribes to releases that failed after `fn` settled; returns the disposer. */
  onReleaseFailed(listener: Listener<LockReleaseFailedEvent>): Disposer;
}

type CallOptions = ReturnType<typeof readWithLockOptions>;

class DistributedLockImpl implements DistributedLock {
  readonly name: string;
  private readonly store: LockStore;
  private readonly watch: Watch | undefined;
  private readonly acquired = new Listeners<LockAcquiredEvent>();
  private readonly lostLocks = new Listeners<LockLostEvent>();
  private readonly releaseFailures = new Listeners<LockReleaseFailedEvent>();
  private readonly ownerPrefix = `${randomUUID()}:`;
  private owners = 0;

  constructor(private readonly o: ReadDistributedLockOptions) {
    this.name = o.name;
    this.store = o.store ?? memoryLockStore({ clock: o.clock });
    this.watch = this.store.watch?.bind(this.store);
    if (o.onLockAcquired) this.acquired.add(o.onLockAcquired);
    if (o.onLockLost) this.lostLocks.add(o.onLockLost);
    if (o.onReleaseFailed) this.releaseFailures.add(o.onReleaseFailed);
  }

  async withLock<T>(
    key: string,
    fn: (context: LockContext) => T | Promise<T>,
    options?: WithLockOptions,
  ): Promise<T> {
    storeKey('key', key);
    checkFn(fn);
    const o = readWithLockOptions(options, this.store);
    const owner = this.nextOwner();
    // One key: nothing taken before it to give back if the acquisition fails.
    const started = this.o.clock.now();
    const held = await this.acquire(key, owner, o, started, started);
    return this.runHeld([held], owner, () => fn(new HeldContext(held)));
  }

  async withLocks<T>(
    keys: readonly string[],
    fn: (context: MultiLockContext) => T | Promise<T>,
    options?: WithLockOptions,
  ): Promise<T> {
    if (!Array.isArray(keys) || keys.length === 0) {
      throw new TypeError(`expected "keys" to be a non-empty array of keys, got ${show(keys)}`);
    }
    for (const key of keys) storeKey('keys[]', key);
    checkFn(fn);
    const o = readWithLockOptions(options, this.store);
    // Code-unit order: the same for every process, whatever its locale.
    const sorted = [...new Set(keys)].sort();
    const owner = this.nextOwner();
    const held = await this.acquireAll(sorted, owner, o);
    const fences = new Map(held.map((h) => [h.key, h.fence]));
    const signal = AbortSignal.any(held.map((h) => h.keeper.signal));
    return this.runHeld(held, owner, () => fn({ signal, fences }));
  }

  /**
   * A fresh owner id: this instance's random prefix and a counter, unique across processes and
   * calls alike, and cheaper than a UUID per call (owners are not secrets: they tell holders apart).
   */
  private nextOwner(): string {
    // Stryker disable next-line UpdateOperator: (--) counting down gives unique ids as well
    return this.ownerPrefix + (this.owners++).toString(36);
  }

  onLockAcquired(listener: Listener<LockAcquiredEvent>): Disposer {
    return this.acquired.add(listener);
  }

  onLockLost(listener: Listener<LockLostEvent>): Disposer {
    return this.lostLocks.add(listener);
  }

  onReleaseFailed(listener: Listener<LockReleaseFailedEvent>): Disposer {
    return this.releaseFailures.add(listener);
  }

  /** Acquires `keys` in order, all or nothing: on any failure those taken are released, in reverse. */
  private async acquireAll(keys: readonly string[], owner: string, o: CallOptions): Promise<Held[]> {
    const started = this.o.clock.now();
    const held: Held[] = [];
    try {
      for (const key of keys) {
        // An earlier key lost while a later one was awaited fails the call in runHeld: fn never starts.
        held.push(await this.acquire(key, owner, o, started));
      }
      return held;
    } catch (error) {
      await this.releaseAll(held, owner);
      throw error;
    }
  }

  /**
   * Acquires one key, waiting until `started + waitMs`; its lease keeper starts at once. `sentAt`:
   * when the first try goes out (`withLock` passes `started`, read just before).
   */
  private async acquire(
    key: string,
    owner: string,
    o: CallOptions,
    started: number,
    sentAt = this.o.clock.now(),
  ): Promise<Held> {
    const { clock } = this.o;
    let wait: PollingWait | undefined;
    try {
      for (;;) {
        if (o.signal?.aborted) throw o.signal.reason;
        const lease = await this.store.acquire(key, owner, o.ttlMs);
        if (lease !== undefined) {
          if (o.signal?.aborted) {
            // The caller left while the acquisition was in flight: give the lease back at once.
            await this.release(key, owner);
            throw o.signal.reason;
          }
          const held = this.hold(key, owner, lease.fence, sentAt, o);
          countEvent('lock_acquired', 'lock', this.name);
          // Stryker disable next-line ConditionalExpression: (true) emitting with no listener does nothing; the check only skips building the event
          if (this.acquired.active)
            this.acquired.emit({
              policy: this.name,
              key,
              fence: lease.fence,
              waitedMs: clock.now() - started,
            });
          return held;
        }
        // Past waitMs (or waitMs 0: one try) nothing waits, and nothing watches.
        if (clock.now() >= started + o.waitMs) {
          throw new LockNotAcquiredError(key, clock.now() - started, wait?.pollDelayMs ?? FIRST_POLL_MS);
        }
        wait ??= new PollingWait(this.watch, key, clock, started + o.waitMs, this.o.random);
        await wait.next(Number.POSITIVE_INFINITY, o.signal);
        sentAt = clock.now();
      }
    } finally {
      wait?.close();
    }
  }

  /** Starts keeping an acquired key's lease: renewed every ttl/3, lost on the first doubt. */
  private hold(key: string, owner: string, fence: number, sentAt: number, o: CallOptions): Held {
    const keeper = new LeaseKeeper({
      leaseMs: o.ttlMs,
      clock: this.o.clock,
      sentAt,
      marginMs: driftMarginMs(o.ttlMs),
      signal: o.signal,
      renew: () => this.store.renew(key, owner, o.ttlMs),
      lostError: (cause) => new LockLostError(key, cause),
      onLost: (reason, error) => {
        countEvent('lock_lost', 'lock', this.name, error);
        // Stryker disable next-line ConditionalExpression: (true) emitting with no listener does nothing; the check only skips building the event
        if (this.lostLocks.active) this.lostLocks.emit({ policy: this.name, key, reason, error });
      },
    });
    return { key, fence, keeper };
  }

  /** Runs `run` with every key held (counting a stale fenced write it threw); stops renewing, releases. */
  private async runHeld<T>(held: readonly Held[], owner: string, run: () => T | Promise<T>): Promise<T> {
    let value: T;
    try {
      // The caller may have left, or a lease been lost, between the acquisition and now.
      for (const h of held) if (h.keeper.aborted) throw h.keeper.signal.reason;
      value = await run();
    } catch (error) {
      if (isStaleFenceError(error)) countEvent('stale_fence', 'lock', this.name, error);
      await this.finish(held, owner);
      const lost = lostOf(held);
      throw lost === undefined ? error : lost.keeper.error(error);
    }
    await this.finish(held, owner);
    const lost = lostOf(held);
    if (lost !== undefined) throw lost.keeper.error();
    return value;
  }

  /** Stops every keeper, then releases every key (one key: no loop of its own). */
  private finish(held: readonly Held[], owner: string): Promise<void> {
    for (const h of held) h.keeper.stop();
    // Stryker disable next-line ConditionalExpression,EqualityOperator: releaseAll releases one key the same way; this only spares it a frame
    return held.length === 1 ? this.release(held[0]!.key, owner) : this.releaseAll(held, owner);
  }

  /** Releases `held` in reverse order; a failure is reported, never thrown. */
  private async releaseAll(held: readonly Held[], owner: string): Promise<void> {
    for (let i = held.length - 1; i >= 0; i--) {
      const { key, keeper } = held[i]!;
      keeper.stop();
      await this.release(key, owner);
    }
  }

  /** Releases one key; a failure is reported through `onReleaseFailed`, never thrown. */
  private async release(key: string, owner: string): Promise<void> {
    try {
      await this.store.release(key, owner);
    } catch (error) {
      // Stryker disable next-line ConditionalExpression: (true) emitting with no listener does nothing; the check only skips building the event
      if (this.releaseFailures.active) this.releaseFailures.emit({ policy: this.name, key, error });
    }
  }
}

/** The first of `held` whose lease was lost, if any. */
function lostOf(held: readonly Held[]): Held | undefined {
  return held.find((h) => h.keeper.lost !== undefined);
}

function checkFn(fn: unknown): void {
  if (typeof fn !== 'function') throw new TypeError(`expected "fn" to be a function, got ${show(fn)}`);
}

/**
 * A distributed lock over `store` (default: in memory, one process). Each `withLock` call takes a
 * fresh owner id, so two calls of one process exclude each other as two processes do. Throws a
 * `TypeError` for a bad or unknown option.
 *
 * @example
 * const stores = redisStores(redis);
 * const locks = distributedLock({ store: stores.lock });
 * await locks.withLock(`account:${id}`, async ({ signal, fence }) => {
 *   const balance = await readBalance(id, { signal });
 *   await stores.fence.write(`account:${id}`, fence, String(balance - amount));
 * }, { ttlMs: 10_000, waitMs: 2_000 });
 */
export function distributedLock(options?: DistributedLockOptions): DistributedLock {
  return new DistributedLockImpl(readDistributedLockOptions(options));
}
