/**
 * The lock decisions as Lua, one script per store operation, each deciding in one round trip.
 * Kept as TypeScript strings so the build ships them (tsc copies only .ts).
 *
 * A lock is two keys under one hash tag (so one slot on Redis Cluster):
 *
 * - `<prefix>lock:{<key>}`: a string, the owner, with the lease as its `PX`/`PEXPIRE`. An expired
 *   lease is a missing key, so a live key always means an unexpired lease, and `renew` and
 *   `release` are plain compare-and-sets on the owner.
 * - `<prefix>lock:{<key>}:fence`: the last fence issued, in decimal, with no TTL: it must outlive
 *   every lease. Should it be lost all the same (a flush, a failover that lost the last write, an
 *   eviction), the next fence is still higher than every earlier one, because a fence is
 *   `max(last + 1, TIME in µs)`: a fence runs ahead of the clock only while acquisitions of its key
 *   come faster than one per µs, which one script each (and a release between) cannot sustain.
 *   This holds while the server's clock does not go back (a failover to a replica whose clock is
 *   behind would void it).
 *
 * Lua numbers are doubles: µs since the epoch (~1.7e15) and every fence below 2^53 are exact. A
 * fence is formatted with `%.0f` (Lua's `tostring` would give `1.7e+15`) and sent back as that
 * string. The scripts rely on effects replication (the default since Redis 5) for `TIME` before a
 * write.
 */

/**
 * `acquire`: KEYS[1] the lock, KEYS[2] its fence key, ARGV[1] the owner, ARGV[2] the lease in ms.
 * Reply 0 (held: nothing changed) or `'<fence>:<expiresAt>'`, both in decimal (`expiresAt` in epoch
 * ms on the server's clock): one bulk string, cheaper for the client to read than an array. A lock key of another type, or a fence key holding no number, is an error reply:
 * a failure, never reported as a held or free key (the `GET` after a refused `SET NX` raises
 * `WRONGTYPE`; a bad fence key gives the just-taken lease back first). Uncontended, four commands:
 * `SET NX PX`, `TIME`, `GET` and `SET` of the fence.
 */
export const acquireScript = `if not redis.call('SET', KEYS[1], ARGV[1], 'NX', 'PX', ARGV[2]) then
  redis.call('GET', KEYS[1])
  return 0
end
local time = redis.call('TIME')
local sec, usec = tonumber(time[1]), tonumber(time[2])
local fence = sec * 1000000 + usec
local last = redis.call('GET', KEYS[2])
if last then
  local n = tonumber(last)
  if not n then
    redis.call('DEL', KEYS[1])
    return redis.error_reply('ERR the fence key does not hold a number')
  end
  if n + 1 > fence then fence = n + 1 end
end
local text = string.format('%.0f', fence)
redis.call('SET', KEYS[2], text)
return text .. ':' .. string.format('%.0f', sec * 1000 + math.floor(usec / 1000) + tonumber(ARGV[2]))
`;

/** The check every owner operation starts with: the lease is live and held by ARGV[1]. */
const owned = `if redis.call('GET', KEYS[1]) ~= ARGV[1] then return 0 end
`;

/** `renew`: KEYS[1] the lock, ARGV[1] the owner, ARGV[2] the new lease in ms. Reply 1 or 0. */
export const renewScript = `${owned}redis.call('PEXPIRE', KEYS[1], ARGV[2])
return 1
`;

/**
 * `release`: KEYS[1] the lock, ARGV[1] the owner, ARGV[2] the wake channel, ARGV[3] the user's
 * key. Reply 1 (deleted, watchers woken) or 0. The fence key stays.
 */
export const releaseScript = `${owned}redis.call('DEL', KEYS[1])
redis.call('PUBLISH', ARGV[2], ARGV[3])
return 1
`;
