/**
 * The cache layer contracts: where a read-through cache keeps its values. A cache has one local
 * layer, L1 (`memoryLayer`, in this folder: bounded, in process, synchronous, holding the values
 * themselves), and optionally one remote layer, L2 (`redisStores(client).cacheLayer`: shared by
 * every process, holding serialized payloads). Both pass `cacheLayerConformance` from
 * `bulwark/testing`.
 *
 * - **Times.** An entry is *fresh* for its TTL, then *stale* for its grace (served only when a load
 *   fails), then gone. L1 keeps absolute times on the cache's clock, which the cache passes in;
 *   L2 keeps the entry's end on the server (`PX`), so no client clock is written to shared state,
 *   and answers with what is left of it, in ms.
 * - **Keys** are the cache's, already namespaced (`<namespace>\u0000<key>` in L1; in L2 with the
 *   namespace's version too, so that `clear(namespace)` is one `INCR`, not a `SCAN`). Any string.
 * - **Failure.** L1 never fails. L2 rejects (`StoreUnavailableError`, within its deadline
 *   `timeoutMs`) when it cannot answer; the cache counts that as a miss and reports it, never as a
 *   value or an absent key in disguise.
 */

/** One L1 entry: the value itself and its times, in ms on the cache's clock. */
export interface LocalCacheEntry {
  /** The value, as the loader gave it (not a copy). */
  readonly value: unknown;
  /** From then on a read refreshes the entry in the background (`earlyRefresh`); ≤ `staleAt`. */
  readonly refreshAt: number;
  /** When the TTL ends: from then on a read loads anew, serving this value only if that fails. */
  readonly staleAt: number;
  /** When the grace ends: the entry is gone. */
  readonly expiresAt: number;
}

/** The local layer (L1): synchronous, bounded, in process. */
export interface LocalCacheLayer {
  /** `'local'`: what tells L1 from L2. */
  readonly kind: 'local';
  /** The entry of `key`, unless absent or ended (`expiresAt <= now`; an ended entry is dropped). */
  get(key: string, now: number): LocalCacheEntry | undefined;
  /** Keeps `entry` under `key` (the least recently used entry makes room when the layer is full). */
  set(key: string, entry: LocalCacheEntry): void;
  /** Drops `key`'s entry. */
  delete(key: string): void;
  /** Drops every entry whose key starts with `prefix` (every entry for `''`). */
  deletePrefix(prefix: string): void;
  /** How many entries the layer holds (ended ones included until read or evicted). */
  readonly size: number;
}

/** One L2 entry, as read. */
export interface RemoteCacheEntry {
  /** What the cache wrote (its serialized value). */
  readonly payload: string;
  /** The grace the entry was written with, in ms: it is stale once `remainingMs <= graceMs`. */
  readonly graceMs: number;
  /** What is left of the entry (TTL and grace), in ms, on the server's clock; > 0. */
  readonly remainingMs: number;
}

/**
 * The remote layer (L2), shared by every process of a service. Every call has a deadline
 * (`timeoutMs`) and rejects when the layer cannot answer in time.
 */
export interface RemoteCacheLayer {
  /** `'remote'`: what tells L2 from L1. */
  readonly kind: 'remote';
  /** The deadline of one call, in ms. */
  readonly timeoutMs: number;
  /** The entry of `key`, or undefined when absent or ended. */
  get(key: string): Promise<RemoteCacheEntry | undefined>;
  /**
   * Keeps `payload` under `key` for `ttlMs + graceMs` (fresh for `ttlMs`), replacing any entry;
   * with `message`, publishes it to every subscriber of the layer in the same step.
   */
  set(key: string, payload: string, ttlMs: number, graceMs: number, message?: string): Promise<void>;
  /** Drops `key`'s entry; with `message`, publishes it in the same step. */
  delete(key: string, message?: string): Promise<void>;
  /** The current version of `namespace` (0 until its first bump). */
  version(namespace: string): Promise<number>;
  /** Increments the version of `namespace` and resolves the new one; with `message`, publishes it in the same step. */
  bumpVersion(namespace: string, message?: string): Promise<number>;
  /**
   * Claims the load of `key` for `owner` for `ttlMs` (fleet-wide stampede protection): true when
   * nobody else holds a live claim. A claim ends at `ttlMs` or when its owner releases it.
   */
  claimLoad(key: string, owner: string, ttlMs: number): Promise<boolean>;
  /** Ends `owner`'s claim on `key` (a claim of another owner is left alone). */
  releaseLoad(key: string, owner: string): Promise<void>;
  /**
   * Calls `onMessage` with every message published through this layer by any process (this one's
   * included), and `onReset` whenever messages may have been lost: once the subscription took hold
   * (messages before it were not heard), and each time it was down and came back. Returns the unsubscribe function. A hint, like every bus: messages may be late.
   */
  subscribe(onMessage: (message: string) => void, onReset: () => void): () => void;
}

/** Either layer. */
export type CacheLayer = LocalCacheLayer | RemoteCacheLayer;
