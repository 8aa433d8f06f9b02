import { LRUCache } from 'lru-cache';

const oneSlot = (): number => 1;

/**
 * A per-key map holding at most `maxKeys` entries, evicting the least recently used one beyond
 * that. It grows with the keys actually stored: `maxKeys` is a bound, never a preallocation, so
 * `2 ** 32` costs nothing until keys arrive (lru-cache's `max` would allocate arrays of that size up
 * front: 374 MB and seconds for 2e7, a `RangeError` for 2^32). Every entry counts 1 toward lru-cache's
 * `maxSize`, which gives the same LRU with arrays grown on demand.
 *
 * @param maxKeys a positive integer (validated by the caller)
 */
export function keyMap<V extends {}>(maxKeys: number): LRUCache<string, V> {
  return new LRUCache<string, V>({ maxSize: maxKeys, sizeCalculation: oneSlot });
}
