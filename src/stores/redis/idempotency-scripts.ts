/**
 * The idempotency decisions as Lua, one script per store operation, each touching one key (so one
 * hash slot on Redis Cluster) and deciding in one round trip. Kept as TypeScript strings so the
 * build ships them (tsc copies only .ts).
 *
 * A record is a hash under `<prefix>idem:{<key>}`:
 *
 * - `s`: the status, `p` (in progress) or `c` (completed);
 * - `f`: the request's fingerprint;
 * - `t`: the owner's token, while in progress only;
 * - `r`: the stored result, once completed only;
 * - `w`: present while somebody waits for the key in progress (the *awaited* mark).
 *
 * Its `PEXPIRE` is the lease while in progress and the retention (`ttlMs`) once completed, so both
 * lifetimes run on the server's clock and an expired lease or retention is simply a missing key: a
 * free key. A live key therefore always means an unexpired lease (in progress) or retention
 * (completed), which is what makes `complete`, `release` and `renew` plain compare-and-sets on `t`.
 *
 * `complete` and `release` `PUBLISH` the user's key on the prefix's wake channel (ARGV, not a key:
 * a channel is not a key, and PUBLISH on a cluster reaches every node), in the same script, so a
 * notification costs no round trip of its own — but only when the record is marked awaited: a
 * `PUBLISH` reaches every subscribed process of the prefix (each then looks the key up) and, on a
 * Cluster, every node, while almost no request has a duplicate waiting. A waiting duplicate marks
 * the record: its store's `watch` does ({@link markScript}), and so does each claim of a key its
 * process watches that finds it in progress (`ARGV[4]` of {@link claimScript}). The waiter polls as
 * well, as it must for a lost message.
 */

/**
 * `claim`: KEYS[1] the record, ARGV[1] the fingerprint, ARGV[2] a fresh token, ARGV[3] the lease
 * in ms, ARGV[4] (optional, any value) mark a record in progress as awaited. Reply `{'claimed'}`
 * (the record now holds ARGV[2]), `{'completed', result}`, `{'in_progress', remainingMs ≥ 1}` or
 * `{'mismatch'}`.
 */
export const claimScript = `local key = KEYS[1]
local rec = redis.call('HMGET', key, 's', 'f', 'r')
if not rec[1] then
  redis.call('DEL', key)
  redis.call('HSET', key, 's', 'p', 'f', ARGV[1], 't', ARGV[2])
  redis.call('PEXPIRE', key, ARGV[3])
  return {'claimed'}
end
if rec[2] ~= ARGV[1] then return {'mismatch'} end
if rec[1] == 'c' then return {'completed', rec[3]} end
if ARGV[4] then redis.call('HSET', key, 'w', '1') end
local ttl = redis.call('PTTL', key)
if ttl < 1 then ttl = 1 end
return {'in_progress', ttl}
`;

/** `mark`: KEYS[1] the record: marks it awaited if it is in progress. Reply 1. */
export const markScript = `if redis.call('HGET', KEYS[1], 's') == 'p' then redis.call('HSET', KEYS[1], 'w', '1') end
return 1
`;

/**
 * The check every owner operation starts with: in progress and held by ARGV[1]; `rec[3]` says
 * whether somebody waits.
 */
const owned = `local key = KEYS[1]
local rec = redis.call('HMGET', key, 's', 't', 'w')
if rec[1] ~= 'p' or rec[2] ~= ARGV[1] then return 0 end
`;

/**
 * `complete`: KEYS[1] the record, ARGV[1] the token, ARGV[2] the result, ARGV[3] the retention in
 * ms, ARGV[4] the wake channel, ARGV[5] the user's key. Reply 1 (stored, waiters woken) or 0.
 */
export const completeScript = `${owned}redis.call('HDEL', key, 't', 'w')
redis.call('HSET', key, 's', 'c', 'r', ARGV[2])
redis.call('PEXPIRE', key, ARGV[3])
if rec[3] then redis.call('PUBLISH', ARGV[4], ARGV[5]) end
return 1
`;

/**
 * `release`: KEYS[1] the record, ARGV[1] the token, ARGV[2] the wake channel, ARGV[3] the user's
 * key. Reply 1 (deleted, waiters woken) or 0.
 */
export const releaseScript = `${owned}redis.call('DEL', key)
if rec[3] then redis.call('PUBLISH', ARGV[2], ARGV[3]) end
return 1
`;

/** `renew`: KEYS[1] the record, ARGV[1] the token, ARGV[2] the new lease in ms. Reply 1 or 0. */
export const renewScript = `${owned}redis.call('PEXPIRE', key, ARGV[2])
return 1
`;
