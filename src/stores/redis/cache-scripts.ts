/**
 * The cache layer's scripts (L2 of a read-through cache), one per operation that needs more than
 * one command, each in one round trip. Kept as TypeScript strings so the build ships them (tsc
 * copies only .ts). `version` (`GET`) and `claimLoad` (`SET NX PX`) are single commands and need
 * no script.
 *
 * Keys, each a script's only key, so every call touches one slot on Redis Cluster:
 *
 * - `<prefix>cache:{<key>}`: a string `<graceMs>:<payload>` (the grace in decimal, then the
 *   payload byte for byte), with `ttlMs + graceMs` as its `PX`. The entry's end is the server's:
 *   `get` answers what is left of it (`PTTL`), never a client time.
 * - `<prefix>cache-version:{<namespace>}`: the namespace's version, an `INCR` counter, no TTL.
 * - `<prefix>cache-load:{<key>}`: a load claim, the owner, with the claim's `PX`.
 *
 * Messages are `PUBLISH`ed on the layer's channel (`<prefix>cache:bus`) inside the same script as
 * the write they announce, so a subscriber never hears of a write that did not happen, and a
 * write is never left unannounced by a failure between two calls.
 *
 * Lua numbers are doubles: the `PTTL` inside `get`'s reply is formatted with `%.0f` (Lua's
 * `tostring` would give `1e+15`), exact up to 2^53; `bumpVersion` returns its version as a number,
 * which Redis replies as an integer.
 */

/**
 * `get`: KEYS[1] the entry. Reply nil (absent, or ended: a `PTTL` of 0 is an entry in its last
 * millisecond, already ended for the contract's `remainingMs > 0`), or one bulk string
 * `'<remainingMs>:<stored value>'` (`PTTL` and value read atomically; one string is cheaper for
 * the client to read than an array). A key without a TTL answers `'-1:…'`, which the layer refuses
 * as malformed; a key of another type is a `WRONGTYPE` error reply.
 */
export const getScript = `local value = redis.call('GET', KEYS[1])
if not value then return false end
local left = redis.call('PTTL', KEYS[1])
if left == 0 then return false end
return string.format('%.0f', left) .. ':' .. value
`;

/**
 * `set`: KEYS[1] the entry, ARGV[1] the stored value `<graceMs>:<payload>`, ARGV[2] its lifetime
 * `ttlMs + graceMs` in ms, and, only with a message, ARGV[3] the channel and ARGV[4] the message.
 * Replaces any entry (value and TTL). Reply 1.
 */
export const setScript = `redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2])
if ARGV[4] then redis.call('PUBLISH', ARGV[3], ARGV[4]) end
return 1
`;

/**
 * `delete`: KEYS[1] the entry, and, only with a message, ARGV[1] the channel and ARGV[2] the
 * message (published whether or not there was an entry). Reply 1.
 */
export const deleteScript = `redis.call('DEL', KEYS[1])
if ARGV[2] then redis.call('PUBLISH', ARGV[1], ARGV[2]) end
return 1
`;

/**
 * `bumpVersion`: KEYS[1] the namespace's version, and, only with a message, ARGV[1] the channel
 * and ARGV[2] the message. `INCR`s the version and publishes the message (as given) when there is
 * one. Reply the new version, an integer. A version key holding no integer is an error reply
 * (nothing published).
 */
export const bumpScript = `local version = redis.call('INCR', KEYS[1])
if ARGV[2] then redis.call('PUBLISH', ARGV[1], ARGV[2]) end
return version
`;

/**
 * `releaseLoad`: KEYS[1] the claim, ARGV[1] the owner. Deletes the claim only if `owner` holds it
 * (a compare-and-delete: a late release never ends a successor's claim). Reply 1 (deleted) or 0.
 */
export const releaseLoadScript = `if redis.call('GET', KEYS[1]) ~= ARGV[1] then return 0 end
redis.call('DEL', KEYS[1])
return 1
`;
