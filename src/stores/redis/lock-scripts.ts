/**
 * The lock decisions as Lua, one script per store operation, each deciding in one round trip.
 * Kept as TypeScript strings so the build ships them (tsc copies only .ts).
 *
 * A lock is two keys under one hash tag (so one slot on Redis Cluster):
 *
 * - `<prefix>lock:{<key>}`: a string, the owner, with the lease as its `PX`/`PEXPIRE`. An expired
 *   lease is a missing key, so a live key always means an unexpired lease, and `renew` and
 *   `release` are plain compare-and-sets on the owner. While somebody waits for the lock, the owner
 *   is followed by one byte `\255` (the *awaited* mark, {@link AWAITED}): `release` publishes only
 *   then. That byte never occurs in an owner (an owner is well-formed UTF-16, sent as UTF-8), and it
 *   lives exactly as long as the lease (`APPEND` keeps the TTL; the next lease starts unmarked).
 * - `<prefix>lock:{<key>}:fence`: the last fence issued, in decimal, kept for
 *   {@link FENCE_RETENTION_MS} (7 days) after the last acquisition, so a service that locks millions
 *   of distinct keys does not keep one key per lock forever. When it is gone (expired, or lost to a
 *   flush, a failover that lost the last write, an eviction), the next fence is still higher than
 *   every earlier one, because a fence is `max(last + 1, TIME in µs)`: a fence runs ahead of the
 *   clock only while acquisitions of its key come faster than one per µs, which one script each
 *   (and a release between) cannot sustain, and after 7 days the clock is 7 days of µs past the
 *   last fence. This holds while the server's clock does not go back (a failover to a replica whose
 *   clock is behind would void it).
 *
 * Why a mark instead of publishing every release: a `PUBLISH` costs the server a command on every
 * release, reaches every subscribed process of the prefix (each then looks the key up), and on a
 * Cluster is broadcast to every node; almost no release has a waiter. A waiter marks the lease it
 * waits for: `watch` does ({@link markScript}), and so does each refused acquisition of a key its
 * process watches (`ARGV[3]` of {@link acquireScript}), so a lease taken after the watch began is
 * marked at the waiter's next try. A release that finds no mark wakes nobody; the waiter's poll is
 * the safety net, as it is for a lost message.
 *
 * Lua numbers are doubles: µs since the epoch (~1.7e15) and every fence below 2^53 are exact. A
 * fence is formatted with `%.0f` (Lua's `tostring` would give `1.7e+15`) and sent back as that
 * string. The scripts rely on effects replication (the default since Redis 5) for `TIME` before a
 * write.
 */

/**
 * How long a lock's fence key is kept after its last acquisition, in ms: 7 days. Past that the
 * server clock alone keeps fences increasing (see the module comment).
 */
export const FENCE_RETENTION_MS = 7 * 24 * 60 * 60 * 1_000;

/** The byte that marks a lease as awaited, as a Lua string literal. */
const AWAITED = `'\\255'`;

/**
 * `acquire`: KEYS[1] the lock, KEYS[2] its fence key, ARGV[1] the owner, ARGV[2] the lease in ms,
 * ARGV[3] (optional, any value) mark a held lock as awaited. Reply 0 (held: nothing changed but
 * the mark) or `'<fence>:<sec>:<µs>'`, the fence and the server's `TIME`, in decimal: one bulk
 * string, cheaper for the client to read than an array, and no formatting of `expiresAt` in Lua
 * (the client adds the lease to the time). A lock key of another type, or a fence key of another
 * type or holding no number, is an error reply: a failure, never reported as a held or free key
 * (the `GET` after a refused `SET NX` raises `WRONGTYPE`; a bad fence key gives the just-taken
 * lease back and keeps its value). Uncontended, three commands: `SET NX PX`, `TIME`, and
 * `SET … GET` of the fence (the clock's value, which is nearly always the next fence; a fence
 * counter at or ahead of the clock is written once more).
 */
export const acquireScript = `if not redis.call('SET', KEYS[1], ARGV[1], 'NX', 'PX', ARGV[2]) then
  local held = redis.call('GET', KEYS[1])
  if ARGV[3] and string.byte(held, -1) ~= 255 then redis.call('APPEND', KEYS[1], ${AWAITED}) end
  return 0
end
local time = redis.call('TIME')
local fence = tonumber(time[1]) * 1000000 + tonumber(time[2])
local text = string.format('%.0f', fence)
local last = redis.pcall('SET', KEYS[2], text, 'PX', ${FENCE_RETENTION_MS}, 'GET')
if last then
  local n = tonumber(last)
  if not n then
    redis.call('DEL', KEYS[1])
    if type(last) == 'string' then
      redis.call('SET', KEYS[2], last)
      return redis.error_reply('ERR the fence key does not hold a number')
    end
    return last
  end
  if n + 1 > fence then
    text = string.format('%.0f', n + 1)
    redis.call('SET', KEYS[2], text, 'PX', ${FENCE_RETENTION_MS})
  end
end
return text .. ':' .. time[1] .. ':' .. time[2]
`;

/** The check every owner operation starts with: the lease is live and held by ARGV[1]. */
const owned = `local held = redis.call('GET', KEYS[1])
if held ~= ARGV[1] and held ~= ARGV[1] .. ${AWAITED} then return 0 end
`;

/** `renew`: KEYS[1] the lock, ARGV[1] the owner, ARGV[2] the new lease in ms. Reply 1 or 0. */
export const renewScript = `${owned}redis.call('PEXPIRE', KEYS[1], ARGV[2])
return 1
`;

/**
 * `release`: KEYS[1] the lock, ARGV[1] the owner, ARGV[2] the wake channel. Reply 1 (deleted) or
 * 0. Publishes the lock's Redis key on the channel only when the lease was marked as awaited. The
 * fence key stays.
 */
export const releaseScript = `local held = redis.call('GET', KEYS[1])
if held == ARGV[1] then
  redis.call('DEL', KEYS[1])
  return 1
end
if held ~= ARGV[1] .. ${AWAITED} then return 0 end
redis.call('DEL', KEYS[1])
redis.call('PUBLISH', ARGV[2], KEYS[1])
return 1
`;

/** `watch`'s mark: KEYS[1] the lock. Marks a live lease as awaited; reply 0. */
export const markScript = `local held = redis.call('GET', KEYS[1])
if held and string.byte(held, -1) ~= 255 then redis.call('APPEND', KEYS[1], ${AWAITED}) end
return 0
`;
