/**
 * Redis key layout shared by every Redis store: `<head><key>}`, where `head` ends with `{` so the
 * user's key is the key's own hash tag (Redis Cluster routes each key by it, and every key of one
 * decision shares it). The user's key is checked here once for every store: a lone surrogate would
 * be written as U+FFFD by the client and silently share state with other keys, so it is refused
 * with a `TypeError` instead. Redis itself takes keys up to 512 MB; no store adds a lower limit.
 */
import { storeKey } from '../../core/validate.js';
import { text } from './values.js';

/**
 * The Redis key of `key` under `head` (`<prefix><pattern>:<name>:{`). Throws a `TypeError` naming
 * `name` (the argument the key came from, `key` unless said) for a key that is empty, not a
 * string, or not well-formed UTF-16.
 */
export function redisKey(head: string, key: string, name = 'key'): string {
  return `${head}${storeKey(name, key)}}`;
}

/**
 * The Redis key of `key` under `head` (`<prefix><pattern>:<name>:{`) for a store whose scripts
 * touch several keys built from the same user key (a lock and its fence, one user key under
 * several rate limits): `<head><key>}`, except that a key starting with `}` would make the hash
 * tag empty, and Redis Cluster would then hash each whole key, so the keys of one script call
 * could land in different slots (`CROSSSLOT`). Such a key, and one starting with NUL (to keep the
 * mapping one-to-one), gets a NUL in front: `<head>\0<key>}`. Throws a `TypeError` naming `name`
 * for a key that is not a non-empty, well-formed string.
 */
export function taggedKey(head: string, key: string, name = 'key'): string {
  const plain = redisKey(head, key, name);
  const first = key.charCodeAt(0);
  return first === 0x7d || first === 0 ? `${head}\u0000${key}}` : plain;
}

/**
 * The Redis key of `key` under `head` for a store whose keys may be empty (the cache layer's: a
 * cache may use `''`, which gives the empty hash tag `{}`, fine for a call on one key). Throws a
 * `TypeError` naming `name` for a key that is not a string or not well-formed UTF-16.
 */
export function redisAnyKey(head: string, key: string, name = 'key'): string {
  return `${head}${text(name, key)}}`;
}
