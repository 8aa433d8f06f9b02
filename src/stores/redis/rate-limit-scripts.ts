/**
 * The rate-limit scripts, assembled from the algorithms' Lua parts (`rate-limit-lua.ts`), with time
 * from `redis.call('TIME')` on the server, read once per script call. Per algorithm:
 *
 * - `single`: KEYS[1] is the state key, ARGV[1] the cost (0 is a peek: nothing is written), then the
 *   rule's arguments (limit, periodMs, burst, buckets). Reply: {remaining, retryAfterMs, resetMs},
 *   integers; retryAfterMs is 0 exactly when the take was allowed (a refusal always says at least
 *   1 ms). A take writes only when it admits, with a `PX` expiry at the moment the key would be back
 *   at full capacity, so an expired key and a stored one always decide alike.
 * - `batch`: KEYS[1..n] the state keys, ARGV[1..n] their costs, then the rule's arguments. The keys
 *   are decided in order, each exactly as `single` would decide it at the same server time (a key
 *   that appears twice is decided twice and the second decision sees the first's write). Reply: one
 *   element per key, the `single` reply or, if Redis failed that key's command (e.g. `WRONGTYPE`),
 *   the error message as a string; the other keys are unaffected.
 * - `adjust`: KEYS[1], ARGV[1] the units (positive consumes, negative gives back), then the rule's
 *   arguments; writes the moved state (a block on the key kept) and replies as a peek after it.
 * - `block`: KEYS[1], ARGV[1] the block's length in ms, then the rule's arguments; replies as a peek
 *   after it.
 *
 * And one `all` script for every algorithm: KEYS[1..n] the state keys of one user key under n
 * rules, ARGV[1] the cost, then five arguments per rule (algorithm, limit, periodMs, burst,
 * buckets). Every rule is asked first, writing nothing; only when all allow does each take. Reply:
 * one `single` reply per rule; on a refusal, a rule that would have allowed replies as a peek.
 *
 * **Blocks.** A blocked key's value is `!<until> <state>` (`until` in server ms; the state may be
 * empty): one `GET` reads both, so a take on an unblocked key costs nothing more, and a `DEL`
 * (`reset`) lifts both. While blocked, a take is refused with the longer of the block's rest and
 * the wait its quota needs; the state underneath is kept and expires no earlier than the block.
 *
 * The scripts are written for the server's CPU, which bounds throughput: globals are read once
 * into locals, strings become numbers by arithmetic, and they rely on effects replication (the
 * default since Redis 5) for `TIME` before a write. Kept as TypeScript strings so the build ships
 * them (tsc copies only .ts).
 */
import type { RateLimitAlgorithm } from '../../rate-limit/store.js';
import { type AlgorithmLua, algorithmLua } from './rate-limit-lua.js';

/** The common head: locals, and the server clock in ms since the epoch, with µs precision. */
const head = `local call = redis.call
local math = math
local time = call('TIME')
local now = time[1] * 1000 + time[2] / 1000
`;

/**
 * Reads a key: its state string (or false), the time left of its block (≤ 0: none) and the
 * block's end as written (to write it back unchanged).
 */
const load = `local function load(key)
  local stored = call('GET', key)
  if stored and string.byte(stored) == 33 then
    local mark, rest = string.match(stored, '^!(%S+) ?(.*)$')
    if rest == '' then rest = false end
    return rest, tonumber(mark) - now, mark
  end
  return stored, 0, false
end
`;

/**
 * A blocked key's decision on `cost` (0: a peek), `key-block.ts`'s `blockedDecision`: nothing
 * available at once; a take waits the longer of the block's rest and its quota's own wait.
 */
const blocked = `local function blocked(decide, key, stored, cost, left)
  local leftms = math.ceil(left)
  local reset = math.max(leftms, decide(key, stored, 0, false)[3])
  if cost == 0 then return {0, 0, reset} end
  return {0, math.max(leftms, decide(key, stored, cost, false)[2]), reset}
end
`;

/** The decision function of `a`: `decide(key, stored, cost, commit)`. */
const decideOf = (a: AlgorithmLua) => `function(key, stored, cost, commit)
${a.load}${a.decide}end`;

/** The rule's locals from ARGV, starting at index `first` (a Lua expression). */
const params = (first: string) =>
  ['limit', 'period', 'burst', 'buckets']
    .map((name, i) => `local ${name} = ARGV[${first} + ${i}] + 0\n`)
    .join('');

/** The head, the rule's locals from ARGV[first…], and `decide`, `load` and `blocked`. */
const prelude = (a: AlgorithmLua, first: string) =>
  `${head}${params(first)}${a.setup}local decide = ${decideOf(a)}\n${load}${blocked}`;

/** A take of `cost` from `key`: refused while the key is blocked, decided and written otherwise. */
const take = `local function take(key, cost)
  local stored, left = load(key)
  if left > 0 then return blocked(decide, key, stored, cost, left) end
  return decide(key, stored, cost, true)
end
`;

/** The scripts of one algorithm. */
export interface AlgorithmScripts {
  readonly single: string;
  readonly batch: string;
  readonly adjust: string;
  readonly block: string;
}

function scriptsOf(a: AlgorithmLua): AlgorithmScripts {
  // The single-key script is the hot path of a limiter at low concurrency: a key that is not blocked
  // is decided by the algorithm's parts inlined at the top level, creating no closure (each costs
  // the server an allocation and later GC work). A blocked key takes the general path, which reads
  // the key again: one more GET, only while blocked (the limiter's blocked-key memory usually
  // answers those without Redis).
  const single = `${head}${params('2')}${a.setup}local key = KEYS[1]
local cost = ARGV[1] + 0
local stored = call('GET', key)
if stored and string.byte(stored) == 33 then
local decide = ${decideOf(a)}
${load}${blocked}${take}return take(key, cost)
end
local commit = true
${a.load}${a.decide}`;
  // Each key is decided in a protected call, so that a Redis error on one key (a key of the wrong
  // type) fails that decision only, as it would fail its own single-key call.
  const batch = `local n = #KEYS
${prelude(a, 'n + 1')}${take}local replies = {}
for i = 1, n do
  local ok, reply = pcall(take, KEYS[i], ARGV[i] + 0)
  if not ok then
    if type(reply) == 'table' then reply = reply.err end
    reply = tostring(reply)
  end
  replies[i] = reply
end
return replies
`;
  const adjust = `${prelude(a, '2')}local key = KEYS[1]
local delta = ARGV[1] + 0
local stored, left, mark = load(key)
${a.load}${a.adjust}local view = decide(key, value, 0, false)
local hold = 0
if left > 0 then
  hold = math.ceil(left)
  call('SET', key, '!' .. mark .. ' ' .. value, 'PX', math.max(1, view[3], hold))
  return blocked(decide, key, value, 0, left)
end
call('SET', key, value, 'PX', math.max(1, view[3]))
return view
`;
  const block = `${prelude(a, '2')}local key = KEYS[1]
local ms = ARGV[1] + 0
local stored, left, mark = load(key)
if ms > left then
  mark = string.format('%.17g', now + ms)
  left = ms
end
local value = '!' .. mark
if stored then value = value .. ' ' .. stored end
call('SET', key, value, 'PX', math.max(1, decide(key, stored, 0, false)[3], math.ceil(left)))
return blocked(decide, key, stored, 0, left)
`;
  return { single, batch, adjust, block };
}

/** The scripts of every algorithm. */
export const rateLimitScripts: Readonly<Record<RateLimitAlgorithm, AlgorithmScripts>> = {
  gcra: scriptsOf(algorithmLua.gcra),
  'token-bucket': scriptsOf(algorithmLua['token-bucket']),
  'sliding-window': scriptsOf(algorithmLua['sliding-window']),
};

/** A Lua table of decision factories by algorithm name: `factories[name](limit, period, burst, buckets)`. */
const factories = Object.entries(algorithmLua)
  .map(
    ([name, a]) => `['${name}'] = function(limit, period, burst, buckets)
${a.setup}return ${decideOf(a)}
end`,
  )
  .join(',\n');

/** The `all` script: one user key under several rules, taken from every rule or from none. */
export const rateLimitAllScript = `${head}local factories = {
${factories}
}
${load}${blocked}local n = #KEYS
local cost = ARGV[1] + 0
local decides, states, replies = {}, {}, {}
local allowed = true
for i = 1, n do
  local a = 2 + (i - 1) * 5
  local decide = factories[ARGV[a]](ARGV[a + 1] + 0, ARGV[a + 2] + 0, ARGV[a + 3] + 0, ARGV[a + 4] + 0)
  local stored, left = load(KEYS[i])
  local reply
  if left > 0 then reply = blocked(decide, KEYS[i], stored, cost, left)
  else reply = decide(KEYS[i], stored, cost, false) end
  if reply[2] > 0 then allowed = false end
  decides[i], states[i], replies[i] = decide, stored, reply
end
if allowed then
  for i = 1, n do replies[i] = decides[i](KEYS[i], states[i], cost, true) end
else
  -- Nothing is taken: a rule that would have allowed reports its state as it is.
  for i = 1, n do
    if replies[i][2] == 0 then replies[i] = decides[i](KEYS[i], states[i], 0, false) end
  end
end
return replies
`;
