/**
 * `memoryLayer()`: the local layer (L1) of a read-through cache, a bounded LRU map in this
 * process (lru-cache). It holds the values themselves, not copies.
 */
import { LRUCache } from 'lru-cache';
import { positiveInt, readOptions, required, type Schema } from '../core/read-options.js';
import type { LocalCacheEntry, LocalCacheLayer } from './store.js';

/** Options of {@link memoryLayer}. */
export interface MemoryLayerOptions {
  /** The most entries kept; the least recently used one makes room for a new one. */
  readonly maxEntries: number;
}

const schema = { maxEntries: required(positiveInt) } satisfies Schema<MemoryLayerOptions>;

class MemoryLayer implements LocalCacheLayer {
  readonly kind = 'local';
  private readonly entries: LRUCache<string, LocalCacheEntry>;

  constructor(maxEntries: number) {
    this.entries = new LRUCache({ max: maxEntries });
  }

  get size(): number {
    return this.entries.size;
  }

  get(key: string, now: number): LocalCacheEntry | undefined {
    const entry = this.entries.get(key);
    if (entry === undefined || entry.expiresAt > now) return entry;
    this.entries.delete(key);
    return undefined;
  }

  set(key: string, entry: LocalCacheEntry): void {
    this.entries.set(key, entry);
  }

  delete(key: string): void {
    this.entries.delete(key);
  }

  deletePrefix(prefix: string): void {
    // Stryker disable next-line ConditionalExpression,StringLiteral: every key starts with '', so the loop would drop them all too; clear() only does it at once
    if (prefix === '') this.entries.clear();
    else for (const key of [...this.entries.keys()]) if (key.startsWith(prefix)) this.entries.delete(key);
  }
}

/**
 * A bounded in-process cache layer, for `readThroughCache({ layers: [memoryLayer(…), …] })`: at
 * most `maxEntries` entries, the least recently used evicted first. A read hands out the stored
 * value itself (no copy per hit: treat cached values as read-only, or use the cache's `freeze`
 * option in development). Ended entries are dropped when read, or evicted when room is needed.
 * Throws a `TypeError` for a missing or bad `maxEntries`, or an unknown option.
 *
 * @example
 * const cache = readThroughCache({ layers: [memoryLayer({ maxEntries: 10_000 })], ttlMs: 60_000 });
 */
export function memoryLayer(options: MemoryLayerOptions): LocalCacheLayer {
  return new MemoryLayer(readOptions('memoryLayer options', options, schema).maxEntries);
}
