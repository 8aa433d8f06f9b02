/**
 * The in-memory idempotency store: the default of `idempotency()` and the reference behaviour of
 * the store contract (`store.ts`), for one process. Records live in a `Map`, expire on the store's
 * `clock`, and are bounded by `maxKeys`.
 */

import type { Clock } from '../core/clock.js';
import { StoreUnavailableError } from '../core/errors.js';
import { KeyedWakers } from '../core/keyed-wakers.js';
import { clockField, positiveInt, readOptions, type Schema, withDefault } from '../core/read-options.js';
import type { ClaimResult, IdempotencyStore } from './store.js';

/** Options of {@link memoryIdempotencyStore}. */
export interface MemoryIdempotencyStoreOptions {
  /**
   * Most records kept. When full, expired records go first, then the oldest completed ones (their
   * replays are lost, never their exclusivity); a claim that would evict an in-progress record
   * rejects with `StoreUnavailableError` instead.
   * @default 100_000
   */
  readonly maxKeys?: number | undefined;
  /** The clock leases and retention are measured on. @default systemClock */
  readonly clock?: Clock | undefined;
}

const schema = {
  maxKeys: withDefault(100_000, positiveInt),
  clock: clockField,
} satisfies Schema<MemoryIdempotencyStoreOptions>;

interface MemoryRecord {
  readonly fingerprint: string;
  /** The owner's token while in progress; undefined once completed. */
  readonly token: string | undefined;
  readonly result: string | undefined;
  expiresAt: number;
}

/** The in-memory idempotency store, from {@link memoryIdempotencyStore}. */
export interface MemoryIdempotencyStore extends IdempotencyStore {
  /** Records held now (expired ones not yet swept included). */
  readonly size: number;
  /** Keys with at least one watcher now (each unwatch that leaves a key with none drops it). */
  readonly watched: number;
  watch(key: string, wake: () => void): () => void;
}

class MemoryStore implements MemoryIdempotencyStore {
  // Insertion order is the eviction order: a completed record is re-inserted when it completes.
  private readonly records = new Map<string, MemoryRecord>();
  private readonly wakers = new KeyedWakers();

  constructor(
    private readonly maxKeys: number,
    private readonly clock: Clock,
  ) {}

  get size(): number {
    return this.records.size;
  }

  get watched(): number {
    return this.wakers.size;
  }

  async claim(key: string, fingerprint: string, leaseMs: number): Promise<ClaimResult> {
    const now = this.clock.now();
    const record = this.live(key, now);
    if (record !== undefined) {
      if (record.fingerprint !== fingerprint) return { status: 'mismatch' };
      if (record.token === undefined) return { status: 'completed', result: record.result! };
      return { status: 'in_progress', retryAfterMs: Math.max(1, Math.ceil(record.expiresAt - now)) };
    }
    this.makeRoom(now);
    const token = crypto.randomUUID();
    this.records.set(key, { fingerprint, token, result: undefined, expiresAt: now + leaseMs });
    return { status: 'claimed', token };
  }

  async complete(key: string, token: string, result: string, ttlMs: number): Promise<boolean> {
    const now = this.clock.now();
    const record = this.owned(key, token, now);
    if (record === undefined) return false;
    this.records.delete(key);
    this.records.set(key, {
      fingerprint: record.fingerprint,
      token: undefined,
      result,
      expiresAt: now + ttlMs,
    });
    this.wake(key);
    return true;
  }

  async release(key: string, token: string): Promise<boolean> {
    if (this.owned(key, token, this.clock.now()) === undefined) return false;
    this.records.delete(key);
    this.wake(key);
    return true;
  }

  async renew(key: string, token: string, leaseMs: number): Promise<boolean> {
    const now = this.clock.now();
    const record = this.owned(key, token, now);
    if (record === undefined) return false;
    record.expiresAt = now + leaseMs;
    return true;
  }

  watch(key: string, wake: () => void): () => void {
    return this.wakers.add(key, wake);
  }

  /** The key's record if it has not expired (an expired one is dropped). */
  private live(key: string, now: number): MemoryRecord | undefined {
    const record = this.records.get(key);
    if (record === undefined || record.expiresAt > now) return record;
    this.records.delete(key);
    return undefined;
  }

  /** The key's record if `token` owns its unexpired lease. */
  private owned(key: string, token: string, now: number): MemoryRecord | undefined {
    const record = this.live(key, now);
    // A completed record has no token, and a token is never undefined.
    return record?.token === token ? record : undefined;
  }

  private makeRoom(now: number): void {
    // Stryker disable next-line ConditionalExpression: (false) sweeping when there is room changes no decision, it only costs time
    if (this.records.size < this.maxKeys) return;
    for (const [key, record] of this.records) if (record.expiresAt <= now) this.records.delete(key);
    if (this.records.size < this.maxKeys) return;
    for (const [key, record] of this.records) {
      if (record.token === undefined) {
        this.records.delete(key);
        return;
      }
    }
    throw new StoreUnavailableError(
      `the memory idempotency store is full: ${this.maxKeys} requests in progress (maxKeys)`,
    );
  }

  private wake(key: string): void {
    // Stryker disable next-line ConditionalExpression: (true) waking a key nobody watches does nothing; the check only saves the microtask
    if (this.wakers.has(key)) queueMicrotask(() => this.wakers.wake(key));
  }
}

/**
 * An in-memory idempotency store for one process: the default store of `idempotency()`. Atomic
 * because JavaScript runs one call at a time; leases and retention on `clock`. Pass one store to
 * every `idempotency()` that must share keys. Throws a `TypeError` for a bad option.
 *
 * @example
 * const store = memoryIdempotencyStore({ maxKeys: 10_000 });
 * const payments = idempotency({ store });
 */
export function memoryIdempotencyStore(options?: MemoryIdempotencyStoreOptions): MemoryIdempotencyStore {
  const { maxKeys, clock } = readOptions('memoryIdempotencyStore options', options, schema);
  return new MemoryStore(maxKeys, clock);
}
