/**
 * The fence store's scripts, one per operation, each on one key: the resource's hash
 * `<prefix>fence:{<resource>}`, with `f` the highest fence that wrote to it (decimal text, exactly
 * as sent) and `v` the value that write left. No TTL: a resource's fence must outlive every lease
 * of every lock guarding it, or a paused holder's stale write would find no fence to refuse it.
 *
 * Fences are compared with `tonumber`: Lua numbers are doubles, exact for every safe integer.
 */

/**
 * `write`: KEYS[1] the resource's hash, ARGV[1] the fence (decimal), ARGV[2] the value. Reply 1
 * (written, `f` = ARGV[1]) or, for a fence lower than `f`, `f` itself (nothing written). An `f`
 * holding no number, or a key of another type, is an error reply.
 */
export const writeScript = `local highest = redis.call('HGET', KEYS[1], 'f')
if highest and tonumber(ARGV[1]) < tonumber(highest) then return highest end
redis.call('HSET', KEYS[1], 'f', ARGV[1], 'v', ARGV[2])
return 1
`;

/** `read`: KEYS[1] the resource's hash. Reply `{f, v}` (both nil when never written). */
export const readScript = `return redis.call('HMGET', KEYS[1], 'f', 'v')
`;

/** `highest`: KEYS[1] the resource's hash. Reply `f`, or nil when never written. */
export const highestScript = `return redis.call('HGET', KEYS[1], 'f')
`;
